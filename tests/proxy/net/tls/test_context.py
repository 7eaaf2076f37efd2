"""TLS settings, store loading, real handshakes on 127.0.0.1 and certificate reloads."""

import hashlib
import logging
import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from envelope_proxy.dev_pki import DevPki, generate_dev_pki
from proxy.net.tls.context import ReloadingServerContext, client_context, server_context
from proxy.net.tls.options import TlsSettings, parse_tls_settings
from proxy.net.tls.principal import parse_mapping_rules, principal_for_peer
from proxy.net.tls.stores import load_keystore, load_truststore
from proxy.properties import ConfigError

PASSWORD = "dev-secret"
PREFIX = "listener.name.client."


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> DevPki:
    return generate_dev_pki(tmp_path_factory.mktemp("pki"), hosts=["localhost"], clients=["alice"], password=PASSWORD)


def getter(values: dict[str, str]) -> Callable[[str], str | None]:
    return values.get


def server_values(pki: DevPki, **extra: str) -> dict[str, str]:
    values = {
        "ssl.keystore.location": str(pki.server_p12),
        "ssl.keystore.password": PASSWORD,
        "ssl.truststore.location": str(pki.truststore_p12),
        "ssl.truststore.password": PASSWORD,
    }
    values.update({k.replace("_", "."): v for k, v in extra.items()})
    return values


def client_settings(pki: DevPki, *, with_cert: bool = True, **extra: str) -> TlsSettings:
    values = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.truststore_pem)}
    if with_cert:
        values.update({"ssl.keystore.location": str(pki.clients[0].p12), "ssl.keystore.password": PASSWORD})
    values.update({k.replace("_", "."): v for k, v in extra.items()})
    return parse_tls_settings(getter(values), for_server=False)


# --- settings -----------------------------------------------------------------------------


def test_defaults_and_masking(pki: DevPki) -> None:
    settings = parse_tls_settings(getter(server_values(pki)), key_prefix=PREFIX)
    assert settings.keystore_type == "PKCS12" and settings.truststore_type == "PKCS12"
    assert settings.client_auth == "none"
    assert settings.enabled_protocols == ("TLSv1.2", "TLSv1.3")
    assert settings.cipher_suites == ()
    assert settings.endpoint_identification is True
    shown = settings.masked()
    assert shown[PREFIX + "ssl.keystore.password"] == "[hidden]"
    assert shown[PREFIX + "ssl.truststore.password"] == "[hidden]"
    assert shown[PREFIX + "ssl.key.password"] is None
    assert shown[PREFIX + "ssl.keystore.location"] == str(pki.server_p12)
    assert PASSWORD not in repr(settings) and PASSWORD not in repr(shown)


