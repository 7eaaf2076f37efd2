"""Key and trust stores (PEM or PKCS12) read with ``cryptography``, so a bad file or password is a ConfigError naming the key."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from proxy.net.tls.options import (
    HIDDEN,
    KEY_PASSWORD,
    KEYSTORE_CERTIFICATE_CHAIN,
    KEYSTORE_KEY,
    KEYSTORE_LOCATION,
    KEYSTORE_PASSWORD,
    TRUSTSTORE_CERTIFICATES,
    TRUSTSTORE_LOCATION,
    TRUSTSTORE_PASSWORD,
    PrivateKey,
    TlsSettings,
)
from proxy.properties import ConfigError

__all__ = ["KeyMaterial", "load_keystore", "load_truststore"]


@dataclass(frozen=True)
class KeyMaterial:
    """A private key and its certificate chain (end-entity certificate first)."""

    private_key: PrivateKey = field(repr=False)
    chain: tuple[x509.Certificate, ...]


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


def _read(key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(key, path, f"cannot read the file: {e.strerror or e}") from None


def _pem_certificates(key: str, value: str, where: str, text: str) -> list[x509.Certificate]:
    certs = []
    for m in _PEM_BLOCK.finditer(text):
        if m.group(1) != "CERTIFICATE":
            continue
        try:
            certs.append(x509.load_pem_x509_certificate(m.group(0).encode()))
        except ValueError as e:
            raise ConfigError(key, value, f"certificate #{len(certs) + 1} in {where} is invalid: {e}") from None
    return certs


def _pem_private_key(settings: TlsSettings, key: str, value: str, where: str, text: str) -> PrivateKey:
    blocks = [m for m in _PEM_BLOCK.finditer(text) if m.group(1).endswith("PRIVATE KEY")]
    if len(blocks) != 1:
        reason = f"no private key in {where}" if not blocks else f"expected one private key in {where}, found {len(blocks)}"
        raise ConfigError(key, value, reason)
    block = blocks[0]
    data = block.group(0).encode()
    encrypted = block.group(1) == "ENCRYPTED PRIVATE KEY" or "Proc-Type: 4,ENCRYPTED" in block.group(2)
    if not encrypted:
        candidates: list[str | None] = [None]
    else:
        candidates = list(dict.fromkeys(p for p in (settings.key_password, settings.keystore_password) if p is not None))
        if not candidates:
            raise ConfigError(settings.key(KEY_PASSWORD), None, f"the private key in {where} is encrypted but no password is set")
    for candidate in candidates:
        try:
            loaded = serialization.load_pem_private_key(data, None if candidate is None else candidate.encode())
        except ValueError:  # wrong password (or a broken key, which we cannot tell apart)
            continue
        except (TypeError, UnsupportedAlgorithm) as e:
            raise ConfigError(key, value, f"cannot load the private key in {where}: {e}") from None
        if not isinstance(loaded, PrivateKey):
            raise ConfigError(key, value, f"unsupported private key type {type(loaded).__name__} in {where}")
        return loaded
    if not encrypted:
        raise ConfigError(key, value, f"the private key in {where} is malformed")
    raise ConfigError(
        settings.key(KEY_PASSWORD),
        HIDDEN,
        f"cannot decrypt the private key in {where}: wrong password (tried ssl.key.password, then ssl.keystore.password)",
    )


def _check_pair(key: str, value: str, where: str, private_key: PrivateKey, chain: list[x509.Certificate]) -> None:
    if not chain:
        raise ConfigError(key, value, f"no certificate in {where}")
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if private_key.public_key().public_bytes(serialization.Encoding.DER, spki) != chain[0].public_key().public_bytes(
        serialization.Encoding.DER, spki
    ):
        raise ConfigError(
            key, value, f"the private key in {where} does not belong to the first certificate ({chain[0].subject.rfc4514_string()})"
        )


def _looks_like_pfx(data: bytes) -> bool:
    """True if ``data`` starts like a PKCS#12 PFX (SEQUENCE { INTEGER 3, ... }).

    Lets a failed open be blamed on the password rather than on the file.
    """
    if len(data) < 8 or data[0] != 0x30:
        return False
    i = 2 + (data[1] & 0x7F if data[1] & 0x80 else 0)
    return data[i : i + 3] == b"\x02\x01\x03"


def _open_pkcs12(location_key: str, password_key: str, path: str, password: str | None) -> pkcs12.PKCS12KeyAndCertificates:
    data = _read(location_key, path)
    try:
        return pkcs12.load_pkcs12(data, None if password is None else password.encode())
    except ValueError:
        if _looks_like_pfx(data):
            reason = (
                f"cannot open PKCS12 store {path}: wrong password" if password else f"cannot open PKCS12 store {path} without a password"
            )
            raise ConfigError(password_key, HIDDEN if password else None, reason) from None
        raise ConfigError(location_key, path, "not a PKCS12 file") from None


def load_keystore(settings: TlsSettings) -> KeyMaterial | None:
    """The configured private key and chain, or None when no keystore is configured."""
    if settings.keystore_key is not None and settings.keystore_certificate_chain is not None:
        key_name = settings.key(KEYSTORE_KEY)
        chain_name = settings.key(KEYSTORE_CERTIFICATE_CHAIN)
        private_key = _pem_private_key(settings, key_name, HIDDEN, key_name, settings.keystore_key)
        chain = _pem_certificates(chain_name, HIDDEN, chain_name, settings.keystore_certificate_chain)
        _check_pair(chain_name, HIDDEN, chain_name, private_key, chain)
        return KeyMaterial(private_key, tuple(chain))
    path = settings.keystore_location
    if path is None:
        return None
    location_key = settings.key(KEYSTORE_LOCATION)
    if settings.keystore_type == "PEM":
        text = _read(location_key, path).decode("utf-8", errors="replace")
        private_key = _pem_private_key(settings, location_key, path, path, text)
        chain = _pem_certificates(location_key, path, path, text)
    else:
        store = _open_pkcs12(location_key, settings.key(KEYSTORE_PASSWORD), path, settings.keystore_password)
        if store.key is None:
            raise ConfigError(location_key, path, "the PKCS12 keystore holds no private key")
        if not isinstance(store.key, PrivateKey):
            raise ConfigError(location_key, path, f"unsupported private key type {type(store.key).__name__}")
        private_key = store.key
        chain = ([store.cert.certificate] if store.cert is not None else []) + [c.certificate for c in store.additional_certs]
    _check_pair(location_key, path, path, private_key, chain)
    return KeyMaterial(private_key, tuple(chain))


def load_truststore(settings: TlsSettings) -> tuple[x509.Certificate, ...] | None:
    """Trusted certificates, or None when no truststore is configured (system CAs then)."""
    if settings.truststore_certificates is not None:
        name = settings.key(TRUSTSTORE_CERTIFICATES)
        certs = _pem_certificates(name, HIDDEN, name, settings.truststore_certificates)
        if not certs:
            raise ConfigError(name, HIDDEN, "no certificates found")
        return tuple(certs)
    path = settings.truststore_location
    if path is None:
        return None
    location_key = settings.key(TRUSTSTORE_LOCATION)
    if settings.truststore_type == "PEM":
        certs = _pem_certificates(location_key, path, path, _read(location_key, path).decode("utf-8", errors="replace"))
    else:
        store = _open_pkcs12(location_key, settings.key(TRUSTSTORE_PASSWORD), path, settings.truststore_password)
        certs = ([store.cert.certificate] if store.cert is not None else []) + [c.certificate for c in store.additional_certs]
    if not certs:
        raise ConfigError(location_key, path, "the truststore holds no certificates")
    return tuple(certs)
