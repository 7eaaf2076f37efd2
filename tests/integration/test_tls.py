"""SSL and SASL_SSL end to end: real clients over real TLS on loopback, the proxy's own TLS login, certificate reload."""

import hashlib
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.dev_pki import DevPki, generate_dev_pki
from envelope_proxy.embedded import PROXY_PASSWORD, PROXY_USER, EmbeddedStack, client_config, controller_properties, start_stack
from proxy.net.sasl.credentials import add_user
from proxy.net.sasl.jaas import SCRAM_LOGIN_MODULE
from tests.integration.conftest import audit_records

TIMEOUT = 30
PASSWORD = "pki-secret"
SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"
USERS = {"admin": "admin-scram", "bob": "bob-scram"}
CLIENTS = ["alice", "admin", "proxy", "mallory"]
MAPPING = "RULE:^CN=(.*?),OU=clients.*$/$1/,DEFAULT"
API_VERSIONS = {"client_software_name": "tls-test", "client_software_version": "1"}


def make_pki(directory: Path) -> DevPki:
    return generate_dev_pki(directory, hosts=["localhost", "127.0.0.1"], clients=CLIENTS, password=PASSWORD)


def client(pki: DevPki, name: str) -> Any:
    return next(c for c in pki.clients if c.name == name)


def keystore(pki: DevPki, prefix: str = "") -> dict[str, str]:
    """A server keystore and truststore (both PKCS12) under `prefix` (`""` = the global ssl.* keys)."""
    return {
        f"{prefix}ssl.keystore.type": "PKCS12",
        f"{prefix}ssl.keystore.location": str(pki.server_p12),
        f"{prefix}ssl.keystore.password": PASSWORD,
        f"{prefix}ssl.key.password": PASSWORD,
        f"{prefix}ssl.truststore.type": "PKCS12",
        f"{prefix}ssl.truststore.location": str(pki.truststore_p12),
        f"{prefix}ssl.truststore.password": PASSWORD,
    }


def scram_file(path: Path, users: dict[str, str]) -> Path:
    for user, password in users.items():
        add_user(path, user, password, [SHA256, SHA512])
    return path


@pytest.fixture
def pki(tmp_path: Path) -> DevPki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
async def tls_stack(nursery: Any, tmp_path: Path, pki: DevPki) -> EmbeddedStack:
    """The proxy with CLIENT (SASL_SSL, SCRAM), MTLS (SSL, client certificates required, mapped) and
    STRICT (SSL, rules without DEFAULT) listeners; the keystore comes from the global ssl.* keys."""
    proxy = {
        "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0,MTLS://127.0.0.1:0,STRICT://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SASL_SSL,PLAIN:PLAINTEXT,MTLS:SSL,STRICT:SSL,CONTROLLER:SASL_PLAINTEXT",
        **keystore(pki),
        # KIP-684: the global value applies to the SSL listeners, not to the SASL_SSL one.
        "ssl.client.auth": "required",
        "ssl.principal.mapping.rules": MAPPING,
        "listener.name.strict.ssl.principal.mapping.rules": "RULE:^CN=(alice),OU=clients.*$/$1/",
        "listener.name.client.sasl.enabled.mechanisms": f"{SHA256},{SHA512}",
        "listener.name.client.sasl.scram.credentials.file": str(scram_file(tmp_path / "scram.json", USERS)),
        "privileged.principals": "User:proxy",
    }
    controller = {"super.users": "User:proxy;User:admin;User:alice"}
    return await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy, controller_overrides=controller)


def address(stack: EmbeddedStack, listener: str) -> str:
    return stack.proxy.address(listener)


def changes(stack: EmbeddedStack) -> list[tuple[str, str, str | None, str, int]]:
    return [(c.api, c.principal, c.forwarded_by, c.resource, c.error_code) for c in stack.controller.image.changes]