def test_parsed_values(pki: DevPki) -> None:
    values = server_values(
        pki,
        ssl_client_auth=" Required ",
        ssl_enabled_protocols="TLSv1.3",
        ssl_cipher_suites="TLS_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    )
    values["ssl.endpoint.identification.algorithm"] = ""
    settings = parse_tls_settings(getter(values))
    assert settings.client_auth == "required"
    assert settings.enabled_protocols == ("TLSv1.3",)
    assert settings.cipher_suites == ("TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
    assert settings.endpoint_identification is False


@pytest.mark.parametrize(
    ("changes", "key", "reason"),
    [
        ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type", "not supported"),
        ({"ssl.keystore.type": "P12X"}, "ssl.keystore.type", "unknown store type"),
        ({"ssl.truststore.type": "BKS"}, "ssl.truststore.type", "unknown store type"),
        ({"ssl.client.auth": "optional"}, "ssl.client.auth", "unknown client authentication mode"),
        ({"ssl.enabled.protocols": "TLSv1.2,TLSv1.1"}, "ssl.enabled.protocols", "TLSv1.1 is insecure and unsupported"),
        ({"ssl.enabled.protocols": "TLSv1"}, "ssl.enabled.protocols", "TLSv1 is insecure and unsupported"),
        ({"ssl.enabled.protocols": "TLSv1.4"}, "ssl.enabled.protocols", "unknown protocol"),
        ({"ssl.cipher.suites": "TLS_FAKE_WITH_NOTHING"}, "ssl.cipher.suites", "unknown or unsupported cipher suite"),
        (
            {"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ssl.enabled.protocols": "TLSv1.3"},
            "ssl.cipher.suites",
            "none of these cipher suites",
        ),
        ({"ssl.endpoint.identification.algorithm": "ldaps"}, "ssl.endpoint.identification.algorithm", "unsupported algorithm"),
        ({"ssl.keystore.location": None, "ssl.keystore.password": None}, "ssl.keystore.location", "a TLS server needs a keystore"),
        ({"ssl.keystore.location": ""}, "ssl.keystore.location", "required when listener.name.client.ssl.keystore.password is set"),
        ({"ssl.keystore.password": ""}, "ssl.keystore.password", "needs its password"),
        ({"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"}, "ssl.keystore.key", "needs listener.name.client.ssl.keystore.type=PEM"),
        ({"ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----"}, "ssl.keystore.key", "required when"),
        ({"ssl.truststore.type": "PEM"}, "ssl.truststore.password", "a PEM truststore has no password"),
    ],
)
def test_settings_errors(pki: DevPki, changes: dict[str, str | None], key: str, reason: str) -> None:
    values = server_values(pki)
    for name, value in changes.items():
        if value is None:
            del values[name]
        else:
            values[name] = value
    with pytest.raises(ConfigError) as info:
        parse_tls_settings(getter(values), key_prefix=PREFIX)
    assert info.value.key == PREFIX + key
    assert reason in info.value.reason
    assert PREFIX + key in str(info.value)
    assert PASSWORD not in str(info.value)


def test_client_needs_no_keystore(pki: DevPki) -> None:
    settings = client_settings(pki, with_cert=False)
    assert load_keystore(settings) is None
    assert client_context(settings).verify_mode == ssl.CERT_REQUIRED


# --- loading ------------------------------------------------------------------------------


def fingerprint(cert: x509.Certificate | bytes) -> str:
    der = cert if isinstance(cert, bytes) else cert.public_bytes(serialization.Encoding.DER)
    return hashlib.sha256(der).hexdigest()


def server_cert(pki: DevPki) -> x509.Certificate:
    return x509.load_pem_x509_certificates(pki.server_cert.read_bytes())[0]


def test_load_pkcs12_keystore_and_truststore(pki: DevPki) -> None:
    settings = parse_tls_settings(getter(server_values(pki)))
    material = load_keystore(settings)
    assert material is not None
    assert fingerprint(material.chain[0]) == fingerprint(server_cert(pki))
    assert len(material.chain) == 2  # server + CA
    trusted = load_truststore(settings)
    assert trusted is not None and [fingerprint(c) for c in trusted] == [
        fingerprint(x509.load_pem_x509_certificate(pki.ca_cert.read_bytes()))
    ]


def pem_keystore(pki: DevPki, path: Path, password: str | None) -> Path:
    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), None)
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption() if password is None else serialization.BestAvailableEncryption(password.encode())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    path.write_bytes(pki.server_cert.read_bytes() + key_pem)
    return path


@pytest.mark.parametrize(
    ("file_password", "settings_passwords"),
    [
        (None, {}),
        ("key-pw", {"ssl.key.password": "key-pw"}),
        ("key-pw", {"ssl.keystore.password": "key-pw"}),  # fallback to the keystore password
    ],
)
def test_load_pem_keystore(pki: DevPki, tmp_path: Path, file_password: str | None, settings_passwords: dict[str, str]) -> None:
    path = pem_keystore(pki, tmp_path / "keystore.pem", file_password)
    settings = parse_tls_settings(getter({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path), **settings_passwords}))
    material = load_keystore(settings)
    assert material is not None and fingerprint(material.chain[0]) == fingerprint(server_cert(pki))
    server_context(settings)


def test_inline_pem_keystore(pki: DevPki) -> None:
    values = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": pki.server_key.read_text(),
        "ssl.keystore.certificate.chain": pki.server_cert.read_text(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": pki.ca_cert.read_text(),
    }
    settings = parse_tls_settings(getter(values))
    material = load_keystore(settings)
    assert material is not None and fingerprint(material.chain[0]) == fingerprint(server_cert(pki))
    assert load_truststore(settings) is not None


def expect_error(settings: TlsSettings, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        server_context(settings)
    assert info.value.key == key, info.value
    assert reason in info.value.reason
    assert PASSWORD not in str(info.value) and "wrong-pw" not in str(info.value)


def test_wrong_pkcs12_password(pki: DevPki) -> None:
    values = server_values(pki, ssl_keystore_password="wrong-pw")
    expect_error(parse_tls_settings(getter(values), key_prefix=PREFIX), PREFIX + "ssl.keystore.password", "wrong password")
    values = server_values(pki, ssl_truststore_password="wrong-pw")
    expect_error(parse_tls_settings(getter(values), key_prefix=PREFIX), PREFIX + "ssl.truststore.password", "wrong password")


def test_wrong_pem_key_password(pki: DevPki, tmp_path: Path) -> None:
    path = pem_keystore(pki, tmp_path / "keystore.pem", "right-pw")
    settings = parse_tls_settings(getter({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path), "ssl.key.password": "wrong-pw"}))
    expect_error(settings, "ssl.key.password", "cannot decrypt the private key")
    settings = parse_tls_settings(getter({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)}))
    expect_error(settings, "ssl.key.password", "encrypted but no password is set")


