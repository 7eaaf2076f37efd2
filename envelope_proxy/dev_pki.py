"""Development PKI for ``envelope-proxy certs``: a CA, a server certificate and client certificates.

Everything uses EC P-256 keys and SHA-256 signatures (fast to generate, accepted by Java
and OpenSSL).  Files are replaced atomically (written next to the target, then renamed),
so a running proxy's :class:`~proxy.net.tls.context.ReloadingServerContext` never reads a half-written
file and sees a new inode on every rewrite.  An existing ``ca.pem``/``ca.key`` pair in the
output directory is reused, so regenerating keeps clients' truststores valid.

A client named ``alice`` gets the subject that Java (and so Kafka's
``ssl.principal.mapping.rules``) prints as ``CN=alice,OU=clients,O=kafka-envelope-proxy-dev``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from proxy.net.tls.subject import distinguished_name
from proxy.properties import listener_prefix

__all__ = ["ORGANIZATION", "SNIPPET_PROTOCOLS", "ClientFiles", "DevPki", "default_protocol", "generate_dev_pki", "properties_snippet"]

ORGANIZATION = "kafka-envelope-proxy-dev"
_CLIENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_BACKDATE = datetime.timedelta(minutes=5)  # tolerate small clock differences between hosts


@dataclass(frozen=True)
class ClientFiles:
    name: str
    dn: str  # the subject as Java's X500Principal.getName() prints it
    cert: Path  # client certificate + CA
    key: Path  # unencrypted PKCS#8, mode 0600
    p12: Path  # key + chain, password-protected


@dataclass(frozen=True)
class DevPki:
    out_dir: Path
    ca_cert: Path
    ca_key: Path
    server_cert: Path  # server certificate + CA
    server_key: Path
    server_p12: Path
    truststore_pem: Path
    truststore_p12: Path
    clients: tuple[ClientFiles, ...]
    hosts: tuple[str, ...]
    server_dn: str
    ca_reused: bool
    password: str = field(repr=False)  # of the .p12 files; a development secret


def _write(path: Path, data: bytes, mode: int) -> None:
    """Atomic replace with the final mode set before the file becomes visible."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _pem(*certs: x509.Certificate) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _name(cn: str, ou: str | None = None) -> x509.Name:
    # X.509 order is most significant first; RFC 2253 strings print it reversed (CN first).
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION)]
    if ou is not None:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def _san(hosts: Sequence[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []

    def add(name: x509.GeneralName) -> None:
        if name not in names:
            names.append(name)

    for host in hosts:
        try:
            add(x509.IPAddress(ipaddress.ip_address(host.strip("[]"))))
        except ValueError:
            add(x509.DNSName(host))
            if host.lower() == "localhost":  # clients may connect to the loopback address instead
                add(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
                add(x509.IPAddress(ipaddress.ip_address("::1")))
    return x509.SubjectAlternativeName(names)


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate,
    issuer_key: ec.EllipticCurvePrivateKey,
    not_after: datetime.datetime,
    usages: list[x509.ObjectIdentifier],
    san: x509.SubjectAlternativeName | None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(min(not_after, issuer.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _new_ca(days: int) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(f"{ORGANIZATION} CA")
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _load_ca(cert_path: Path, key_path: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = serialization.load_pem_private_key(key_path.read_bytes(), None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{key_path} is not an EC private key")
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.DER, spki) != cert.public_key().public_bytes(serialization.Encoding.DER, spki):
        raise ValueError(f"{key_path} does not belong to {cert_path}")
    if not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
        raise ValueError(f"{cert_path} is not a CA certificate")
    return cert, key


def _p12(name: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate, ca: x509.Certificate, password: str) -> bytes:
    return pkcs12.serialize_key_and_certificates(name.encode(), key, cert, [ca], serialization.BestAvailableEncryption(password.encode()))


def generate_dev_pki(
    out_dir: Path,
    *,
    hosts: Sequence[str],
    clients: Sequence[str],
    password: str,
    days: int = 365,
    reuse_ca: bool = True,
) -> DevPki:
    """Create (or refresh) the development PKI in ``out_dir``.

    Files: ``ca.pem``/``ca.key``; ``server.pem`` (server cert + CA), ``server.key``,
    ``server.p12``; ``client-<name>.pem``/``.key``/``.p12`` per client; ``truststore.pem``
    and ``truststore.p12`` (the CA; the .p12 carries Java's trusted-certificate marker so
    keytool/Kafka see it as a trusted entry).  Keys are unencrypted PKCS#8 with mode 0600;
    the .p12 files are protected by ``password``.
    """
    if not hosts:
        raise ValueError("at least one host name or address is needed for the server certificate")
    if not password:
        raise ValueError("a password for the PKCS12 files is needed")
    if days < 1:
        raise ValueError("days must be at least 1")
    for name in clients:
        if not _CLIENT_NAME.match(name):
            raise ValueError(f"client name {name!r} must be letters, digits, '.', '_' or '-' (it becomes a file name and a CN)")
    if len(set(clients)) != len(clients):
        raise ValueError("client names must be unique")

    out_dir.mkdir(parents=True, exist_ok=True)
    ca_cert_path, ca_key_path = out_dir / "ca.pem", out_dir / "ca.key"
    ca_reused = reuse_ca and ca_cert_path.exists() and ca_key_path.exists()
    if ca_reused:
        ca_cert, ca_key = _load_ca(ca_cert_path, ca_key_path)
    else:
        if reuse_ca and (ca_cert_path.exists() or ca_key_path.exists()):
            raise ValueError(f"{out_dir} has only one of ca.pem and ca.key; remove it or pass reuse_ca=False")
        ca_cert, ca_key = _new_ca(days)
        _write(ca_key_path, _key_pem(ca_key), 0o600)
        _write(ca_cert_path, _pem(ca_cert), 0o644)

    not_after = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)

    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _issue(
        _name(hosts[0], "servers"),
        server_key,
        ca_cert,
        ca_key,
        not_after,
        [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
        _san(hosts),
    )
    server_paths = out_dir / "server.pem", out_dir / "server.key", out_dir / "server.p12"
    _write(server_paths[1], _key_pem(server_key), 0o600)
    _write(server_paths[0], _pem(server_cert, ca_cert), 0o644)
    _write(server_paths[2], _p12("server", server_key, server_cert, ca_cert, password), 0o600)

    client_files = []
    for name in clients:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(_name(name, "clients"), key, ca_cert, ca_key, not_after, [ExtendedKeyUsageOID.CLIENT_AUTH], None)
        files = ClientFiles(
            name=name,
            dn=distinguished_name(cert),
            cert=out_dir / f"client-{name}.pem",
            key=out_dir / f"client-{name}.key",
            p12=out_dir / f"client-{name}.p12",
        )
        _write(files.key, _key_pem(key), 0o600)
        _write(files.cert, _pem(cert, ca_cert), 0o644)
        _write(files.p12, _p12(name, key, cert, ca_cert, password), 0o600)
        client_files.append(files)

    truststore_pem, truststore_p12 = out_dir / "truststore.pem", out_dir / "truststore.p12"
    _write(truststore_pem, _pem(ca_cert), 0o644)
    _write(
        truststore_p12,
        pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(ca_cert, b"ca")], serialization.BestAvailableEncryption(password.encode())
        ),
        0o644,
    )
    return DevPki(
        out_dir=out_dir,
        ca_cert=ca_cert_path,
        ca_key=ca_key_path,
        server_cert=server_paths[0],
        server_key=server_paths[1],
        server_p12=server_paths[2],
        truststore_pem=truststore_pem,
        truststore_p12=truststore_p12,
        clients=tuple(client_files),
        hosts=tuple(hosts),
        server_dn=distinguished_name(server_cert),
        ca_reused=ca_reused,
        password=password,
    )


def _prop_value(value: str) -> str:
    """Escape a value for a Java .properties file (backslashes, leading space, line breaks)."""
    out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + out if out.startswith((" ", "\t")) else out


SNIPPET_PROTOCOLS = ("SSL", "SASL_SSL")
"""The security protocols `properties_snippet` writes TLS settings for."""


def default_protocol(listener_name: str) -> str:
    """SASL_SSL for a listener named SASL_SSL (Kafka's default protocol map), else SSL."""
    return "SASL_SSL" if listener_name.upper() == "SASL_SSL" else "SSL"


def properties_snippet(pki: DevPki, listener_name: str, protocol: str | None = None) -> str:
    """Kafka properties turning on TLS for ``listener_name`` of security ``protocol`` (SSL or SASL_SSL).

    SSL: the server's stores, client certificates required and mapped to principals (``ssl.client.auth=required``,
    ``ssl.principal.mapping.rules``), and each client's keystore. SASL_SSL: the server's keystore only, because the
    principal comes from the SASL login and no client certificate is asked for; the client needs the CA and its login.
    """
    protocol = (protocol or default_protocol(listener_name)).upper()
    if protocol not in SNIPPET_PROTOCOLS:
        raise ValueError(f"protocol {protocol!r} has no TLS settings to print: use one of {', '.join(SNIPPET_PROTOCOLS)}")
    prefix = listener_prefix(listener_name)
    name = listener_name.upper()
    keystore = [
        f"{prefix}ssl.keystore.type=PKCS12",
        f"{prefix}ssl.keystore.location={_prop_value(str(pki.server_p12.resolve()))}",
        f"{prefix}ssl.keystore.password={_prop_value(pki.password)}",
        f"{prefix}ssl.key.password={_prop_value(pki.password)}",
    ]
    if protocol == "SASL_SSL":
        lines = [
            f"# TLS for listener {name}, security protocol SASL_SSL (development PKI in {pki.out_dir}):",
            f"# listener.security.protocol.map must map {name}:SASL_SSL. Clients log in with SASL over TLS, so the",
            "# principal is the SASL user and no client certificate is asked for (no ssl.client.auth).",
            *keystore,
            "",
            "# a client of this listener: the CA, and the login of one of sasl.enabled.mechanisms, e.g.",
            "# security.protocol=SASL_SSL",
            "# sasl.mechanism=SCRAM-SHA-512",
            '# sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="...";',
            "# ssl.truststore.type=PKCS12",
            f"# ssl.truststore.location={_prop_value(str(pki.truststore_p12.resolve()))}",
            f"# ssl.truststore.password={_prop_value(pki.password)}",
            f"# (librdkafka, confluent-kafka: ssl.ca.location={_prop_value(str(pki.truststore_pem.resolve()))})",
        ]
        if pki.clients:
            names = ", ".join(client.name for client in pki.clients)
            lines.append(f"# The client certificates ({names}) are for SSL listeners: a SASL_SSL listener does not ask for them.")
        return "\n".join(lines) + "\n"
    rule = f"RULE:^CN=([^,]+),OU=clients,O={ORGANIZATION}$/$1/,DEFAULT"
    lines = [
        f"# TLS for listener {name}, security protocol SSL (development PKI in {pki.out_dir}):",
        f"# listener.security.protocol.map must map {name}:SSL. The principal is the client certificate's subject, mapped by the rules.",
        *keystore,
        f"{prefix}ssl.truststore.type=PKCS12",
        f"{prefix}ssl.truststore.location={_prop_value(str(pki.truststore_p12.resolve()))}",
        f"{prefix}ssl.truststore.password={_prop_value(pki.password)}",
        f"{prefix}ssl.client.auth=required",
        f"{prefix}ssl.principal.mapping.rules={rule}",
    ]
    for client in pki.clients:
        lines += [
            "",
            f"# client {client.name} ({client.dn} -> principal User:{client.name}):",
            "# security.protocol=SSL",
            "# ssl.keystore.type=PKCS12",
            f"# ssl.keystore.location={_prop_value(str(client.p12.resolve()))}",
            f"# ssl.keystore.password={_prop_value(pki.password)}",
            "# ssl.truststore.type=PEM",
            f"# ssl.truststore.location={_prop_value(str(pki.truststore_pem.resolve()))}",
        ]
    return "\n".join(lines) + "\n"
