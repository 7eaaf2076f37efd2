"""Every kind of audit record the proxy writes, made by real traffic, matches the JSON Schema and says what happened."""

import socket
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from envelope.apis import ApiKey
from envelope.principal import Principal
from envelope.wrap import wrap
from envelope_proxy.embedded import DEFAULT_USERS, PROXY_PASSWORD, PROXY_USER, controller_properties, proxy_properties, start_proxy
from proxy.audit.cloudevents import CONNECTION_EVENT_TYPE, REQUEST_EVENT_TYPE
from proxy.config import parse_proxy_config
from tests.audit_records import assert_valid, records_under


def _create_topic(sock: socket.socket, name: str, correlation_id: int) -> int:
    return int(wire.create_topic(sock, name, correlation_id=correlation_id).error_code)


def traffic(client: str, plain: str) -> dict[str, Any]:
    """One of each: forwarded (allowed, denied), local answers, reads, request refusals, failed logins, refusals."""
    seen: dict[str, Any] = {}
    with wire.connect(client) as sock:  # admin does a bit of everything, then leaves (cause client)
        versions = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "audit-test", "client_software_version": "2.0"}, 1)
        assert int(versions.error_code) == 0
        assert int(wire.sasl_plain_authenticate(sock, "admin", DEFAULT_USERS["admin"]).error_code) == 0
        assert _create_topic(sock, "rec-allowed", 3) == 0
        wire.call(sock, ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}, 4)  # DescribeCluster: local
        wire.call(sock, ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}, 5)
        named = {"topics": [{"topic_id": None, "name": "rec-allowed"}], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        wire.call(sock, ApiKey.METADATA, 12, named, 6)  # Metadata with topics: a read
        seen["admin_requests"] = 4  # after login: CreateTopics, DescribeCluster, 2 x Metadata
    with wire.connect(client) as sock:
        assert int(wire.sasl_plain_authenticate(sock, "alice", DEFAULT_USERS["alice"]).error_code) == 0
        seen["alice_create"] = _create_topic(sock, "rec-denied", 3)
    with wire.connect(client) as sock:
        seen["wrong_password"] = int(wire.sasl_plain_authenticate(sock, "alice", "wrong").error_code)
        assert wire.is_closed(sock)
    with wire.connect(client) as sock:
        seen["unsupported_mechanism"] = wire.sasl_handshake(sock, "SCRAM-SHA-256")
        assert wire.is_closed(sock)
    with wire.connect(client) as sock:
        seen["privileged"] = int(wire.sasl_plain_authenticate(sock, PROXY_USER, PROXY_PASSWORD).error_code)
        assert wire.is_closed(sock)
    try:
        with wire.connect(client, source="127.0.0.5") as sock:
            seen["filtered_closed"] = wire.is_closed(sock)
    except OSError:
        seen["filtered_closed"] = True
    with wire.connect(plain) as sock:  # an Envelope from a client: request refused, connection closed (protocol-error)
        inner = wire.request(ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": "smuggled", **wire.ONE_PARTITION_TOPIC}], "timeout": 1000, "validate_only": False})
        sock.sendall(wire.encode_frame(wrap(inner, Principal("User", "admin"), "127.0.0.1", correlation_id=9, client_id="evil")))
        assert wire.is_closed(sock)
    with wire.connect(plain, timeout=30) as sock:  # says nothing: closed by connections.max.idle.ms
        seen["idle_closed"] = wire.is_closed(sock)
    return seen


async def test_every_kind_of_record_matches_the_schema_and_tells_the_story(nursery: Any, tmp_path: Path) -> None:
    controller = EmbeddedController(parse_controller_config(controller_properties()))
    (bound,) = await nursery.start(controller.run)
    props = {
        **proxy_properties(bound.port, tmp_path / "audit", users={**DEFAULT_USERS, PROXY_USER: PROXY_PASSWORD}),
        "privileged.principals": "User:proxy",
        "listener.name.client.security.ip.filter.rule.type": "deny",
        "listener.name.client.security.ip.filter.list": "127.0.0.5",
        "listener.name.plain.connections.max.idle.ms": "500",
    }
    run = await start_proxy(nursery, parse_proxy_config(props))
    running = run.running
    client = f"127.0.0.1:{running.listener('CLIENT').port}"
    plain = f"127.0.0.1:{running.listener('PLAIN').port}"

    seen = await trio.to_thread.run_sync(traffic, client, plain)
    assert seen["alice_create"] == ErrorCode.topic_authorization_failed and seen["wrong_password"] == ErrorCode.sasl_authentication_failed and seen["unsupported_mechanism"] == ErrorCode.unsupported_sasl_mechanism
    assert seen["privileged"] == ErrorCode.sasl_authentication_failed and seen["filtered_closed"] and seen["idle_closed"]

    # A logged-in connection still open at shutdown is closed by the drain.
    lingering = await trio.to_thread.run_sync(lambda: wire.connect(client))
    try:
        assert int((await trio.to_thread.run_sync(wire.sasl_plain_authenticate, lingering, "bob", DEFAULT_USERS["bob"])).error_code) == 0
        with trio.fail_after(30):
            while len(running.service.sessions) != 1:  # the other connections' sessions have ended
                await trio.sleep(0.02)
            await run.stop()
    finally:
        lingering.close()

    records = records_under(tmp_path / "audit")
    assert_valid(records)
    kinds = {(r["type"], r["data"]["stage"]) for r in records}
    expected_request = {(REQUEST_EVENT_TYPE, stage) for stage in ("intent", "outcome", "local", "read", "refused")}
    expected_connection = {
        (CONNECTION_EVENT_TYPE, stage) for stage in ("connected", "refused", "authenticated", "authentication-failed", "disconnected")
    }
    assert expected_request | expected_connection <= kinds

    events = [r["data"] for r in records if r["type"] == CONNECTION_EVENT_TYPE]
    by_connection: dict[str, list[str]] = {}
    for data in events:
        if data["requestMetadata"]["connectionId"] is not None:
            by_connection.setdefault(data["requestMetadata"]["connectionId"], []).append(data["stage"])
    # Every connection the proxy served opens with `connected` and ends with exactly one `disconnected`.
    assert all(stages[0] == "connected" and stages[-1] == "disconnected" and stages.count("disconnected") == 1 for stages in by_connection.values())

    causes = sorted(data["connection"]["cause"] for data in events if data["stage"] == "disconnected")
    assert set(causes) == {"client", "authentication-failed", "privileged-principal", "protocol-error", "idle", "shutdown"}
    assert causes.count("authentication-failed") == 2  # wrong password, unsupported mechanism

    failed = [data for data in events if data["stage"] == "authentication-failed"]
    wrong_password = next(data for data in failed if data["authenticationInfo"]["mechanism"] == "PLAIN")
    assert wrong_password["authenticationInfo"]["principal"] == "User:alice"
    assert wrong_password["result"] == {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": 58, "errors": []}
    assert wrong_password["authorizationInfo"] == {
        "decision": "DENIED",
        "reason": "authentication-failed",
        "detail": "Authentication failed: Invalid username or password",
    }
    unsupported = next(data for data in failed if data["authenticationInfo"]["mechanism"] == "SCRAM-SHA-256")
    assert unsupported["authenticationInfo"]["principal"] is None and unsupported["result"]["errorCode"] == ErrorCode.unsupported_sasl_mechanism

    admin_login = next(d for d in events if d["stage"] == "authenticated" and d["authenticationInfo"]["principal"] == "User:admin")
    assert admin_login["authenticationInfo"]["mechanism"] == "PLAIN"
    admin_close = next(
        d for d in events if d["stage"] == "disconnected" and d["requestMetadata"]["connectionId"] == admin_login["requestMetadata"]["connectionId"]
    )
    assert admin_close["connection"]["cause"] == "client"
    assert admin_close["connection"]["requests"] == seen["admin_requests"]
    assert admin_close["connection"]["durationMs"] >= 0
    assert admin_close["requestMetadata"]["clientSoftwareName"] == "audit-test"

    filtered = next(d for d in events if d["stage"] == "refused" and d["authorizationInfo"]["reason"] == "ip-filter")
    assert filtered["requestMetadata"]["connectionId"] is None  # refused at accept time: no connection was made
    assert all(d["requestMetadata"]["clientAddress"] != "127.0.0.5" for d in events if d["stage"] == "connected")

    privileged = next(d for d in events if d["stage"] == "refused" and d["authorizationInfo"]["reason"] == "privileged-principal")
    assert privileged["requestMetadata"]["connectionId"] in by_connection
