"""SASL/SCRAM end to end: real clients through the proxy, the proxy's own SCRAM login, and raw-wire failures."""

import socket
import struct
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import PROXY_PASSWORD, PROXY_USER, EmbeddedStack, controller_properties, start_stack
from proxy.net.addresses import ControllerAddress
from proxy.net.sasl.credentials import add_user
from proxy.net.sasl.jaas import SCRAM_LOGIN_MODULE
from proxy.net.sasl.mechanisms import UsernamePasswordLogin
from proxy.net.sasl.scram import generic_failure_message
from proxy.net.sasl.scram_client import ScramClient
from proxy.net.sasl.scram_mechanism import ScramLogin
from proxy.upstream.pool import ControllerPool
from proxy.upstream.settings import UpstreamSettings
from tests.integration.conftest import audit_records

TIMEOUT = 30
SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"
USERS = {"admin": "admin-scram", "alice": "alice-scram", "bob": "bob-scram"}


def _credentials(path: Path, users: dict[str, str], mechanisms: list[str]) -> Path:
    for user, password in users.items():
        add_user(path, user, password, mechanisms)
    return path


def _scram_upstream(tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Controller and proxy properties for the proxy's SCRAM-SHA-256 login to the controller."""
    controller_file = _credentials(tmp_path / "controller-scram.json", {PROXY_USER: PROXY_PASSWORD}, [SHA256])
    controller = {"sasl.enabled.mechanisms": SHA256, "sasl.scram.credentials.file": str(controller_file)}
    proxy = {
        "sasl.mechanism.controller.protocol": SHA256,
        "listener.name.controller.scram-sha-256.sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="{PROXY_USER}" password="{PROXY_PASSWORD}";',
    }
    return controller, proxy


@pytest.fixture
async def scram_stack(nursery: Any, tmp_path: Path) -> EmbeddedStack:
    clients = _credentials(tmp_path / "clients-scram.json", USERS, [SHA256, SHA512])
    add_user(clients, "carol", "carol-scram", [SHA512])  # no SHA-256 credential
    controller, proxy = _scram_upstream(tmp_path)
    proxy.update(
        {
            "listener.name.client.sasl.enabled.mechanisms": f"{SHA256},{SHA512}",
            "listener.name.client.sasl.scram.credentials.file": str(clients),
            "listener.name.client.scram-sha-512.sasl.jaas.config": f"{SCRAM_LOGIN_MODULE} required;",
        }
    )
    return await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy, controller_overrides=controller)


def _grant_create(stack: EmbeddedStack, principal: str) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    admin = AdminClient(_confluent_config(stack, "admin", SHA512))
    binding = AclBinding(
        ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, principal, "*", AclOperation.CREATE, AclPermissionType.ALLOW
    )
    for future in admin.create_acls([binding]).values():
        future.result(timeout=TIMEOUT)


