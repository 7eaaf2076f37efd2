"""KIP-368 re-authentication through a running proxy and embedded controller, on loopback: a real client that
re-authenticates (confluent-kafka), raw clients that do not or that try to change who they are, and the proxy's own
links to a controller whose sessions expire."""

import socket
import time
from pathlib import Path
from typing import Any

import trio

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import EmbeddedStack, client_config, start_stack
from tests.integration.conftest import audit_records

# librdkafka re-authenticates shortly before the session's lifetime ends; the slack it leaves grows with the
# lifetime. At 1.5 s a loaded 2-core run once sent a request just after the session expired (the proxy closed the
# connection, as it must); twice the lifetime, with the pauses scaled to keep four lifetimes of work.
_LIFETIME_MS = 3000
_SESSION_EXPIRES = {"listener.name.client.plain.connections.max.reauth.ms": str(_LIFETIME_MS)}


def _metric(stack: EmbeddedStack, name: str, labels: dict[str, str] | None = None) -> float:
    value = stack.proxy.service.metrics.registry.get_sample_value(name, labels or {})
    return 0.0 if value is None else value


def _connection_events(directory: Path, stage: str) -> list[dict[str, Any]]:
    return [r for r in audit_records(directory) if r["data"]["methodName"] == "kafka.Connection" and r["data"]["stage"] == stage]


def _login(address: str, user: str = "alice") -> socket.socket:
    sock = wire.connect(address)
    assert wire.sasl_plain_login(sock, user, f"{user}-secret") == 0
    return sock


def _reauthenticate(sock: socket.socket, user: str, password: str) -> Any:
    handshake = wire.call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, correlation_id=10)
    assert int(handshake.error_code) == 0
    return wire.call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": wire.plain_token(user, password)}, correlation_id=11)


def _describe_cluster(sock: socket.socket, correlation_id: int) -> Any:
    return wire.call(sock, ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}, correlation_id=correlation_id)


async def test_confluent_kafka_re_authenticates_a_long_lived_connection(nursery: Any, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    stack = await start_stack(nursery, audit, proxy_overrides=_SESSION_EXPIRES)
    script_config = client_config(stack.sasl_address, "admin")

    def admin_work() -> list[str]:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(script_config)
        created = []
        # Four session lifetimes of admin work on the same connection.
        for index in range(12):
            name = f"reauth-{index}"
            admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10)[name].result(timeout=15)
            created.append(name)
            time.sleep(_LIFETIME_MS / 3000)
        return created

    created = await trio.to_thread.run_sync(admin_work)
    assert len(created) == 12
    reauthenticated = _connection_events(audit, "reauthenticated")
    assert len(reauthenticated) >= 2
    assert {r["data"]["authenticationInfo"]["principal"] for r in reauthenticated} == {"User:admin"}
    assert not [r for r in _connection_events(audit, "disconnected") if r["data"]["connection"]["cause"] == "session-expired"]
    assert _metric(stack, "envelope_proxy_reauthentications_total", {"listener": "CLIENT", "mechanism": "PLAIN", "result": "success"}) >= 2
    assert _metric(stack, "envelope_proxy_connections_expired_total", {"listener": "CLIENT"}) == 0


async def test_a_client_that_does_not_re_authenticate_is_closed_unanswered_on_its_next_request(nursery: Any, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    stack = await start_stack(nursery, audit, proxy_overrides={"listener.name.client.plain.connections.max.reauth.ms": "800"})

    def outlive_the_session() -> tuple[int, bool]:
        sock = _login(stack.sasl_address)
        first = int(_describe_cluster(sock, 3).error_code)
        time.sleep(1.2)
        sock.sendall(wire.encode_frame(wire.request(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}, 4)))
        return first, wire.is_closed(sock)

    first, closed = await trio.to_thread.run_sync(outlive_the_session)
    assert (first, closed) == (0, True)
    await trio.sleep(0.2)
    (disconnected,) = _connection_events(audit, "disconnected")
    assert disconnected["data"]["connection"]["cause"] == "session-expired"
    refused = [r["data"] for r in audit_records(audit) if r["data"]["stage"] == "refused"]
    assert [(r["methodName"], r["requestMetadata"]["correlationId"]) for r in refused] == [("kafka.DescribeCluster", 4)]
    assert "did not re-authenticate" in refused[0]["authorizationInfo"]["reason"]
    assert _metric(stack, "envelope_proxy_connections_expired_total", {"listener": "CLIENT"}) == 1


