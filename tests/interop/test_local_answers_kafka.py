"""The proxy's own answers, byte for byte against a Kafka 4.3.1 broker's answers to the same requests.

Each request goes twice, with the same correlation id and client id: to the session node's BROKER listener,
and to a proxy in front of that node (its controller for forwarding, its broker listener for reads). Where the
content must be the same, the bytes must be the same. Where the proxy legitimately differs, the broker's answer
is rewritten by one of the named differences in ALLOWED_DIFFERENCES (documented in docs/clients.md), and then
the bytes must be the same: nothing else may differ. The broker's own frame is first checked to encode back to
itself through kio, so nothing Kafka wrote is lost before the comparison.

The property tests of the same answers at every version, with generated inputs, are
tests/proxy/forward/test_local_answers_every_version.py.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit import wire
from devkit.kafka_node import KafkaNode
from envelope.apis import ApiKey, EndpointType
from envelope.codec import decode_response_body, encode_response
from tests.interop.upstreams import Target, kafka_target

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CLIENT_ID = "interop-bytes"
ALLOWED_DIFFERENCES: dict[str, str] = {
    "broker identity": (
        "One broker view (docs/clients.md): brokers lists the cluster's brokers, with their ids and racks, at the "
        "advertised host and port of the listener the request came in on (KIP-103), so that clients still reach only "
        "the proxy; ids, order and controller_id are the cluster's own."
    ),
    "api keys": (
        "ApiVersions lists only the APIs the proxy serves (no Produce, Fetch, group or transaction APIs); every API both "
        "list has the same version range, so this difference removes the broker's others and nothing else."
    ),
    "feature tags": (
        "ApiVersions v3+: SupportedFeatures, FinalizedFeatures and their epoch are a node's own. The proxy has none of its "
        "own: it sends none (epoch -1), or its controller's levels with the controller's epoch, never the broker's epoch."
    ),
    "denial message": (
        "DescribeAcls refused for want of DESCRIBE on the cluster: Kafka's ClusterAuthorizationException message prints its "
        "internal RequestChannel.Request (processor, connection id, buffer); the proxy prints its own session, listener and "
        "security protocol in the same shape, 'Request Request(...) needs DESCRIBE permission.'"
    ),
}

Rewrite = Callable[[Any, Any, "Sides"], Any]
"""(the broker's decoded answer, the proxy's decoded answer, both sides) -> the broker's answer as the proxy must give it."""


@dataclass(frozen=True)
class Sides:
    broker: str
    proxy: str
    broker_id: int
    proxy_id: int

    @property
    def proxy_host_port(self) -> tuple[str, int]:
        host, port = self.proxy.rsplit(":", 1)
        return host, int(port)


def _broker_identity(theirs: Any, ours: Any, sides: Sides) -> Any:
    if not getattr(theirs, "brokers", ()):
        return theirs
    (broker,) = theirs.brokers  # a one-node cluster
    id_field = "node_id" if hasattr(broker, "node_id") else "broker_id"
    assert getattr(broker, id_field) == sides.broker_id
    host, port = sides.proxy_host_port
    return dataclasses.replace(theirs, brokers=(dataclasses.replace(broker, host=host, port=port),))


def _api_keys(theirs: Any, ours: Any, sides: Sides) -> Any:
    served = {int(k.api_key) for k in ours.api_keys}
    return dataclasses.replace(theirs, api_keys=tuple(k for k in theirs.api_keys if int(k.api_key) in served))


def _feature_tags(theirs: Any, ours: Any, sides: Sides) -> Any:
    if ours.finalized_features_epoch == -1:
        return dataclasses.replace(theirs, supported_features=(), finalized_features_epoch=-1, finalized_features=())
    return dataclasses.replace(theirs, finalized_features_epoch=ours.finalized_features_epoch)


def _denial_message(theirs: Any, ours: Any, sides: Sides) -> Any:
    assert theirs.error_message.startswith("Request Request(") and theirs.error_message.endswith(" needs DESCRIBE permission.")
    assert ours.error_message.startswith("Request Request(") and ours.error_message.endswith(" needs DESCRIBE permission.")
    return dataclasses.replace(theirs, error_message=ours.error_message)


REWRITES: dict[str, Rewrite] = {
    "broker identity": _broker_identity,
    "api keys": _api_keys,
    "feature tags": _feature_tags,
    "denial message": _denial_message,
}
assert REWRITES.keys() == ALLOWED_DIFFERENCES.keys()


@dataclass(frozen=True)
class Case:
    name: str
    api_key: int
    version: int
    values: dict[str, Any]
    user: str | None = "admin"  # None: asked before any login (ApiVersions)
    differences: tuple[str, ...] = ()