def test_unreadable_and_broken_stores(pki: DevPki, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.p12")
    expect_error(
        parse_tls_settings(getter(server_values(pki, ssl_keystore_location=missing))), "ssl.keystore.location", "cannot read the file"
    )
    garbage = tmp_path / "garbage.p12"
    garbage.write_bytes(b"this is not a keystore")
    expect_error(
        parse_tls_settings(getter(server_values(pki, ssl_keystore_location=str(garbage)))), "ssl.keystore.location", "not a PKCS12 file"
    )
    # PEM files without a key, or with a key that does not belong to the certificate
    no_key = tmp_path / "chain-only.pem"
    no_key.write_bytes(pki.server_cert.read_bytes())
    expect_error(
        parse_tls_settings(getter({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(no_key)})),
        "ssl.keystore.location",
        "no private key",
    )
    mismatch = tmp_path / "mismatch.pem"
    mismatch.write_bytes(pki.server_cert.read_bytes() + pki.clients[0].key.read_bytes())
    expect_error(
        parse_tls_settings(getter({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(mismatch)})),
        "ssl.keystore.location",
        "does not belong",
    )
    # a truststore PKCS12 that is a keystore without trusted certificates is still fine; an empty PEM is not
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    values = server_values(pki, ssl_truststore_type="PEM", ssl_truststore_location=str(empty))
    del values["ssl.truststore.password"]
    expect_error(parse_tls_settings(getter(values)), "ssl.truststore.location", "holds no certificates")


def test_temp_key_file_is_private_encrypted_and_removed(pki: DevPki, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    seen: dict[str, tuple[int, bytes]] = {}
    real_mkstemp, real_unlink = tempfile.mkstemp, os.unlink

    def mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, path = real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]
        seen[path] = (os.stat(path).st_mode & 0o777, b"")
        return fd, path

    def unlink(path: str) -> None:
        if path in seen:
            seen[path] = (seen[path][0], Path(path).read_bytes())
        real_unlink(path)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "unlink", unlink)
    server_context(parse_tls_settings(getter(server_values(pki))))
    assert len(seen) == 1
    ((path, (mode, content)),) = seen.items()
    assert mode == 0o600 and not Path(path).exists()
    assert b"-----BEGIN ENCRYPTED PRIVATE KEY-----" in content and b"-----BEGIN PRIVATE KEY-----" not in content


# --- handshakes ---------------------------------------------------------------------------


@dataclass
class Outcome:
    server_error: BaseException | None = None
    client_error: BaseException | None = None
    server_saw: bytes | None = None  # the client's certificate (DER) as the server saw it
    client_saw: bytes | None = None  # the server's certificate (DER) as the client saw it
    client_received: bytes = b""
    version: str | None = None


async def exchange(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, server_hostname: str = "localhost") -> Outcome:
    """One TLS connection over real sockets on 127.0.0.1; records what each side saw."""
    out = Outcome()
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]

    async def serve() -> None:
        stream = trio.SSLStream(await listener.accept(), server_ctx, server_side=True)
        try:
            await stream.do_handshake()
            out.server_saw = stream.getpeercert(binary_form=True)
            await stream.send_all(b"hello")
        except trio.BrokenResourceError as e:
            out.server_error = e
        finally:
            await trio.aclose_forcefully(stream)

    async def connect() -> None:
        stream = trio.SSLStream(await trio.open_tcp_stream("127.0.0.1", port), client_ctx, server_hostname=server_hostname)
        try:
            await stream.do_handshake()
            out.client_saw = stream.getpeercert(binary_form=True)
            out.version = stream.version()
            out.client_received = bytes(await stream.receive_some(100))
        except trio.BrokenResourceError as e:
            out.client_error = e
        finally:
            await trio.aclose_forcefully(stream)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            nursery.start_soon(connect)
    await listener.aclose()
    return out


async def test_required_client_cert_is_mapped(pki: DevPki) -> None:
    server = parse_tls_settings(getter(server_values(pki, ssl_client_auth="required")))
    out = await exchange(server_context(server), client_context(client_settings(pki)))
    assert out.server_error is None and out.client_error is None
    assert out.client_received == b"hello"
    assert out.client_saw is not None and fingerprint(out.client_saw) == fingerprint(server_cert(pki))
    mapper = parse_mapping_rules("ssl.principal.mapping.rules", "RULE:^CN=([^,]+),OU=clients,O=kafka-envelope-proxy-dev$/$1/U")
    assert principal_for_peer(out.server_saw, mapper) == "ALICE"


async def test_required_client_cert_missing(pki: DevPki) -> None:
    server = parse_tls_settings(getter(server_values(pki, ssl_client_auth="required")))
    out = await exchange(server_context(server), client_context(client_settings(pki, with_cert=False)))
    assert out.server_error is not None
    assert out.server_saw is None and out.client_received == b""


