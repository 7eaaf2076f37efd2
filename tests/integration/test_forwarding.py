"""Real clients through the proxy to the embedded controller, on loopback."""

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from apiversions import intersect
from controller.topic_rules import broker_ids_of
from devkit import wire
from envelope.apis import FORWARDABLE, ApiKey
from envelope.principal import Principal
from envelope.wrap import wrap
from envelope_proxy.embedded import DEFAULT_USERS, EmbeddedStack, client_config
from tests.integration.conftest import audit_records

TIMEOUT = 30


def _confluent_admin(stack: EmbeddedStack, user: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(client_config(stack.sasl_address, user))


def _grant_create_and_delete(stack: EmbeddedStack, principal: str) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    # Kafka's semantics: CREATE on the cluster does not imply DELETE on topics.
    bindings = [
        AclBinding(
            ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, principal, "*", AclOperation.CREATE, AclPermissionType.ALLOW
        ),
        AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, principal, "*", AclOperation.DELETE, AclPermissionType.ALLOW),
    ]
    admin = _confluent_admin(stack, "admin")  # keep the handle alive until the futures resolve
    for future in admin.create_acls(bindings).values():
        future.result(timeout=TIMEOUT)


async def test_confluent_kafka_creates_and_deletes_as_alice_and_bob_is_refused(stack: EmbeddedStack, tmp_path: Path) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    def work() -> str:
        _grant_create_and_delete(stack, "User:alice")
        alice = _confluent_admin(stack, "alice")
        for future in alice.create_topics([NewTopic("ck-orders", 2, 1)]).values():
            future.result(timeout=TIMEOUT)
        assert "ck-orders" in stack.controller.image.topics
        for future in alice.delete_topics(["ck-orders"]).values():
            future.result(timeout=TIMEOUT)
        bob = _confluent_admin(stack, "bob")
        (future,) = bob.create_topics([NewTopic("ck-bobs", 1, 1)]).values()
        with pytest.raises(KafkaException) as refused:
            future.result(timeout=TIMEOUT)
        return str(refused.value.args[0].name())

    bob_error = await trio.to_thread.run_sync(work)
    assert bob_error == "TOPIC_AUTHORIZATION_FAILED"
    image = stack.controller.image
    assert "ck-orders" not in image.topics and "ck-bobs" not in image.topics
    seen = [(c.api, c.principal, c.client_address, c.forwarded_by, c.resource, c.error_code) for c in image.changes]
    assert ("CreateTopics", "User:alice", "127.0.0.1", "User:proxy", "topic:ck-orders", 0) in seen
    assert ("DeleteTopics", "User:alice", "127.0.0.1", "User:proxy", "topic:ck-orders", 0) in seen
    assert ("CreateTopics", "User:bob", "127.0.0.1", "User:proxy", "topic:ck-bobs", 29) in seen

    records = audit_records(tmp_path / "audit")
    creates = [r for r in records if r["data"]["methodName"] == "kafka.CreateTopics" and r["subject"] == "topic:ck-orders"]
    assert [r["data"]["stage"] for r in creates] == ["intent", "outcome"]
    assert creates[0]["data"]["requestId"] == creates[1]["data"]["requestId"]
    assert creates[1]["data"]["result"]["status"] == "SUCCESS"
    assert creates[0]["data"]["authenticationInfo"] == {
        "principal": "User:alice",
        "mechanism": "PLAIN",
        "listener": "CLIENT",
        "securityProtocol": "SASL_PLAINTEXT",
    }
    assert creates[0]["data"]["forwardingPrincipal"] == "User:proxy"
    bobs = [r for r in records if r["subject"] == "topic:ck-bobs" and r["data"]["stage"] == "outcome"]
    assert bobs[0]["data"]["result"]["status"] == "FAILURE"
    assert bobs[0]["data"]["result"]["errors"][0]["errorName"] == "TOPIC_AUTHORIZATION_FAILED"


