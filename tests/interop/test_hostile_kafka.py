"""Hostile bytes, sent to a real Kafka 4.3.1 broker listener and to the proxy in front of that node: both must behave alike.

Each case is scripted once and played against two addresses on loopback:

* the real node's BROKER listener (SASL_PLAINTEXT/PLAIN), directly;
* the proxy's CLIENT listener (SASL_PLAINTEXT/PLAIN), the proxy forwarding to
  the same node's controller as the interop fixtures set it up.

Kafka's behaviour is the ground truth: every table row says what Kafka was seen
doing (an answer and its error codes, or the connection closed), the test
asserts that first, and then that the proxy does exactly the same.

Hostile frames are valid requests (wire.request) with bytes spliced in at
computed offsets: the body starts at peek_request_header(frame).header_size.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from authz.admin_apis import response_errors
from devkit import wire
from devkit.kafka_node import KafkaNode
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from envelope.frames import encode_frame
from envelope.header import peek_request_header
from envelope.varints import write_uvarint
from tests.audit_records import records_under
from tests.interop.upstreams import Target, kafka_target, poll

pytestmark = pytest.mark.interop

READ_TIMEOUT = 15.0
"""How long to wait for an answer or a close; Kafka closes a malformed request's connection at once."""
AUDIT_TIMEOUT = 30.0
USER, PASSWORD = "admin", "admin-secret"  # a super user on the node and at the proxy's edge

UNKNOWN_TAG = bytes([0x01, 0x09, 0x01, 0x2A])
"""A tagged-field section with one field: tag 9 (defined nowhere), 1 byte of data."""

CLOSED = "closed"
SILENT = "silent"  # no answer and no close within READ_TIMEOUT


# --------------------------------------------------------------------------- frames


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topics(name: str) -> bytes:
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    return wire.request(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout": 30000, "validate_only": False})


def delete_topics(name: str) -> bytes:
    return wire.request(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": None}], "timeout": 30000})


def acl_creation(topic: str, principal: str) -> dict[str, Any]:
    # TOPIC (2), LITERAL (3), READ (3), ALLOW (3)
    return {
        "resource_type": 2,
        "resource_name": topic,
        "resource_pattern_type": 3,
        "principal": principal,
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }


def create_acls(topic: str, principal: str) -> bytes:
    return wire.request(ApiKey.CREATE_ACLS, 3, {"creations": [acl_creation(topic, principal)]})


def api_versions(name: str = "hostile-test", version: str = "1") -> bytes:
    return wire.request(ApiKey.API_VERSIONS, 3, {"client_software_name": name, "client_software_version": version})


def with_first_count(frame: bytes, count: bytes) -> bytes:
    """`frame` whose body's first field, a one-entry compact array (count byte 0x02), gets `count` instead."""
    body = peek_request_header(frame).header_size
    assert frame[body] == 0x02, f"expected a one-entry compact array at offset {body}, got {frame[body]:#04x}"
    return frame[:body] + count + frame[body + 1 :]


def with_tag_at(frame: bytes, offset: int) -> bytes:
    """`frame` whose empty tagged-field section at `offset` (from the end when negative) carries UNKNOWN_TAG."""
    index = offset % len(frame)
    assert frame[index] == 0x00, f"expected an empty tagged-field section at {index}, got {frame[index]:#04x}"
    return frame[:index] + UNKNOWN_TAG + frame[index + 1 :]


# CreateTopics v7 body: topics[ name, num_partitions, replication_factor, assignments, configs, TAGS ], timeout_ms(4), validate_only(1), TAGS
CREATE_TOPICS_TOP_TAGS, CREATE_TOPICS_TOPIC_TAGS = -1, -7
# CreateAcls v3 body: creations[ ..., permission_type(1), TAGS ], TAGS
CREATE_ACLS_CREATION_TAGS = -2


# --------------------------------------------------------------------------- scripted connections


@dataclass(frozen=True)
class Send:
    api_key: int
    version: int
    frame: bytes  # a whole request (header + body), without the size prefix


def login_steps(user: str = USER, password: str = PASSWORD) -> list[Send]:
    token = wire.plain_token(user, password)
    return [
        Send(ApiKey.SASL_HANDSHAKE, 1, wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})),
        Send(ApiKey.SASL_AUTHENTICATE, 2, wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})),
    ]