def _cases(topic: str, topic_id: uuid.UUID) -> list[Case]:
    cases: list[Case] = []
    software = {"client_software_name": "interop-bytes", "client_software_version": "1.0"}
    for version in range(5):
        cases.append(
            Case(
                f"ApiVersions v{version}",
                ApiKey.API_VERSIONS,
                version,
                software,
                None,
                ("api keys",) + (("feature tags",) if version >= 3 else ()),
            )
        )
    bad = {"client_software_name": "not valid!", "client_software_version": "1.0"}
    cases += [Case(f"ApiVersions v{v}, a software name Kafka refuses", ApiKey.API_VERSIONS, v, bad, None) for v in (3, 4)]

    named = [{"name": topic, "topic_id": None}, {"name": f"{topic}-missing", "topic_id": None}, {"name": topic, "topic_id": None}]
    for version in range(14):
        flags = {
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
        asked = {**flags, "include_cluster_authorized_operations": True, "include_topic_authorized_operations": True}
        identity = ("broker identity",)
        if version > 0:
            cases.append(Case(f"Metadata v{version}, no topics", ApiKey.METADATA, version, {**flags, "topics": []}, differences=identity))
            cases.append(
                Case(f"Metadata v{version}, null topics (all)", ApiKey.METADATA, version, {**flags, "topics": None}, differences=identity)
            )
        else:
            cases.append(Case("Metadata v0, [] (all topics)", ApiKey.METADATA, 0, {"topics": []}, differences=identity))
        cases.append(Case(f"Metadata v{version}, named topics", ApiKey.METADATA, version, {**flags, "topics": named}, differences=identity))
        if version >= 8:
            cases.append(
                Case(f"Metadata v{version}, operations asked", ApiKey.METADATA, version, {**asked, "topics": named}, differences=identity)
            )
            cases.append(
                Case(
                    f"Metadata v{version}, no topics, operations asked",
                    ApiKey.METADATA,
                    version,
                    {**asked, "topics": []},
                    differences=identity,
                )
            )
        cases.append(Case(f"Metadata v{version}, denied", ApiKey.METADATA, version, {**asked, "topics": named}, "bob", identity))

    # KIP-516: by id (names beside ids are ignored); an unknown id first, a denied one by id alone last
    by_id = [{"name": None, "topic_id": uuid.UUID(int=7)}, {"name": None, "topic_id": topic_id}, {"name": topic, "topic_id": None}]
    for version in (12, 13):
        values = {"topics": by_id, "allow_auto_topic_creation": False, "include_topic_authorized_operations": True}
        cases.append(Case(f"Metadata v{version}, by topic id", ApiKey.METADATA, version, values, differences=("broker identity",)))
        cases.append(Case(f"Metadata v{version}, by topic id, denied", ApiKey.METADATA, version, values, "bob", ("broker identity",)))

    for version in range(3):
        for include in (False, True):
            for endpoint in (EndpointType.BROKER, EndpointType.CONTROLLER, 0) if version > 0 else (EndpointType.BROKER,):
                values = {"include_cluster_authorized_operations": include, "endpoint_type": endpoint, "include_fenced_brokers": False}
                name = f"DescribeCluster v{version}, operations {'asked' if include else 'not asked'}, endpoint type {int(endpoint)}"
                cases.append(Case(name, ApiKey.DESCRIBE_CLUSTER, version, values, differences=("broker identity",)))
        values = {"include_cluster_authorized_operations": True, "endpoint_type": EndpointType.BROKER, "include_fenced_brokers": True}
        cases.append(
            Case(
                f"DescribeCluster v{version}, operations asked, denied",
                ApiKey.DESCRIBE_CLUSTER,
                version,
                values,
                "bob",
                ("broker identity",),
            )
        )

    for version in range(1, 5):
        resources = [
            {"resource_type": 2, "resource_name": topic, "configuration_keys": ["retention.ms", "cleanup.policy"]},
            {"resource_type": 4, "resource_name": "1", "configuration_keys": ["log.retention.hours"]},
            {"resource_type": 32, "resource_name": "a-group", "configuration_keys": None},
        ]
        configs: dict[str, Any] = {"resources": resources, "include_synonyms": True, "include_documentation": version >= 3}
        cases.append(Case(f"DescribeConfigs v{version}", ApiKey.DESCRIBE_CONFIGS, version, configs))
        cases.append(Case(f"DescribeConfigs v{version}, denied", ApiKey.DESCRIBE_CONFIGS, version, configs, "bob"))

    match_all = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
    }
    acls = {**match_all, "operation": 1, "permission_type": 1}
    for version in range(1, 4):
        cases.append(Case(f"DescribeAcls v{version}", ApiKey.DESCRIBE_ACLS, version, acls))
        cases.append(Case(f"DescribeAcls v{version}, denied", ApiKey.DESCRIBE_ACLS, version, acls, "bob", ("denial message",)))
    for version in range(2):
        cases.append(Case(f"DescribeClientQuotas v{version}", ApiKey.DESCRIBE_CLIENT_QUOTAS, version, {"components": [], "strict": False}))
        quotas = {"components": [], "strict": False}
        cases.append(Case(f"DescribeClientQuotas v{version}, denied", ApiKey.DESCRIBE_CLIENT_QUOTAS, version, quotas, "bob"))
    cases.append(Case("DescribeUserScramCredentials v0, every user", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None}))
    # users [] rather than null: Kafka 4.3.1 throws a NullPointerException on a refused null list and never answers
    scram_denied = Case("DescribeUserScramCredentials v0, denied", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": []}, "bob")
    cases.append(scram_denied)
    return cases


def _exchange(address: str, user: str | None, password: str | None, request: bytes) -> bytes:
    with wire.connect(address, timeout=30.0) as sock:
        if user is not None:
            assert password is not None
            assert wire.sasl_plain_login(sock, user, password) == 0
        return wire.exchange(sock, request)


def _check(case: Case, broker_frame: bytes, proxy_frame: bytes, sides: Sides, correlation_id: int) -> list[str]:
    """What differs beyond the case's named differences (empty when the bytes are the same after them)."""
    api_key, version = case.api_key, case.version
    if api_key == ApiKey.API_VERSIONS and version not in range(5):
        version = 0
    _, theirs = decode_response_body(api_key, version, broker_frame)
    assert encode_response(theirs, correlation_id=correlation_id) == broker_frame, "kio does not hold every byte Kafka wrote"
    _, ours = decode_response_body(api_key, version, proxy_frame)
    expected = theirs
    for name in case.differences:
        expected = REWRITES[name](expected, ours, sides)
    if encode_response(expected, correlation_id=correlation_id) == proxy_frame:
        return []
    return [f"{case.name}:\n  Kafka (rewritten by {list(case.differences)}): {expected}\n  proxy: {ours}"]


@pytest.fixture
async def target(nursery: Any, kafka_node: KafkaNode, tmp_path: Path) -> Target:
    return await kafka_target(nursery, kafka_node, tmp_path / "audit")


async def test_local_answers_are_kafkas_bytes(target: Target, kafka_node: KafkaNode) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bytes-{uuid.uuid4().hex[:8]}"

    def create() -> None:
        admin: Any = AdminClient(kafka_node.client_config("admin"))
        for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
            future.result(timeout=30)

    await trio.to_thread.run_sync(create)
    await trio.to_thread.run_sync(lambda: target.wait_for_partitions(topic, 2))
    sides = Sides(kafka_node.broker_address, target.address, kafka_node.node_id, target.proxy.service.settings.node_id)

    def topic_id() -> uuid.UUID:
        with wire.connect(sides.broker, timeout=30.0) as sock:
            assert wire.sasl_plain_login(sock, "admin", kafka_node.users["admin"]) == 0
            values = {
                "topics": [{"name": topic, "topic_id": None}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            }
            (described,) = wire.call(sock, ApiKey.METADATA, 12, values, correlation_id=3).topics
            return uuid.UUID(str(described.topic_id))

    cases = _cases(topic, await trio.to_thread.run_sync(topic_id))

    def run() -> list[str]:
        problems: list[str] = []
        for correlation_id, case in enumerate(cases, start=1000):
            request = wire.request(case.api_key, case.version, case.values, correlation_id, client_id=CLIENT_ID)
            password = kafka_node.users.get(case.user) if case.user else None
            broker_frame = _exchange(sides.broker, case.user, password, request)
            proxy_frame = _exchange(sides.proxy, case.user, password, request)
            problems += _check(case, broker_frame, proxy_frame, sides, correlation_id)
        return problems

    problems = await trio.to_thread.run_sync(run)
    assert not problems, "\n".join(problems)
    # every named difference was needed by some case, so the list holds nothing stale
    assert {d for case in cases for d in case.differences} == ALLOWED_DIFFERENCES.keys()


def _api_versions_of_unknown_version(correlation_id: int, version: int = 127) -> bytes:
    """ApiVersions at a version no one knows: a v2 request header and a v4-shaped body, written by hand."""
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, version, correlation_id, len(client)) + client + b"\x00"
    return header + b"\x02a\x021\x00"


async def test_login_and_unknown_versions_are_kafkas_bytes(target: Target, kafka_node: KafkaNode) -> None:
    """SASL answers (handshake, good and bad passwords) and ApiVersions at an unknown version: the same bytes, no rewrite."""
    sides = [kafka_node.broker_address, target.address]
    password = kafka_node.users["admin"]

    def conversation(address: str) -> list[bytes]:
        frames: list[bytes] = []
        with wire.connect(address, timeout=30.0) as sock:
            frames.append(wire.exchange(sock, _api_versions_of_unknown_version(1)))
        for handshake in (0, 1):
            with wire.connect(address, timeout=30.0) as sock:
                frames.append(
                    wire.exchange(sock, wire.request(ApiKey.SASL_HANDSHAKE, handshake, {"mechanism": "SCRAM-SHA-512"}, 2, CLIENT_ID))
                )
        for authenticate in (0, 1, 2):
            for secret in (password, "wrong"):
                with wire.connect(address, timeout=30.0) as sock:
                    frames.append(wire.exchange(sock, wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, 3, CLIENT_ID)))
                    token = b"\x00admin\x00" + secret.encode()
                    frames.append(
                        wire.exchange(sock, wire.request(ApiKey.SASL_AUTHENTICATE, authenticate, {"auth_bytes": token}, 4, CLIENT_ID))
                    )
                    if secret != password:
                        frames.append(b"closed" if wire.is_closed(sock) else b"open")
        return frames

    broker, proxy = [await trio.to_thread.run_sync(conversation, address) for address in sides]
    assert proxy == broker