async def test_kafka_python_creates_and_deletes_through_the_proxy(stack: EmbeddedStack) -> None:
    from kafka.admin import KafkaAdminClient

    def client(user: str) -> Any:
        return KafkaAdminClient(
            bootstrap_servers=stack.sasl_address,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=user,
            sasl_plain_password=f"{user}-secret",
            request_timeout_ms=TIMEOUT * 1000,
        )

    def work() -> tuple[Any, Any]:
        _grant_create_and_delete(stack, "User:alice")
        alice = client("alice")
        try:
            created = alice.create_topics({"kp-topic": {"num_partitions": 3, "replication_factor": 1}})
            deleted = alice.delete_topics(["kp-topic"])
        finally:
            alice.close()
        bob = client("bob")
        try:
            from kafka.errors import TopicAuthorizationFailedError

            with pytest.raises(TopicAuthorizationFailedError):
                bob.create_topics({"kp-bob": {"num_partitions": 1, "replication_factor": 1}})
        finally:
            bob.close()
        return created, deleted

    await trio.to_thread.run_sync(work)
    seen = [(c.api, c.principal, c.client_address, c.resource, c.error_code) for c in stack.controller.image.changes]
    assert ("CreateTopics", "User:alice", "127.0.0.1", "topic:kp-topic", 0) in seen
    assert ("DeleteTopics", "User:alice", "127.0.0.1", "topic:kp-topic", 0) in seen
    assert ("CreateTopics", "User:bob", "127.0.0.1", "topic:kp-bob", 29) in seen
    assert "kp-topic" not in stack.controller.image.topics


async def test_an_envelope_from_a_client_is_refused_and_audited(stack: EmbeddedStack, tmp_path: Path) -> None:
    inner = wire.request(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": "smuggled", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 1000,
            "validate_only": False,
        },
    )
    envelope = wrap(inner, Principal("User", "admin"), "127.0.0.1", correlation_id=9, client_id="evil")

    def send() -> bool:
        with wire.connect(stack.plaintext_address) as sock:
            sock.sendall(wire.encode_frame(envelope))
            return wire.is_closed(sock)

    assert await trio.to_thread.run_sync(send)
    assert "smuggled" not in stack.controller.image.topics
    refused = [r for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert refused and refused[-1]["data"]["methodName"] == "kafka.Envelope"
    assert refused[-1]["data"]["result"]["status"] == "REFUSED"


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(bytes.fromhex("16030100c4010000c00303") + b"\x00" * 40, id="tls-client-hello"),
        pytest.param(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", id="http-get"),
    ],
)
async def test_garbage_on_a_plaintext_listener_closes_only_that_connection(stack: EmbeddedStack, garbage: bytes) -> None:
    def probe() -> tuple[bool, int]:
        with wire.connect(stack.plaintext_address) as good, wire.connect(stack.plaintext_address) as bad:
            bad.sendall(garbage)
            closed = wire.is_closed(bad)
            answer = wire.call(good, ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"}, correlation_id=5)
            return closed, int(answer.error_code)

    closed, error = await trio.to_thread.run_sync(probe)
    assert closed
    assert error == 0


async def test_api_versions_are_the_intersection_with_the_controller(stack: EmbeddedStack) -> None:
    def fetch() -> dict[int, tuple[int, int]]:
        with wire.connect(stack.plaintext_address) as sock:
            body = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"})
            return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}

    advertised = await trio.to_thread.run_sync(fetch)
    expected = intersect(stack.proxy.service.own, stack.controller.ranges, FORWARDABLE)
    assert advertised == {k: (r.min, r.max) for k, r in expected.items()}
    assert 58 not in advertised  # the proxy never offers Envelope to clients
    assert advertised[19] == (max(2, stack.controller.ranges[19].min), stack.controller.ranges[19].max)