LOGGED_IN = [("answer", 0), ("answer", 0)]
"""What login_steps() yields when the login succeeds."""


def summary(step: Send, frame: bytes) -> tuple[Any, ...]:
    """An answer as the table compares it: error codes (ApiVersions: also whether api_keys is empty)."""
    correlation_id = peek_request_header(step.frame).correlation_id
    try:
        received, body = decode_response_body(step.api_key, step.version, frame)
    except Exception as exc:  # the other side answered something we cannot read: show it
        return ("undecodable", type(exc).__name__, frame[:64].hex(" "))
    assert received == correlation_id, f"answer to correlation id {received}, sent {correlation_id}"
    if step.api_key == ApiKey.API_VERSIONS:
        return ("answer", int(body.error_code), "api_keys" if body.api_keys else "no api_keys")
    top, items = response_errors(step.api_key, body)
    return ("answer", top, *(int(item.error_code) for item in items))


def play(address: str, steps: list[Send]) -> list[Any]:
    """Send each step on one fresh connection and note what came back; stops at the first close or silence."""
    seen: list[Any] = []
    with wire.connect(address, timeout=READ_TIMEOUT) as sock:
        for step in steps:
            try:
                sock.sendall(encode_frame(step.frame))
                frame = wire.read_frame(sock)
            except TimeoutError:
                seen.append(SILENT)
                break
            except ConnectionError:  # EOF before a whole frame, reset, broken pipe
                seen.append(CLOSED)
                break
            seen.append(summary(step, frame))
    return seen


def answers_a_fresh_connection(address: str) -> list[Any]:
    """Login as admin and one valid ApiVersions: what a healthy endpoint answers."""
    return play(address, [*login_steps(), Send(ApiKey.API_VERSIONS, 3, api_versions())])


HEALTHY = [*LOGGED_IN, ("answer", 0, "api_keys")]


async def both(kafka: str, proxy: str, steps: list[Send]) -> tuple[list[Any], list[Any]]:
    """The same script against Kafka, then against the proxy (in threads: the proxy runs in this trio loop)."""
    direct = await trio.to_thread.run_sync(play, kafka, steps)
    proxied = await trio.to_thread.run_sync(play, proxy, steps)
    return direct, proxied


@pytest.fixture
async def proxy(kafka_node: KafkaNode, nursery: Any, tmp_path: Path) -> Target:
    """The proxy in front of the session's real node, as the conformance suite runs it."""
    return await kafka_target(nursery, kafka_node, tmp_path / "audit")


# --------------------------------------------------------------------------- 1. array counts


HOSTILE_COUNTS = {
    # a compact array's count is length + 1, an unsigned varint; Java reads it into an int
    "ff ff ff ff 0f (2^32-1: int -1, length -2)": bytes.fromhex("ffffffff0f"),
    "ff ff ff ff 07 (2^31-1: length 2^31-2)": bytes.fromhex("ffffffff07"),
    "2^20 entries (more than the frame holds)": write_uvarint(2**20 + 1),
    "null (compact 0) for a non-nullable array": b"\x00",
}
HOSTILE_REQUESTS: dict[str, tuple[int, int, Callable[[str], bytes]]] = {
    "CreateTopics v7 topics": (ApiKey.CREATE_TOPICS, 7, create_topics),
    "DeleteTopics v6 topics": (ApiKey.DELETE_TOPICS, 6, delete_topics),
    "CreateAcls v3 creations": (ApiKey.CREATE_ACLS, 3, lambda name: create_acls(name, f"User:{name}")),
}