def tls_socket(addr: str, pki: DevPki, cert: str | None = None) -> ssl.SSLSocket:
    """A raw TLS connection (handshake done) trusting the development CA, with `cert`'s client certificate."""
    context = ssl.create_default_context(cafile=str(pki.truststore_pem))
    if cert is not None:
        context.load_cert_chain(str(client(pki, cert).cert), str(client(pki, cert).key))
    return context.wrap_socket(wire.connect(addr), server_hostname=addr.rsplit(":", 1)[0])


def fingerprint(der: bytes | None) -> str:
    assert der is not None
    return hashlib.sha256(der).hexdigest()


def server_fingerprint(pki: DevPki) -> str:
    cert = x509.load_pem_x509_certificates(pki.server_cert.read_bytes())[0]
    return fingerprint(cert.public_bytes(serialization.Encoding.DER))


def api_versions_work(sock: socket.socket, correlation_id: int = 7) -> bool:
    return int(wire.call(sock, ApiKey.API_VERSIONS, 3, API_VERSIONS, correlation_id=correlation_id).error_code) == 0


def create_topic(config: dict[str, str], topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(config)
    for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT).values():
        future.result(timeout=TIMEOUT)


# -- real clients ------------------------------------------------------------------------------


async def test_confluent_kafka_sasl_ssl_scram_sha_512_creates_a_topic(tls_stack: EmbeddedStack, pki: DevPki, tmp_path: Path) -> None:
    config = {
        "bootstrap.servers": address(tls_stack, "CLIENT"),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki.truststore_pem),
        "sasl.mechanism": SHA512,
        "sasl.username": "admin",
        "sasl.password": USERS["admin"],
    }
    await trio.to_thread.run_sync(create_topic, config, "over-sasl-ssl")
    assert ("CreateTopics", "User:admin", "User:proxy", "topic:over-sasl-ssl", 0) in changes(tls_stack)
    intent = next(r for r in audit_records(tmp_path / "audit") if r["subject"] == "topic:over-sasl-ssl" and r["data"]["stage"] == "intent")
    assert intent["data"]["authenticationInfo"] == {
        "principal": "User:admin",
        "mechanism": SHA512,
        "listener": "CLIENT",
        "securityProtocol": "SASL_SSL",
    }
    assert intent["data"]["requestMetadata"]["clientAddress"] == "127.0.0.1"  # the TCP peer


async def test_confluent_kafka_mtls_creates_a_topic_as_the_mapped_principal(tls_stack: EmbeddedStack, pki: DevPki, tmp_path: Path) -> None:
    alice = client(pki, "alice")
    config = {
        "bootstrap.servers": address(tls_stack, "MTLS"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.truststore_pem),
        "ssl.certificate.location": str(alice.cert),
        "ssl.key.location": str(alice.key),
    }
    await trio.to_thread.run_sync(create_topic, config, "over-mtls")
    assert ("CreateTopics", "User:alice", "User:proxy", "topic:over-mtls", 0) in changes(tls_stack)
    intent = next(r for r in audit_records(tmp_path / "audit") if r["subject"] == "topic:over-mtls" and r["data"]["stage"] == "intent")
    assert intent["data"]["authenticationInfo"] == {"principal": "User:alice", "mechanism": "SSL", "listener": "MTLS", "securityProtocol": "SSL"}


async def test_kafka_python_sasl_ssl_scram_sha_256_creates_a_topic(tls_stack: EmbeddedStack, pki: DevPki) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    def work() -> None:
        admin = KafkaAdminClient(
            bootstrap_servers=address(tls_stack, "CLIENT"),
            security_protocol="SASL_SSL",
            ssl_cafile=str(pki.truststore_pem),
            sasl_mechanism=SHA256,
            sasl_plain_username="admin",
            sasl_plain_password=USERS["admin"],
            request_timeout_ms=TIMEOUT * 1000,
        )
        try:
            admin.create_topics([NewTopic("kafka-python-tls", 1, 1)])
        finally:
            admin.close()

    await trio.to_thread.run_sync(work)
    assert ("CreateTopics", "User:admin", "User:proxy", "topic:kafka-python-tls", 0) in changes(tls_stack)


