"""The development PKI: files, chains, SANs, PKCS12 protection and file modes."""

import ipaddress
import stat
from pathlib import Path

import javaproperties
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import verification

from envelope_proxy.dev_pki import DevPki, generate_dev_pki, properties_snippet
from proxy.net.tls.context import server_context
from proxy.net.tls.options import parse_tls_settings

PASSWORD = "pki-secret"
HOSTS = ["localhost", "kafka.example", "10.1.2.3", "::2"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> DevPki:
    return generate_dev_pki(tmp_path_factory.mktemp("pki"), hosts=HOSTS, clients=["alice", "bob"], password=PASSWORD)


def chain(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())


def ca(pki: DevPki) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())


def test_files(pki: DevPki) -> None:
    names = {p.name for p in pki.out_dir.iterdir()}
    assert names == {
        "ca.pem", "ca.key", "server.pem", "server.key", "server.p12", "truststore.pem", "truststore.p12",
        "client-alice.pem", "client-alice.key", "client-alice.p12", "client-bob.pem", "client-bob.key", "client-bob.p12",
    }  # fmt: skip
    assert [c.name for c in pki.clients] == ["alice", "bob"]


def test_key_files_are_private(pki: DevPki) -> None:
    for path in [pki.ca_key, pki.server_key, pki.server_p12, *(c.key for c in pki.clients), *(c.p12 for c in pki.clients)]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(pki.ca_cert.stat().st_mode) == 0o644


def test_ca(pki: DevPki) -> None:
    cert = ca(pki)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign
    key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), None)
    assert key.public_key() == cert.public_key()
    assert chain(pki.truststore_pem) == [cert]


def test_server_chain_verifies_for_every_host(pki: DevPki) -> None:
    server, issuer = chain(pki.server_cert)
    assert issuer == ca(pki)
    store = verification.Store([ca(pki)])
    for host in HOSTS:
        try:
            subject: x509.verification.Subject = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            subject = x509.DNSName(host)
        verifier = verification.PolicyBuilder().store(store).build_server_verifier(subject)
        verifier.verify(server, [issuer])
    wrong = verification.PolicyBuilder().store(store).build_server_verifier(x509.DNSName("elsewhere.example"))
    with pytest.raises(verification.VerificationError):
        wrong.verify(server, [issuer])


def test_server_sans(pki: DevPki) -> None:
    server = chain(pki.server_cert)[0]
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost", "kafka.example"]
    # "localhost" also covers the loopback addresses clients may connect to
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"), ipaddress.ip_address("10.1.2.3"), ipaddress.ip_address("::2"),
    ]  # fmt: skip
    assert pki.server_dn == "CN=localhost,OU=servers,O=kafka-envelope-proxy-dev"


def test_client_certificates(pki: DevPki) -> None:
    store = verification.Store([ca(pki)])
    for client in pki.clients:
        cert, issuer = chain(client.cert)
        assert client.dn == f"CN={client.name},OU=clients,O=kafka-envelope-proxy-dev"
        # Kafka client certificates carry no SAN, which cryptography's web-PKI default demands.
        policies = verification.PolicyBuilder().extension_policies(
            ca_policy=verification.ExtensionPolicy.webpki_defaults_ca(), ee_policy=verification.ExtensionPolicy.permit_all()
        )
        verified = policies.store(store).build_client_verifier().verify(cert, [issuer])
        assert verified.chain[-1] == ca(pki)
        key = serialization.load_pem_private_key(client.key.read_bytes(), None)
        assert key.public_key() == cert.public_key()


@pytest.mark.parametrize("which", ["server", "alice", "bob"])
def test_p12_needs_the_password(pki: DevPki, which: str) -> None:
    path = pki.server_p12 if which == "server" else next(c.p12 for c in pki.clients if c.name == which)
    pem = pki.server_cert if which == "server" else next(c.cert for c in pki.clients if c.name == which)
    key, cert, extra = pkcs12.load_key_and_certificates(path.read_bytes(), PASSWORD.encode())
    assert key is not None and cert == chain(pem)[0] and extra == [ca(pki)]
    for wrong in (None, b"wrong"):
        with pytest.raises(ValueError):
            pkcs12.load_key_and_certificates(path.read_bytes(), wrong)


def test_truststore_p12(pki: DevPki) -> None:
    store = pkcs12.load_pkcs12(pki.truststore_p12.read_bytes(), PASSWORD.encode())
    assert store.key is None
    assert [c.certificate for c in store.additional_certs] == [ca(pki)]
    with pytest.raises(ValueError):
        pkcs12.load_pkcs12(pki.truststore_p12.read_bytes(), b"wrong")


def test_regenerating_reuses_the_ca(tmp_path: Path) -> None:
    first = generate_dev_pki(tmp_path, hosts=["localhost"], clients=["alice"], password=PASSWORD)
    ca_bytes, server_bytes, inode = first.ca_cert.read_bytes(), first.server_cert.read_bytes(), first.server_p12.stat().st_ino
    second = generate_dev_pki(tmp_path, hosts=["localhost"], clients=["alice", "carol"], password=PASSWORD)
    assert second.ca_reused and not first.ca_reused
    assert second.ca_cert.read_bytes() == ca_bytes
    assert second.server_cert.read_bytes() != server_bytes
    assert second.server_p12.stat().st_ino != inode  # replaced atomically, not rewritten in place
    third = generate_dev_pki(tmp_path, hosts=["localhost"], clients=[], password=PASSWORD, reuse_ca=False)
    assert not third.ca_reused and third.ca_cert.read_bytes() != ca_bytes


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hosts": []}, "at least one host"),
        ({"clients": ["../evil"]}, "client name"),
        ({"clients": ["a,b"]}, "client name"),
        ({"clients": ["a", "a"]}, "unique"),
        ({"password": ""}, "password"),
    ],
)
def test_invalid_arguments(tmp_path: Path, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"hosts": ["localhost"], "clients": [], "password": PASSWORD, **kwargs}
    with pytest.raises(ValueError, match=message):
        generate_dev_pki(tmp_path, **args)  # type: ignore[arg-type]


def test_properties_snippet_configures_a_listener(pki: DevPki) -> None:
    text = properties_snippet(pki, "CLIENT")
    props: dict[str, str] = javaproperties.loads(text)
    prefix = "listener.name.client."
    assert props[prefix + "ssl.client.auth"] == "required"
    assert props[prefix + "ssl.keystore.location"] == str(pki.server_p12.resolve())
    settings = parse_tls_settings(lambda key: props.get(prefix + key), key_prefix=prefix)
    assert settings.client_auth == "required"
    server_context(settings)
    assert "CN=alice,OU=clients,O=kafka-envelope-proxy-dev -> principal User:alice" in text