@pytest.mark.parametrize("count", list(HOSTILE_COUNTS.values()), ids=list(HOSTILE_COUNTS))
@pytest.mark.parametrize("request_kind", list(HOSTILE_REQUESTS))
async def test_a_hostile_array_count_after_login_closes_the_connection(
    kafka_node: KafkaNode, proxy: Target, request_kind: str, count: bytes
) -> None:
    api_key, version, build = HOSTILE_REQUESTS[request_kind]
    hostile = Send(api_key, version, with_first_count(build(unique("hostile-count")), count))
    direct, proxied = await both(kafka_node.broker_address, proxy.address, [*login_steps(), hostile])

    assert direct == [*LOGGED_IN, CLOSED], f"Kafka: {direct}"  # observed on Kafka 4.3.1: closed, no answer
    assert proxied == direct, f"proxy {proxied} != Kafka {direct}"
    assert await trio.to_thread.run_sync(answers_a_fresh_connection, proxy.address) == HEALTHY, "the proxy must stay alive"
    assert await trio.to_thread.run_sync(answers_a_fresh_connection, kafka_node.broker_address) == HEALTHY


# --------------------------------------------------------------------------- 2. unknown tagged fields


def _stages(audit_dir: Path, subject: str) -> dict[str, dict[str, Any]]:
    return {r["data"]["stage"]: r for r in records_under(audit_dir) if r["subject"] == subject}


@pytest.mark.parametrize(
    "offset", [CREATE_TOPICS_TOP_TAGS, CREATE_TOPICS_TOPIC_TAGS], ids=["tag at the top level", "tag inside the topic entry"]
)
async def test_an_unknown_tag_in_create_topics_is_skipped_and_the_topic_created(
    kafka_node: KafkaNode, proxy: Target, tmp_path: Path, offset: int
) -> None:
    from confluent_kafka.admin import AdminClient

    names = {"kafka": unique("hostile-tag"), "proxy": unique("hostile-tag")}
    sent = {side: Send(ApiKey.CREATE_TOPICS, 7, with_tag_at(create_topics(name), offset)) for side, name in names.items()}
    direct = await trio.to_thread.run_sync(play, kafka_node.broker_address, [*login_steps(), sent["kafka"]])
    proxied = await trio.to_thread.run_sync(play, proxy.address, [*login_steps(), sent["proxy"]])

    assert direct == [*LOGGED_IN, ("answer", 0, 0)], f"Kafka: {direct}"  # observed: error 0, topic created
    assert proxied == direct, f"proxy {proxied} != Kafka {direct}"
    for name in names.values():
        assert await trio.to_thread.run_sync(proxy.wait_for_partitions, name, 1) == 1, f"{name} was not created"

    subject = f"topic:{names['proxy']}"
    stages = await trio.to_thread.run_sync(
        poll, lambda: _stages(tmp_path / "audit", subject), lambda seen: {"intent", "outcome"} <= set(seen), AUDIT_TIMEOUT
    )
    assert {"intent", "outcome"} <= set(stages), f"audit records for {subject}: {sorted(stages)}"
    assert stages["intent"]["data"]["methodName"] == stages["outcome"]["data"]["methodName"] == "kafka.CreateTopics"
    assert stages["outcome"]["data"]["result"]["status"] == "SUCCESS", stages["outcome"]["data"]["result"]

    def clean_up() -> None:
        admin = AdminClient(kafka_node.client_config("admin"))
        for future in admin.delete_topics(list(names.values())).values():
            future.result(timeout=60)

    await trio.to_thread.run_sync(clean_up)


async def test_an_unknown_tag_in_a_create_acls_creation_is_skipped(kafka_node: KafkaNode, proxy: Target) -> None:
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    topics = {"kafka": unique("hostile-acl"), "proxy": unique("hostile-acl")}
    sent = {side: Send(ApiKey.CREATE_ACLS, 3, with_tag_at(create_acls(t, f"User:{t}"), CREATE_ACLS_CREATION_TAGS)) for side, t in topics.items()}
    direct = await trio.to_thread.run_sync(play, kafka_node.broker_address, [*login_steps(), sent["kafka"]])
    proxied = await trio.to_thread.run_sync(play, proxy.address, [*login_steps(), sent["proxy"]])

    assert direct == [*LOGGED_IN, ("answer", 0, 0)], f"Kafka: {direct}"  # observed: error 0, the ACL exists
    assert proxied == direct, f"proxy {proxied} != Kafka {direct}"

    def acls(topic: str) -> Any:
        admin = AdminClient(kafka_node.client_config("admin"))
        wanted = AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY, AclPermissionType.ANY
        )
        return [(b.principal, b.operation.name, b.permission_type.name) for b in admin.describe_acls(wanted).result(timeout=60)]

    for topic in topics.values():
        seen = await trio.to_thread.run_sync(poll, lambda topic=topic: acls(topic), bool, 30.0)
        assert seen == [(f"User:{topic}", "READ", "ALLOW")], f"ACL on {topic}: {seen}"

    def clean_up() -> None:
        admin = AdminClient(kafka_node.client_config("admin"))
        for topic in topics.values():
            wanted = AclBindingFilter(
                ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY, AclPermissionType.ANY
            )
            for future in admin.delete_acls([wanted]).values():
                future.result(timeout=60)

    await trio.to_thread.run_sync(clean_up)