# -- refusals on SSL listeners -------------------------------------------------------------------


def _fails_without_certificate(addr: str, pki: DevPki) -> bool:
    """With TLS 1.3 the server checks the client certificate after the client's side of the handshake: the
    refusal shows up on the first read (an alert or EOF), or already in the handshake with TLS 1.2."""
    try:
        with tls_socket(addr, pki) as sock:
            sock.sendall(wire.encode_frame(wire.request(ApiKey.API_VERSIONS, 3, API_VERSIONS)))
            return sock.recv(1) == b""
    except (ssl.SSLError, ConnectionError):
        return True


async def test_a_client_without_a_certificate_fails_the_handshake_and_others_are_unaffected(
    tls_stack: EmbeddedStack, pki: DevPki, tmp_path: Path
) -> None:
    def probe() -> tuple[bool, bool]:
        with tls_socket(address(tls_stack, "MTLS"), pki, "alice") as healthy:
            failed = _fails_without_certificate(address(tls_stack, "MTLS"), pki)
            return failed, api_versions_work(healthy)

    assert await trio.to_thread.run_sync(probe) == (True, True)
    # Not an authentication by the proxy: no session, nothing audited.
    assert [r for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"] == []


async def test_a_dn_matching_no_rule_is_refused_and_audited(tls_stack: EmbeddedStack, pki: DevPki, tmp_path: Path) -> None:
    def probe(cert: str) -> bool:
        with tls_socket(address(tls_stack, "STRICT"), pki, cert) as sock:
            try:
                return api_versions_work(sock)
            except (ConnectionError, ssl.SSLError):
                return False

    assert await trio.to_thread.run_sync(probe, "mallory") is False
    assert await trio.to_thread.run_sync(probe, "alice") is True
    refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert len(refused) == 1
    assert refused[0]["authenticationInfo"] == {"principal": None, "mechanism": "SSL", "listener": "STRICT", "securityProtocol": "SSL"}
    assert refused[0]["authorizationInfo"]["reason"] == "ssl-principal-mapping"
    assert refused[0]["authorizationInfo"]["detail"].startswith("No rules apply to CN=mallory,OU=clients,O=kafka-envelope-proxy-dev")
    assert refused[0]["requestMetadata"]["clientAddress"] == "127.0.0.1"


async def test_privileged_principals_apply_to_certificate_principals(tls_stack: EmbeddedStack, pki: DevPki, tmp_path: Path) -> None:
    def probe() -> bool:
        with tls_socket(address(tls_stack, "MTLS"), pki, "proxy") as sock:
            return wire.is_closed(sock)

    assert await trio.to_thread.run_sync(probe)
    refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert [(r["authenticationInfo"]["principal"], r["authenticationInfo"]["mechanism"], r["authorizationInfo"]["reason"]) for r in refused] == [
        ("User:proxy", "SSL", "privileged-principal")
    ]


async def test_a_stalled_handshake_times_out_and_a_garbage_one_fails_alone(nursery: Any, tmp_path: Path, pki: DevPki) -> None:
    proxy = {
        "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SSL,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        **keystore(pki, "listener.name.client."),
        "listener.name.client.ssl.handshake.timeout.ms": "200",
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy)

    def probe() -> tuple[bool, bool, bool]:
        addr = address(stack, "CLIENT")
        with tls_socket(addr, pki) as healthy, wire.connect(addr) as stalled, wire.connect(addr) as garbage:
            garbage.sendall(b"GET / HTTP/1.1\r\n\r\n")
            return wire.is_closed(stalled), wire.is_closed(garbage), api_versions_work(healthy)

    assert await trio.to_thread.run_sync(probe) == (True, True, True)


async def test_the_ip_filter_refuses_before_the_handshake(nursery: Any, tmp_path: Path, pki: DevPki) -> None:
    proxy = {
        "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SSL,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        **keystore(pki, "listener.name.client."),
        "listener.name.client.security.ip.filter.rule.type": "deny",
        "listener.name.client.security.ip.filter.list": "127.0.0.5",
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy)

    def probe() -> bool:
        with wire.connect(address(stack, "CLIENT"), source="127.0.0.5") as sock:
            return wire.is_closed(sock)  # closed without a ServerHello: nothing was read

    assert await trio.to_thread.run_sync(probe)
    refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert [(r["requestMetadata"]["clientAddress"], r["authorizationInfo"]["reason"], r["authenticationInfo"]["securityProtocol"]) for r in refused] == [
        ("127.0.0.5", "ip-filter", "SSL")
    ]


# -- certificate reload --------------------------------------------------------------------------


@pytest.mark.parametrize("trigger", ["reload", "file-change"])
async def test_new_connections_get_the_new_certificate_and_open_ones_continue(
    tls_stack: EmbeddedStack, pki: DevPki, tmp_path: Path, trigger: str
) -> None:
    addr = address(tls_stack, "CLIENT")
    context = tls_stack.proxy.listener("CLIENT").tls
    assert context is not None
    old = server_fingerprint(pki)

    old_sock = await trio.to_thread.run_sync(tls_socket, addr, pki)
    try:
        assert fingerprint(old_sock.getpeercert(binary_form=True)) == old
        assert await trio.to_thread.run_sync(api_versions_work, old_sock, 1)
        renewed = make_pki(tmp_path / "pki")  # same CA (reused), new server key and certificate
        assert renewed.ca_reused
        new = server_fingerprint(renewed)
        assert new != old
        if trigger == "reload":
            assert context.context.reload()  # what SIGHUP does
            assert context.context.generation == 1

        def new_connection() -> str:
            with tls_socket(addr, pki) as sock:
                assert api_versions_work(sock)
                return fingerprint(sock.getpeercert(binary_form=True))

        assert await trio.to_thread.run_sync(new_connection) == new
        assert context.context.generation == 1
        # The connection opened before the swap still works on its old session (a SASL handshake is the
        # next request Kafka allows after one ApiVersions on a SASL_SSL listener).
        handshake = await trio.to_thread.run_sync(lambda: wire.call(old_sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}, correlation_id=2))
        assert int(handshake.error_code) == 0
        assert fingerprint(old_sock.getpeercert(binary_form=True)) == old
    finally:
        old_sock.close()