async def test_requested_client_cert_missing_is_anonymous(pki: DevPki) -> None:
    server = parse_tls_settings(getter(server_values(pki, ssl_client_auth="requested")))
    out = await exchange(server_context(server), client_context(client_settings(pki, with_cert=False)))
    assert out.server_error is None and out.client_received == b"hello"
    assert principal_for_peer(out.server_saw, parse_mapping_rules("k", None)) == "ANONYMOUS"


async def test_untrusted_client_cert_is_refused(pki: DevPki, tmp_path: Path) -> None:
    other = generate_dev_pki(tmp_path / "other", hosts=["localhost"], clients=["mallory"], password=PASSWORD)
    server = parse_tls_settings(getter(server_values(pki, ssl_client_auth="required")))
    client = client_settings(pki, ssl_keystore_location=str(other.clients[0].p12))
    out = await exchange(server_context(server), client_context(client))
    assert out.server_error is not None and out.client_received == b""


async def test_protocol_mismatch(pki: DevPki) -> None:
    server = parse_tls_settings(getter(server_values(pki, ssl_enabled_protocols="TLSv1.2")))
    out = await exchange(server_context(server), client_context(client_settings(pki, ssl_enabled_protocols="TLSv1.3")))
    assert out.server_error is not None and out.client_error is not None
    # and each alone works, at the configured version
    tls12 = await exchange(server_context(server), client_context(client_settings(pki)))
    assert tls12.client_received == b"hello" and tls12.version == "TLSv1.2"


async def test_endpoint_identification(pki: DevPki) -> None:
    server = server_context(parse_tls_settings(getter(server_values(pki))))
    checked = await exchange(server, client_context(client_settings(pki)), server_hostname="not-this-host.example")
    assert checked.client_error is not None
    values = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.truststore_pem), "ssl.endpoint.identification.algorithm": ""}
    unchecked = await exchange(
        server, client_context(parse_tls_settings(getter(values), for_server=False)), server_hostname="not-this-host.example"
    )
    assert unchecked.client_received == b"hello"


# --- reloading ----------------------------------------------------------------------------


async def test_reload_after_rotation(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pki = generate_dev_pki(tmp_path, hosts=["localhost"], clients=["alice"], password=PASSWORD)
    reloading = ReloadingServerContext(parse_tls_settings(getter(server_values(pki))))
    first = reloading.current()
    assert reloading.current() is first and reloading.generation == 0
    old_fp = fingerprint(server_cert(pki))
    client = client_context(client_settings(pki))
    assert fingerprint((await exchange(reloading.current(), client)).client_saw or b"") == old_fp

    # rotate: new server key and certificate from the same CA
    generate_dev_pki(tmp_path, hosts=["localhost"], clients=["alice"], password=PASSWORD)
    new_fp = fingerprint(server_cert(pki))
    assert new_fp != old_fp
    second = reloading.current()
    assert second is not first and reloading.generation == 1
    out = await exchange(second, client_context(client_settings(pki)))
    assert out.client_saw is not None and fingerprint(out.client_saw) == new_fp

    # a broken file keeps the previous context and logs the file and the reason
    caplog.set_level(logging.ERROR, logger="proxy.net.tls.context")
    pki.server_p12.write_bytes(b"garbage")
    assert reloading.current() is second and reloading.generation == 1
    assert str(pki.server_p12) in caplog.text and "not a PKCS12 file" in caplog.text
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    out = await exchange(reloading.current(), client_context(client_settings(pki)))
    assert out.client_saw is not None and fingerprint(out.client_saw) == new_fp
    assert reloading.current() is second  # not retried until the files change again
    assert len(caplog.records) == 1

    # fixing the file recovers; reload() rebuilds without any change (SIGHUP)
    generate_dev_pki(tmp_path, hosts=["localhost"], clients=["alice"], password=PASSWORD)
    third = reloading.current()
    assert third is not second and reloading.generation == 2
    assert reloading.reload() is True and reloading.generation == 3 and reloading.current() is not third


def test_reload_notices_inode_change_alone(tmp_path: Path) -> None:
    pki = generate_dev_pki(tmp_path, hosts=["localhost"], clients=[], password=PASSWORD)
    reloading = ReloadingServerContext(parse_tls_settings(getter(server_values(pki))))
    before = pki.server_p12.stat()
    copy = tmp_path / "copy.p12"
    copy.write_bytes(pki.server_p12.read_bytes())
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(copy, pki.server_p12)  # same bytes, same mtime, new inode
    reloading.current()
    assert reloading.generation == 1


def test_reloading_first_build_must_succeed(pki: DevPki) -> None:
    with pytest.raises(ConfigError):
        ReloadingServerContext(parse_tls_settings(getter(server_values(pki, ssl_keystore_password="wrong-pw"))))