# --------------------------------------------------------------------------- 3. before login


BAD_SOFTWARE_NAME = "bad name!\n<script>"
PRE_LOGIN: dict[str, tuple[Callable[[], list[Send]], list[Any]]] = {
    # script, and what Kafka 4.3.1 was seen doing
    "two ApiVersions before SaslHandshake": (
        lambda: [Send(ApiKey.API_VERSIONS, 3, api_versions()), Send(ApiKey.API_VERSIONS, 3, api_versions())],
        [("answer", 0, "api_keys"), CLOSED],
    ),
    "ApiVersions with a bad software name, then a good one, then login": (
        lambda: [Send(ApiKey.API_VERSIONS, 3, api_versions(BAD_SOFTWARE_NAME)), Send(ApiKey.API_VERSIONS, 3, api_versions()), *login_steps()],
        [("answer", 42, "no api_keys"), ("answer", 0, "api_keys"), *LOGGED_IN],
    ),
    "ApiVersions with a bad software name, then login": (
        lambda: [Send(ApiKey.API_VERSIONS, 3, api_versions(BAD_SOFTWARE_NAME)), *login_steps()],
        [("answer", 42, "no api_keys"), *LOGGED_IN],
    ),
    "CreateTopics before SaslHandshake": (
        lambda: [Send(ApiKey.CREATE_TOPICS, 7, create_topics(unique("hostile-prelogin")))],
        [CLOSED],
    ),
    "CreateTopics after ApiVersions, before SaslHandshake": (
        lambda: [Send(ApiKey.API_VERSIONS, 3, api_versions()), Send(ApiKey.CREATE_TOPICS, 7, create_topics(unique("hostile-prelogin")))],
        [("answer", 0, "api_keys"), CLOSED],
    ),
}


@pytest.mark.parametrize("case", list(PRE_LOGIN))
async def test_before_login_the_proxy_does_what_kafka_does(kafka_node: KafkaNode, proxy: Target, case: str) -> None:
    script, kafka_behaviour = PRE_LOGIN[case]
    direct, proxied = await both(kafka_node.broker_address, proxy.address, script())

    assert direct == kafka_behaviour, f"Kafka: {direct}"
    assert proxied == direct, f"proxy {proxied} != Kafka {direct}"
    assert await trio.to_thread.run_sync(answers_a_fresh_connection, proxy.address) == HEALTHY, "the proxy must stay alive"


def test_hostile_frames_are_what_they_claim() -> None:
    """The splicing helpers change exactly the bytes they name (no node needed, but kept with the table it guards)."""
    frame = create_topics("t")
    body = peek_request_header(frame).header_size
    assert with_first_count(frame, b"\x00")[body : body + 1] == b"\x00" and len(with_first_count(frame, b"\x00")) == len(frame)
    assert with_tag_at(frame, CREATE_TOPICS_TOP_TAGS).endswith(UNKNOWN_TAG)
    assert with_tag_at(frame, CREATE_TOPICS_TOPIC_TAGS)[-10:] == UNKNOWN_TAG + bytes.fromhex("0000753000") + b"\x00"
    acl = create_acls("t", "User:t")
    assert with_tag_at(acl, CREATE_ACLS_CREATION_TAGS)[-5:] == UNKNOWN_TAG + b"\x00"
    assert write_uvarint(2**20 + 1) == bytes.fromhex("818040")