async def test_a_raw_re_authentication_renews_the_session_and_may_not_change_the_principal(nursery: Any, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    stack = await start_stack(nursery, audit, proxy_overrides=_SESSION_EXPIRES)

    def sessions() -> tuple[float, int, Any, bool]:
        sock = _login(stack.sasl_address)
        time.sleep(1.1)  # past the minimum interval, within the lifetime
        renewed = _reauthenticate(sock, "alice", "alice-secret")
        time.sleep(1.0)  # past the first session's end, within the renewed one
        served = int(_describe_cluster(sock, 12).error_code)
        time.sleep(1.1)
        changed = _reauthenticate(sock, "bob", "bob-secret")
        return renewed.session_lifetime.total_seconds(), served, changed, wire.is_closed(sock)

    lifetime, served, changed, closed = await trio.to_thread.run_sync(sessions)
    assert lifetime == _LIFETIME_MS / 1000
    assert served == 0
    assert (int(changed.error_code), changed.error_message) == (58, "Cannot change principals during re-authentication from User.alice: User.bob")
    assert closed
    await trio.sleep(0.2)
    assert len(_connection_events(audit, "reauthenticated")) == 1
    (failed,) = _connection_events(audit, "authentication-failed")
    assert failed["data"]["authorizationInfo"]["detail"].startswith("Cannot change principals")
    (disconnected,) = _connection_events(audit, "disconnected")
    assert disconnected["data"]["connection"]["cause"] == "authentication-failed"
    assert disconnected["data"]["connection"]["requests"] == 1  # DescribeCluster; the two re-authentications are not requests


async def test_sasl_frames_after_a_login_without_a_lifetime_are_answered_illegal_sasl_state(stack: EmbeddedStack) -> None:
    def ask() -> tuple[Any, Any, int]:
        sock = _login(stack.sasl_address)
        handshake = wire.call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, correlation_id=5)
        authenticate = wire.call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x00alice\x00alice-secret"}, correlation_id=6)
        return handshake, authenticate, int(_describe_cluster(sock, 7).error_code)

    handshake, authenticate, served = await trio.to_thread.run_sync(ask)
    assert (int(handshake.error_code), list(handshake.mechanisms)) == (34, [])
    assert (int(authenticate.error_code), authenticate.error_message) == (34, "SaslAuthenticate request received after successful authentication")
    assert served == 0  # the connection goes on, as on a Kafka broker


async def test_the_proxys_links_re_authenticate_to_a_controller_whose_sessions_expire(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(nursery, tmp_path / "audit", controller_overrides={"connections.max.reauth.ms": "1000"})

    def forward_for_a_while() -> list[int]:
        sock = _login(stack.sasl_address, "admin")
        codes = []
        for index in range(8):
            values = {"topics": [{"name": f"kept-{index}", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False}
            answer = wire.call(sock, ApiKey.CREATE_TOPICS, 5, values, correlation_id=20 + index)
            codes.append(int(answer.topics[0].error_code))
            time.sleep(0.5)
        return codes

    connected_before = _metric(stack, "envelope_proxy_upstream_connection_attempts_total", {"result": "connected"})
    codes = await trio.to_thread.run_sync(forward_for_a_while)
    assert codes == [0] * 8
    assert _metric(stack, "envelope_proxy_upstream_reauthentications_total") >= 2
    # Every request went over links that logged in again, not over new ones the controller's expiry forced.
    assert _metric(stack, "envelope_proxy_upstream_reconnects_total") == 0
    assert _metric(stack, "envelope_proxy_upstream_connection_attempts_total", {"result": "connected"}) <= connected_before + 1