def _confluent_config(stack: EmbeddedStack, user: str, mechanism: str) -> dict[str, str]:
    return {
        "bootstrap.servers": stack.sasl_address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


async def test_confluent_kafka_creates_a_topic_with_scram_sha_512(scram_stack: EmbeddedStack, tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    def work() -> None:
        _grant_create(scram_stack, "User:alice")
        alice = AdminClient(_confluent_config(scram_stack, "alice", SHA512))
        for future in alice.create_topics([NewTopic("scram-512", 2, 1)]).values():
            future.result(timeout=TIMEOUT)

    await trio.to_thread.run_sync(work)
    seen = [(c.api, c.principal, c.forwarded_by, c.resource, c.error_code) for c in scram_stack.controller.image.changes]
    assert ("CreateTopics", "User:alice", "User:proxy", "topic:scram-512", 0) in seen
    intent = next(r for r in audit_records(tmp_path / "audit") if r["subject"] == "topic:scram-512" and r["data"]["stage"] == "intent")
    assert intent["data"]["authenticationInfo"] == {
        "principal": "User:alice",
        "mechanism": SHA512,
        "listener": "CLIENT",
        "securityProtocol": "SASL_PLAINTEXT",
    }


async def test_kafka_python_creates_a_topic_with_scram_sha_256(scram_stack: EmbeddedStack) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    def work() -> None:
        _grant_create(scram_stack, "User:bob")
        bob = KafkaAdminClient(
            bootstrap_servers=scram_stack.sasl_address,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=SHA256,
            sasl_plain_username="bob",
            sasl_plain_password=USERS["bob"],
            request_timeout_ms=TIMEOUT * 1000,
        )
        try:
            bob.create_topics([NewTopic("scram-256", 1, 1)])
        finally:
            bob.close()

    await trio.to_thread.run_sync(work)
    seen = [(c.api, c.principal, c.forwarded_by, c.resource, c.error_code) for c in scram_stack.controller.image.changes]
    assert ("CreateTopics", "User:bob", "User:proxy", "topic:scram-256", 0) in seen


async def test_the_proxy_logs_in_to_the_controller_with_scram(scram_stack: EmbeddedStack) -> None:
    upstream = scram_stack.proxy.service.upstream
    assert upstream.settings.sasl_mechanism == SHA256
    assert upstream.connected
    assert scram_stack.controller.config.listeners[0].sasl_mechanisms == (SHA256,)


@pytest.mark.parametrize(("password", "connects"), [(PROXY_PASSWORD, True), ("wrong", False)])
async def test_the_upstream_scram_login_checks_the_password(nursery: Any, tmp_path: Path, password: str, connects: bool) -> None:
    controller_overrides, _ = _scram_upstream(tmp_path)
    controller = EmbeddedController(parse_controller_config({**controller_properties(), **controller_overrides}))
    (bound,) = await nursery.start(controller.run)
    settings = UpstreamSettings(
        (ControllerAddress("127.0.0.1", bound.port),), "SASL_PLAINTEXT", login=UsernamePasswordLogin(SHA256, PROXY_USER, password, ScramLogin), backoff_initial=0.05
    )
    upstream = ControllerPool(settings)
    await nursery.start(upstream.run)
    with trio.move_on_after(2):
        while not upstream.connected:
            await trio.sleep(0.02)
    assert upstream.connected is connects


# -- raw wire: the Kafka error and the connection's fate --------------------------------


def _scram_login(sock: socket.socket, mechanism: str, user: str, password: str) -> tuple[int, str | None, bytes]:
    """(error code, error message, the client-final token sent) of a full SCRAM exchange."""
    assert wire.sasl_handshake(sock, mechanism) == 0
    client = ScramClient(mechanism, user, password)
    first = wire.sasl_authenticate(sock, client.first(), 2)
    if int(first.error_code) != 0:
        return int(first.error_code), first.error_message, b""
    final = client.final(bytes(first.auth_bytes))
    answer = wire.sasl_authenticate(sock, final, 3)
    if int(answer.error_code) == 0:
        client.verify(bytes(answer.auth_bytes))
    return int(answer.error_code), answer.error_message, final


def _works(sock: socket.socket) -> bool:
    body = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=99)
    return int(body.error_code) == 0


def _wrong_password(sock: socket.socket) -> tuple[int | None, str | None]:
    code, message, _ = _scram_login(sock, SHA256, "alice", "wrong")
    return code, message


def _unknown_user(sock: socket.socket) -> tuple[int | None, str | None]:
    code, message, _ = _scram_login(sock, SHA512, "nobody", "x")
    return code, message


def _missing_mechanism_credential(sock: socket.socket) -> tuple[int | None, str | None]:
    code, message, _ = _scram_login(sock, SHA256, "carol", "carol-scram")  # carol only has SCRAM-SHA-512
    return code, message


def _disabled_mechanism(sock: socket.socket) -> tuple[int | None, str | None]:
    return wire.sasl_handshake(sock, "PLAIN"), None


def _frame_over_the_pre_auth_cap(sock: socket.socket) -> tuple[int | None, str | None]:
    sock.sendall(struct.pack(">i", 524288 + 1) + b"\x00" * 64)
    return None, None


@pytest.mark.parametrize(
    ("attempt", "code", "message"),
    [
        pytest.param(_wrong_password, 58, generic_failure_message(SHA256), id="wrong-password"),
        pytest.param(_unknown_user, 58, generic_failure_message(SHA512), id="unknown-user"),
        pytest.param(_missing_mechanism_credential, 58, generic_failure_message(SHA256), id="user-without-this-mechanism"),
        pytest.param(_disabled_mechanism, 33, None, id="mechanism-not-enabled"),
        pytest.param(_frame_over_the_pre_auth_cap, None, None, id="frame-over-pre-auth-cap"),
    ],
)
async def test_failed_logins_get_kafkas_error_and_close_only_their_connection(
    scram_stack: EmbeddedStack, attempt: Any, code: int | None, message: str | None
) -> None:
    def probe() -> tuple[int | None, str | None, bool, bool]:
        with wire.connect(scram_stack.sasl_address) as healthy, wire.connect(scram_stack.sasl_address) as bad:
            assert _scram_login(healthy, SHA512, "alice", USERS["alice"])[0] == 0
            got_code, got_message = attempt(bad)
            closed = wire.is_closed(bad)
            return got_code, got_message, closed, _works(healthy)

    got_code, got_message, closed, healthy_works = await trio.to_thread.run_sync(probe)
    assert (got_code, got_message) == (code, message)
    assert closed
    assert healthy_works


async def test_a_replayed_client_final_is_refused(scram_stack: EmbeddedStack) -> None:
    def replay() -> tuple[int, str | None, bool]:
        with wire.connect(scram_stack.sasl_address) as first:
            code, _, final = _scram_login(first, SHA256, "alice", USERS["alice"])
            assert code == 0
        with wire.connect(scram_stack.sasl_address) as second:
            assert wire.sasl_handshake(second, SHA256) == 0
            client = ScramClient(SHA256, "alice", USERS["alice"])
            assert int(wire.sasl_authenticate(second, client.first(), 2).error_code) == 0
            answer = wire.sasl_authenticate(second, final, 3)  # the proof of the earlier exchange, for another server nonce
            return int(answer.error_code), answer.error_message, wire.is_closed(second)

    code, message, closed = await trio.to_thread.run_sync(replay)
    assert (code, message, closed) == (58, generic_failure_message(SHA256), True)


async def test_scram_over_sasl_handshake_v0_raw_tokens(scram_stack: EmbeddedStack) -> None:
    def login() -> bool:
        with wire.connect(scram_stack.sasl_address) as sock:
            assert int(wire.call(sock, ApiKey.SASL_HANDSHAKE, 0, {"mechanism": SHA512}).error_code) == 0
            client = ScramClient(SHA512, "alice", USERS["alice"])
            sock.sendall(wire.encode_frame(client.first()))
            sock.sendall(wire.encode_frame(client.final(wire.read_frame(sock))))
            client.verify(wire.read_frame(sock))
            return _works(sock)

    assert await trio.to_thread.run_sync(login)


async def test_a_user_added_while_running_can_log_in_without_a_restart(scram_stack: EmbeddedStack, tmp_path: Path) -> None:
    def login(user: str, password: str) -> int:
        with wire.connect(scram_stack.sasl_address) as sock:
            return _scram_login(sock, SHA256, user, password)[0]

    assert await trio.to_thread.run_sync(login, "dave", "dave-scram") == ErrorCode.sasl_authentication_failed
    add_user(tmp_path / "clients-scram.json", "dave", "dave-scram", [SHA256])
    assert await trio.to_thread.run_sync(login, "dave", "dave-scram") == 0