def _read_lines(stream: Any, lines: list[str], seen: threading.Event) -> None:
    for line in stream:
        lines.append(line)
        seen.set()


def _wait_for(lines: list[str], text: str, process: subprocess.Popen[str], deadline: float = 60.0) -> str:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        for line in list(lines):
            if text in line:
                return line
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode}: {''.join(lines)}")
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not logged within {deadline}s: {''.join(lines)}")


def test_sighup_reloads_the_certificates_of_a_running_controller(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    props = {
        **controller_properties(),
        "listener.security.protocol.map": "CONTROLLER:SSL",
        **keystore(pki, "listener.name.controller."),
    }
    config = tmp_path / "controller.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    process = subprocess.Popen(
        [sys.executable, "-m", "envelope_proxy.cli", "controller", "--config", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=_read_lines, args=(process.stderr, lines, threading.Event()), daemon=True)
    reader.start()
    try:
        listening = _wait_for(lines, "listening on CONTROLLER", process)
        port = int(listening.split(" (")[0].rsplit(":", 1)[1])
        addr = f"127.0.0.1:{port}"
        with tls_socket(addr, pki) as sock:
            assert fingerprint(sock.getpeercert(binary_form=True)) == server_fingerprint(pki)
        renewed = make_pki(tmp_path / "pki")
        process.send_signal(signal.SIGHUP)
        _wait_for(lines, "received SIGHUP: reloaded TLS", process)
        with tls_socket(addr, pki) as sock:
            assert fingerprint(sock.getpeercert(binary_form=True)) == server_fingerprint(renewed)
            assert api_versions_work(sock)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        reader.join(timeout=10)


# -- the proxy's own TLS connection to the controller ---------------------------------------------


async def test_the_proxy_logs_in_to_a_sasl_ssl_scram_controller(nursery: Any, tmp_path: Path, pki: DevPki) -> None:
    controller = {
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
        **keystore(pki, "listener.name.controller."),
        "sasl.enabled.mechanisms": SHA256,
        "sasl.scram.credentials.file": str(scram_file(tmp_path / "controller-scram.json", {PROXY_USER: PROXY_PASSWORD})),
    }
    proxy = {
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SASL_SSL",
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location": str(pki.truststore_pem),
        "sasl.mechanism.controller.protocol": SHA256,
        "listener.name.controller.scram-sha-256.sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="{PROXY_USER}" password="{PROXY_PASSWORD}";',
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy, controller_overrides=controller)
    assert stack.proxy.service.upstream.connected
    await trio.to_thread.run_sync(create_topic, client_config(stack.sasl_address, "admin"), "via-sasl-ssl-controller")
    assert ("CreateTopics", "User:admin", "User:proxy", "topic:via-sasl-ssl-controller", 0) in changes(stack)


async def test_the_proxy_logs_in_to_an_ssl_controller_with_a_client_certificate(nursery: Any, tmp_path: Path, pki: DevPki) -> None:
    proxy_cert = client(pki, "proxy")
    controller = {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        **keystore(pki, "listener.name.controller."),
        "listener.name.controller.ssl.client.auth": "required",
        "listener.name.controller.ssl.principal.mapping.rules": MAPPING,
    }
    proxy = {
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SSL",
        "listener.name.controller.ssl.keystore.type": "PKCS12",
        "listener.name.controller.ssl.keystore.location": str(proxy_cert.p12),
        "listener.name.controller.ssl.keystore.password": PASSWORD,
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location": str(pki.truststore_pem),
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy, controller_overrides=controller)
    assert stack.proxy.service.upstream.connected
    assert stack.proxy_config.forwarding_principal == f"User:{proxy_cert.dn}"
    await trio.to_thread.run_sync(create_topic, client_config(stack.sasl_address, "admin"), "via-ssl-controller")
    # The controller maps the proxy's certificate to User:proxy, a super user, so it may forward.
    assert ("CreateTopics", "User:admin", "User:proxy", "topic:via-ssl-controller", 0) in changes(stack)


async def test_the_proxy_refuses_a_controller_certificate_for_another_host(nursery: Any, tmp_path: Path, pki: DevPki) -> None:
    other = generate_dev_pki(tmp_path / "other-pki", hosts=["kafka.example"], clients=[], password=PASSWORD)
    controller = {"listener.security.protocol.map": "CONTROLLER:SSL", **keystore(other, "listener.name.controller.")}
    proxy = {
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SSL",
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location": str(other.truststore_pem),
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy, controller_overrides=controller)
    # ssl.endpoint.identification.algorithm=https (the default): 127.0.0.1 is not in the certificate.
    assert not stack.proxy.service.upstream.connected


async def test_an_ssl_connection_that_sends_no_request_is_closed_after_preauth_idle(nursery: Any, tmp_path: Path, pki: DevPki) -> None:
    """Found by an outside check: a finished TLS handshake (client auth none) held the connection for
    connections.max.idle.ms. As on PLAINTEXT, the first request must come within connections.preauth.idle.ms."""
    proxy = {
        "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SSL,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        **keystore(pki, "listener.name.client."),
        "connections.preauth.idle.ms": "300",
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy)

    def probe() -> tuple[bool, bool]:
        addr = address(stack, "CLIENT")
        with tls_socket(addr, pki) as silent, tls_socket(addr, pki) as talking:
            assert api_versions_work(talking)
            time.sleep(1.0)
            return wire.is_closed(silent), api_versions_work(talking, correlation_id=8)

    assert await trio.to_thread.run_sync(probe) == (True, True)
    causes = [r["data"]["connection"]["cause"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "disconnected"]
    assert "idle" in causes