async def test_every_answer_names_the_clusters_brokers_at_the_proxy(stack: EmbeddedStack) -> None:
    """One broker view (docs/clients.md): Metadata with no topic, with all, with names, and DescribeCluster list the
    same brokers, the cluster's, each at the proxy's address, and name one of them the controller."""
    no_topic = {"allow_auto_topic_creation": False, "include_topic_authorized_operations": False}

    def fetch() -> list[Any]:
        with wire.connect(stack.sasl_address) as sock:
            assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
            answers = [wire.call(sock, ApiKey.METADATA, 12, {**no_topic, "topics": topics}) for topics in ([], None, [{"name": "absent", "topic_id": None}])]
            cluster = wire.call(sock, ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 1})
        return [*answers, cluster]

    *metadata, cluster = await trio.to_thread.run_sync(fetch)
    port = stack.proxy.listener("CLIENT").port
    expected = [(broker, "127.0.0.1", port) for broker in broker_ids_of(stack.controller.config.broker_count)]
    for body in metadata:
        assert [(int(b.node_id), b.host, int(b.port)) for b in body.brokers] == expected
        assert int(body.controller_id) == expected[0][0]
    assert [(int(b.broker_id), b.host, int(b.port)) for b in cluster.brokers] == expected
    assert int(cluster.controller_id) == expected[0][0]


async def test_kcat_lists_the_proxy_as_the_broker(stack: EmbeddedStack) -> None:
    import os

    kcat = shutil.which("kcat")
    if kcat is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kcat is required in CI (apt-get install kcat)")
        pytest.skip("kcat not installed")
    result = await trio.to_thread.run_sync(
        lambda: subprocess.run([kcat, "-L", "-b", stack.plaintext_address, "-m", "10"], capture_output=True, text=True, timeout=60)
    )
    assert result.returncode == 0, result.stderr
    port = stack.proxy.listener("PLAIN").port
    assert f"broker 1 at 127.0.0.1:{port} (controller)" in result.stdout


async def test_a_wrong_password_is_refused_and_the_connection_closed(stack: EmbeddedStack) -> None:
    def login() -> tuple[int, bool]:
        with wire.connect(stack.sasl_address) as sock:
            code = wire.sasl_plain_login(sock, "alice", "wrong")
            return code, wire.is_closed(sock)

    code, closed = await trio.to_thread.run_sync(login)
    assert code == ErrorCode.sasl_authentication_failed
    assert closed


async def test_requests_before_authentication_close_the_connection(stack: EmbeddedStack) -> None:
    def send() -> bool:
        with wire.connect(stack.sasl_address) as sock:
            sock.sendall(wire.encode_frame(wire.request(ApiKey.CREATE_TOPICS, 7, {"topics": [], "timeout": 1000, "validate_only": False})))
            return wire.is_closed(sock)

    assert await trio.to_thread.run_sync(send)


async def test_an_api_the_proxy_does_not_serve_is_refused_and_audited(stack: EmbeddedStack, tmp_path: Path) -> None:
    # FindCoordinator v4: a data-plane API a broker would answer, never the proxy.
    payload = wire.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["group-1"]})

    def send() -> bool:
        with wire.connect(stack.plaintext_address) as sock:
            sock.sendall(wire.encode_frame(payload))
            return wire.is_closed(sock)

    assert await trio.to_thread.run_sync(send)
    refused = [r for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert [r["data"]["methodName"] for r in refused] == ["kafka.FindCoordinator"]
    assert refused[0]["data"]["authenticationInfo"]["principal"] == "User:ANONYMOUS"
    assert refused[0]["data"]["authorizationInfo"]["decision"] == "DENIED"


@pytest.mark.parametrize(("password", "accepted"), [("alice-secret", True), ("wrong", False)])
async def test_sasl_handshake_v0_takes_a_raw_plain_token(stack: EmbeddedStack, password: str, accepted: bool) -> None:
    def login() -> tuple[bytes | None, bool]:
        with wire.connect(stack.sasl_address) as sock:
            handshake = wire.call(sock, ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
            assert int(handshake.error_code) == 0
            sock.sendall(wire.encode_frame(b"\x00alice\x00" + password.encode()))
            if not accepted:
                return None, wire.is_closed(sock)
            reply = wire.read_frame(sock)
            answer = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=3)
            return reply, int(answer.error_code) == 0

    reply, outcome = await trio.to_thread.run_sync(login)
    assert outcome  # accepted: the session serves requests; refused: the connection is closed
    assert reply == (b"" if accepted else None)
