"""SSL contexts for listeners and the controller connection, from TlsSettings; the server side reloads its certificate."""

from __future__ import annotations

import logging
import os
import secrets
import ssl
import tempfile
from collections.abc import Callable

from cryptography.hazmat.primitives import serialization

from proxy.net.tls.options import _CLIENT_AUTH_MODES, _TLS12_SUITES, _TLS_VERSIONS, KEYSTORE_LOCATION, TlsSettings
from proxy.net.tls.stores import KeyMaterial, load_keystore, load_truststore
from proxy.properties import ConfigError

__all__ = ["ReloadingServerContext", "client_context", "server_context"]

log = logging.getLogger(__name__)


def _load_key_material(ctx: ssl.SSLContext, material: KeyMaterial) -> None:
    """Give the key and chain to OpenSSL, which only reads them from a file.

    The key is written re-encrypted under a random one-time password that exists only in
    memory, to a 0600 temp file that is removed right after loading.  A plaintext temp file
    would leave the key readable on disk if the process died (or the disk were imaged)
    between write and unlink; the encrypted one is useless without the ephemeral password.
    """
    ephemeral = secrets.token_urlsafe(32)
    key_pem = material.private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(ephemeral.encode())
    )
    chain_pem = b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in material.chain)
    fd, path = tempfile.mkstemp(prefix="envelope-proxy-tls-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(chain_pem + key_pem)
        ctx.load_cert_chain(path, password=ephemeral)
    finally:
        os.unlink(path)


def _apply_protocols(ctx: ssl.SSLContext, settings: TlsSettings) -> None:
    versions = [_TLS_VERSIONS[p] for p in settings.enabled_protocols]
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)
    if settings.cipher_suites:
        tls12 = [_TLS12_SUITES[s] for s in settings.cipher_suites if s in _TLS12_SUITES]
        if tls12:
            ctx.set_ciphers(":".join(tls12))
        else:  # only TLS 1.3 suites listed: TLS 1.2 would have none
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3


def _trust(ctx: ssl.SSLContext, settings: TlsSettings, purpose: ssl.Purpose) -> None:
    certs = load_truststore(settings)
    if certs is None:
        ctx.load_default_certs(purpose)
    else:
        ctx.load_verify_locations(cadata="".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs))


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """A server-side context for a TLS listener; raises ConfigError on unusable stores."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _apply_protocols(ctx, settings)
    material = load_keystore(settings)
    if material is None:
        raise ConfigError(settings.key(KEYSTORE_LOCATION), None, "a TLS server needs a keystore")
    _load_key_material(ctx, material)
    _trust(ctx, settings, ssl.Purpose.CLIENT_AUTH)  # loaded even for "none", so a bad truststore fails early as in Kafka
    ctx.verify_mode = _CLIENT_AUTH_MODES[settings.client_auth]
    return ctx


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """A client-side context (the proxy's own upstream connections); the client cert is optional."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _apply_protocols(ctx, settings)
    ctx.check_hostname = settings.endpoint_identification
    ctx.verify_mode = ssl.CERT_REQUIRED  # Java always verifies the server's chain
    _trust(ctx, settings, ssl.Purpose.SERVER_AUTH)
    material = load_keystore(settings)
    if material is not None:
        _load_key_material(ctx, material)
    return ctx


_Stamp = tuple[tuple[int, int, int] | str, ...]


class ReloadingServerContext:
    """A server context that follows certificate rotation.

    :meth:`current` stats the store files on every call (cheap) and rebuilds the context when
    one changed (mtime_ns, size or inode); :meth:`reload` rebuilds unconditionally (SIGHUP).
    A failed rebuild logs an ERROR and keeps serving the previous context; it is retried when
    the files change again.  ``generation`` counts successful reloads (0 = the initial build).
    Replace files atomically (write elsewhere, then rename) so a half-written file is never seen.
    """

    def __init__(self, settings: TlsSettings, *, build: Callable[[TlsSettings], ssl.SSLContext] = server_context) -> None:
        self.settings = settings
        self._build = build
        self._stamp = self._stat()
        self._context = build(settings)  # the first build must succeed: ConfigError otherwise
        self.generation = 0

    def _stat(self) -> _Stamp:
        stamp: list[tuple[int, int, int] | str] = []
        for _, path in self.settings.watched_files():
            try:
                st = os.stat(path)
            except OSError as e:
                stamp.append(f"error {e.errno}")
            else:
                stamp.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(stamp)

    def current(self) -> ssl.SSLContext:
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp  # taken before the build: a change during it triggers another
            self._rebuild()
        return self._context

    def reload(self) -> bool:
        """Rebuild now; True if the new context is in use."""
        self._stamp = self._stat()
        return self._rebuild()

    def _rebuild(self) -> bool:
        try:
            context = self._build(self.settings)
        except Exception as e:  # whatever went wrong, keep serving with the old context
            files = ", ".join(f"{key}={path}" for key, path in self.settings.watched_files()) or "inline PEM"
            log.error("TLS reload failed (%s): %s; still serving generation %d", files, e, self.generation)
            return False
        self._context = context
        self.generation += 1
        log.info("TLS context reloaded (generation %d)", self.generation)
        return True
