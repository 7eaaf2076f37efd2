"""DescribeConfigs and config changes: the embedded controller against a real Kafka 4.3.1 controller, entry by entry.

One embedded controller is started with the Kafka node's own server.properties (its CONTROLLER
listener on another port), so both sides have the same static configs; the node's dynamic
broker configs at the time are copied into the embedded image. Both are then asked the same
DescribeConfigs directly on their CONTROLLER listener (admin, a super user on both) and every
entry is compared: name, order, value, source, synonyms, type, read-only, sensitive and
documentation. The same config changes (validate_only) must get the same codes and messages,
and ApiVersions the same feature levels.
"""

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from controller.config import parse_controller_config
from controller.config_defs import kafka_configs
from controller.created_topic_configs import created_topic_configs
from controller.image import Topic
from controller.server import EmbeddedController
from devkit import wire
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import NODE_USER
from envelope.apis import ApiKey
from envelope.config_resources import (
    CONFIG_BROKER,
    CONFIG_BROKER_LOGGER,
    CONFIG_CLIENT_METRICS,
    CONFIG_GROUP,
    CONFIG_TOPIC,
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
)
from envelope.config_sources import DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG

pytestmark = pytest.mark.interop

DIFFERENT_STATIC = frozenset({"listeners", "metadata.log.dir"})  # the embedded controller's own port and metadata
TOPIC_CONFIGS = {"retention.ms": "3600000", "cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "0.25", "max.message.bytes": "2000000"}


@dataclass
class Side:
    name: str
    address: str
    password: str

    def call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        with wire.connect(self.address, timeout=30) as sock:
            assert wire.sasl_plain_login(sock, NODE_USER, self.password) == 0
            return wire.plain(wire.call(sock, api_key, version, values, 5))

    def describe(self, resources: list[tuple[int, str]], *, version: int = 4, synonyms: bool = True, documentation: bool = True) -> list[dict[str, Any]]:
        values = {
            "resources": [{"resource_type": t, "resource_name": n, "configuration_keys": None} for t, n in resources],
            "include_synonyms": synonyms,
            "include_documentation": documentation,
        }
        results: list[dict[str, Any]] = self.call(ApiKey.DESCRIBE_CONFIGS, version, values)["results"]
        return results


@dataclass
class Pair:
    kafka: Side
    embedded: Side
    controller: EmbeddedController
    token: trio.lowlevel.TrioToken
    topic: str
    created: list[dict[str, Any]]
    static: dict[str, str]



def _create_topic(node: KafkaNode, name: str, configs: dict[str, str]) -> list[dict[str, Any]]:
    """Create the topic on the node; its KIP-525 configs as the controller computed them."""
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs.items()]}
    answer = Side("kafka-broker", node.broker_address, node.users[NODE_USER]).call(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout": 30000, "validate_only": False})
    assert [t["error_code"] for t in answer["topics"]] == [0], answer
    created: list[dict[str, Any]] = answer["topics"][0]["configs"]
    return created


@pytest.fixture(scope="module")
def pair(kafka_node: KafkaNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """The node, and an embedded controller with the node's static configs, one topic alike on both."""
    props = {
        **kafka_node.server_properties(),
        "listeners": f"BROKER://{kafka_node.broker_address},CONTROLLER://127.0.0.1:0",
        "metadata.log.dir": str(tmp_path_factory.mktemp("embedded-metadata")),
    }
    controller = EmbeddedController(parse_controller_config(props))
    started = threading.Event()
    stop = trio.Event()
    found: list[Any] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(controller.run)
            found.extend([bound[0].port, trio.lowlevel.current_trio_token()])
            started.set()
            await stop.wait()
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    assert started.wait(30), "embedded controller did not start"
    port, token = found
    topic = f"dc-{uuid.uuid4().hex[:8]}"
    created = _create_topic(kafka_node, topic, TOPIC_CONFIGS)
    trio.from_thread.run_sync(lambda: controller.image.topics.__setitem__(topic, Topic(topic, uuid.uuid4(), 1, 1, dict(TOPIC_CONFIGS))), trio_token=token)
    password = kafka_node.users[NODE_USER]
    kafka_side, embedded_side = Side("kafka", kafka_node.controller_address, password), Side("embedded", f"127.0.0.1:{port}", password)
    yield Pair(kafka_side, embedded_side, controller, token, topic, created, props)
    trio.from_thread.run_sync(stop.set, trio_token=token)
    thread.join(30)


def _mirror_dynamic_configs(pair: Pair) -> set[str]:
    """Copy the node's dynamic broker configs (as its DescribeConfigs shows them) into the embedded image; returns the
    sensitive ones, whose values Kafka does not show and which are therefore left out of the comparison."""
    hidden: set[str] = set()
    (node,) = pair.kafka.describe([(CONFIG_BROKER, "1")])
    per_broker: dict[str, str] = {}
    cluster: dict[str, str] = {}
    for entry in node["configs"]:
        for synonym in entry["synonyms"]:
            target = per_broker if synonym["source"] == DYNAMIC_BROKER_CONFIG else cluster if synonym["source"] == DYNAMIC_DEFAULT_BROKER_CONFIG else None
            if target is None:
                continue
            if synonym["value"] is None:
                hidden.add(synonym["name"])
            else:
                target[synonym["name"]] = synonym["value"]

    def mirror() -> None:
        pair.controller.image.broker_configs[""] = cluster
        if per_broker:
            pair.controller.image.broker_configs["1"] = per_broker

    trio.from_thread.run_sync(mirror, trio_token=pair.token)
    return hidden


def _synonyms(entry: dict[str, Any]) -> list[tuple[str, str | None, int]]:
    return [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


def _differences(kafka: dict[str, Any], embedded: dict[str, Any], skip: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Every way the embedded answer for one resource differs from Kafka's, for configs the embedded one lists."""
    problems = []
    for field in ("resource_type", "resource_name", "error_code", "error_message"):
        if kafka[field] != embedded[field]:
            problems.append(f"{field}: kafka {kafka[field]!r}, embedded {embedded[field]!r}")
    theirs = {e["name"]: e for e in kafka["configs"]}
    ours = [e["name"] for e in embedded["configs"]]
    if [n for n in ours if n in theirs] != [n for n in theirs if n in set(ours)]:
        problems.append("the configs come in another order")
    for entry in embedded["configs"]:
        name = entry["name"]
        if name in skip:
            continue
        other = theirs.get(name)
        if other is None:
            problems.append(f"{name}: Kafka does not list it")
            continue
        for field in ("value", "config_source", "read_only", "is_sensitive", "config_type", "documentation"):
            if entry.get(field) != other.get(field):  # config_type and documentation exist from v3 on
                problems.append(f"{name}.{field}: kafka {other.get(field)!r}, embedded {entry.get(field)!r}")
        if _synonyms(entry) != _synonyms(other):
            problems.append(f"{name}.synonyms: kafka {_synonyms(other)}, embedded {_synonyms(entry)}")
    return problems


def test_every_topic_config_is_listed_as_kafka_lists_it(pair: Pair) -> None:
    hidden = _mirror_dynamic_configs(pair)
    for version, synonyms, documentation in ((4, True, True), (4, False, False), (1, True, False)):
        (kafka,) = pair.kafka.describe([(CONFIG_TOPIC, pair.topic)], version=version, synonyms=synonyms, documentation=documentation)
        (embedded,) = pair.embedded.describe([(CONFIG_TOPIC, pair.topic)], version=version, synonyms=synonyms, documentation=documentation)
        assert _differences(kafka, embedded, hidden) == [], f"v{version} synonyms={synonyms} documentation={documentation}"
        assert [e["name"] for e in embedded["configs"]] == [e["name"] for e in kafka["configs"]]
    assert {e["name"] for e in embedded["configs"]} == set(kafka_configs().topic.describe_order)


def test_create_topics_kip_525_configs_are_computed_as_kafkas_controller_computes_them(pair: Pair) -> None:
    _mirror_dynamic_configs(pair)
    ours = created_topic_configs(pair.controller.image, pair.static, 1, TOPIC_CONFIGS)
    assert ours == pair.created


def test_the_cluster_default_and_the_node_are_listed_as_kafka_lists_them(pair: Pair) -> None:
    hidden = _mirror_dynamic_configs(pair)
    kafka = pair.kafka.describe([(CONFIG_BROKER, ""), (CONFIG_BROKER, "1")])
    embedded = pair.embedded.describe([(CONFIG_BROKER, ""), (CONFIG_BROKER, "1")])
    assert _differences(kafka[0], embedded[0], hidden) == []
    assert [e["name"] for e in embedded[0]["configs"]] == [e["name"] for e in kafka[0]["configs"]]
    assert "min.insync.replicas" in {e["name"] for e in embedded[0]["configs"]}  # KIP-966, written when the cluster was made
    assert _differences(kafka[1], embedded[1], hidden | DIFFERENT_STATIC) == []
    assert [e["name"] for e in embedded[1]["configs"]] == [e["name"] for e in kafka[1]["configs"]]


def test_other_resources_and_errors_are_answered_as_kafka_answers_them(pair: Pair) -> None:
    unique = uuid.uuid4().hex[:8]
    resources = [
        (CONFIG_GROUP, f"g-{unique}"),
        (CONFIG_CLIENT_METRICS, f"cm-{unique}"),
        (CONFIG_BROKER, "2"),
        (CONFIG_BROKER, "x"),
        (CONFIG_BROKER_LOGGER, ""),
        (CONFIG_BROKER_LOGGER, "2"),
        (CONFIG_CLIENT_METRICS, ""),
        (CONFIG_GROUP, ""),
        (CONFIG_TOPIC, f"nope-{unique}"),
        (CONFIG_TOPIC, "bad name!"),
        (CONFIG_TOPIC, ""),
    ]
    kafka = pair.kafka.describe(resources)
    embedded = pair.embedded.describe(resources)
    for theirs, ours in zip(kafka, embedded, strict=True):
        assert _differences(theirs, ours) == [], (theirs["resource_type"], theirs["resource_name"])
        assert [e["name"] for e in ours["configs"]] == [e["name"] for e in theirs["configs"]]
    # loggers are each process's own: the shape is Kafka's
    for side in (pair.kafka, pair.embedded):
        (loggers,) = side.describe([(CONFIG_BROKER_LOGGER, "1")])
        assert loggers["error_code"] == 0 and "root" in {e["name"] for e in loggers["configs"]}
        assert {(e["config_source"], e["config_type"], e["documentation"], e["read_only"], e["is_sensitive"]) for e in loggers["configs"]} == {(6, 0, "", False, False)}
    # an unknown resource type fails the whole request
    assert pair.embedded.describe([(CONFIG_TOPIC, pair.topic), (99, "x")]) == pair.kafka.describe([(CONFIG_TOPIC, pair.topic), (99, "x")])


def _incremental(kind: int, name: str, *configs: tuple[str, int, str | None]) -> tuple[str, list[dict[str, Any]]]:
    return ("incremental", [{"resource_type": kind, "resource_name": name, "configs": [{"name": k, "config_operation": o, "value": v} for k, o, v in configs]}])


def _legacy(kind: int, name: str, *configs: tuple[str, str | None]) -> tuple[str, list[dict[str, Any]]]:
    return ("legacy", [{"resource_type": kind, "resource_name": name, "configs": [{"name": k, "value": v} for k, v in configs]}])


def _changes(topic: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """Config changes whose answers must agree (validate_only, so neither side changes). Kafka's controller resigns on an
    unknown operation or an APPEND without a value (a NullPointerException), so those are left out here."""
    return [
        _incremental(CONFIG_TOPIC, topic, ("retention.ms", OP_SET, "abc")),
        _incremental(CONFIG_TOPIC, topic, ("retention.ms", OP_SET, "-5")),
        _incremental(CONFIG_TOPIC, topic, ("foo", OP_SET, "1")),
        _incremental(CONFIG_TOPIC, topic, ("retention.ms", OP_APPEND, "1")),
        _incremental(CONFIG_TOPIC, topic, ("cleanup.policy", OP_APPEND, "delete")),
        _incremental(CONFIG_TOPIC, topic, ("cleanup.policy", OP_SUBTRACT, "compact")),
        _incremental(CONFIG_TOPIC, topic, ("min.compaction.lag.ms", OP_SET, "10"), ("max.compaction.lag.ms", OP_SET, "5")),
        _incremental(CONFIG_TOPIC, topic, ("remote.storage.enable", OP_SET, "true")),
        _incremental(CONFIG_TOPIC, topic, ("compression.gzip.level", OP_SET, "10")),
        _incremental(CONFIG_TOPIC, topic, ("min.cleanable.dirty.ratio", OP_SET, "2")),
        _incremental(CONFIG_TOPIC, topic, ("leader.replication.throttled.replicas", OP_SET, "abc")),
        _incremental(CONFIG_TOPIC, topic, ("segment.bytes", OP_SET, "1")),
        _incremental(CONFIG_TOPIC, topic, ("retention.ms", OP_DELETE, None)),
        _incremental(CONFIG_TOPIC, "nope-missing", ("retention.ms", OP_SET, "1")),
        _incremental(CONFIG_TOPIC, "nope-missing", ("retention.ms", OP_SET, "abc")),
        _incremental(CONFIG_TOPIC, "", ("retention.ms", OP_SET, "1")),
        _incremental(CONFIG_BROKER, "", ("min.insync.replicas", OP_DELETE, None)),
        _incremental(CONFIG_BROKER, "1", ("min.insync.replicas", OP_SET, "2")),
        _incremental(CONFIG_BROKER, "2", ("log.retention.ms", OP_SET, "1")),
        _incremental(CONFIG_BROKER, "x", ("log.retention.ms", OP_SET, "1")),
        _incremental(CONFIG_BROKER, "-1", ("log.retention.ms", OP_SET, "1")),
        _incremental(CONFIG_BROKER, "", ("foo.bar", OP_SET, "1")),
        _incremental(CONFIG_BROKER, "1", ("listeners", OP_APPEND, "X://:1")),
        _incremental(CONFIG_BROKER, "", ("num.partitions", OP_APPEND, "1")),
        _incremental(CONFIG_GROUP, "g", ("consumer.session.timeout.ms", OP_SET, "1")),
        _incremental(CONFIG_GROUP, "g", ("consumer.session.timeout.ms", OP_SET, "50000"), ("consumer.heartbeat.interval.ms", OP_SET, "60000")),
        _incremental(CONFIG_GROUP, "g", ("foo", OP_SET, "1")),
        _incremental(CONFIG_GROUP, "g", ("share.auto.offset.reset", OP_SET, "bad")),
        _incremental(CONFIG_GROUP, "", ("consumer.session.timeout.ms", OP_SET, "50000")),
        _incremental(CONFIG_CLIENT_METRICS, "cm", ("interval.ms", OP_SET, "5")),
        _incremental(CONFIG_CLIENT_METRICS, "cm", ("foo", OP_SET, "5")),
        _incremental(CONFIG_CLIENT_METRICS, "cm", ("match", OP_SET, "bad")),
        _incremental(CONFIG_CLIENT_METRICS, "cm", ("metrics", OP_APPEND, "x")),
        _incremental(CONFIG_CLIENT_METRICS, "", ("metrics", OP_SET, "x")),
        _incremental(99, "x", ("a", OP_SET, "b")),
        _incremental(CONFIG_BROKER_LOGGER, "1", ("root", OP_SET, "DEBUG")),
        _incremental(CONFIG_BROKER_LOGGER, "1", ("nope.logger", OP_SET, "DEBUG")),
        _incremental(CONFIG_BROKER_LOGGER, "1", ("root", OP_SET, "BAD")),
        _incremental(CONFIG_BROKER_LOGGER, "1", ("root", OP_DELETE, None)),
        _incremental(CONFIG_BROKER_LOGGER, "1", ("root", OP_APPEND, "x")),
        _incremental(CONFIG_BROKER_LOGGER, "2", ("root", OP_SET, "DEBUG")),
        _incremental(CONFIG_BROKER_LOGGER, "x", ("root", OP_SET, "DEBUG")),
        ("incremental", _incremental(CONFIG_TOPIC, topic, ("retention.ms", OP_SET, "1"))[1] * 3),
        _legacy(CONFIG_BROKER, "", ("log.retention.ms", "1")),
        _legacy(CONFIG_BROKER_LOGGER, "1", ("root", "DEBUG")),
        _legacy(99, "1", ("root", "DEBUG")),
        _legacy(CONFIG_TOPIC, topic, ("retention.ms", "abc")),
        _legacy(CONFIG_TOPIC, topic, ("foo", "1")),
        _legacy(CONFIG_TOPIC, topic, ("retention.ms", None)),
    ]


def test_config_changes_get_kafkas_codes_and_messages(pair: Pair) -> None:
    differences = []
    for kind, resources in _changes(pair.topic):
        api_key, version = (ApiKey.INCREMENTAL_ALTER_CONFIGS, 1) if kind == "incremental" else (ApiKey.ALTER_CONFIGS, 2)
        values = {"resources": resources, "validate_only": True}
        answers = [
            [(r["resource_type"], r["resource_name"], r["error_code"], r["error_message"]) for r in side.call(api_key, version, values)["responses"]]
            for side in (pair.kafka, pair.embedded)
        ]
        if answers[0] != answers[1]:
            differences.append(f"{kind} {resources}: kafka {answers[0]}, embedded {answers[1]}")
    assert differences == []


def test_api_versions_carries_kafkas_feature_levels(pair: Pair) -> None:
    values = {"client_software_name": "interop", "client_software_version": "1"}
    kafka, embedded = (side.call(ApiKey.API_VERSIONS, 4, values) for side in (pair.kafka, pair.embedded))
    assert embedded["supported_features"] == kafka["supported_features"]
    assert embedded["finalized_features"] == kafka["finalized_features"]


def test_update_features_gets_kafkas_answers(pair: Pair) -> None:
    cases = [
        [("metadata.version", 30, 1)],
        [("metadata.version", 29, 1)],
        [("metadata.version", 29, 2)],
        [("metadata.version", 22, 3)],
        [("metadata.version", 31, 1)],
        [("share.version", 0, 2)],
        [("streams.version", 2, 1)],
        [("kraft.version", 0, 2)],
        [("no.such.version", 1, 1)],
        [("metadata.version", 30, 1), ("metadata.version", 30, 1)],
        [("metadata.version", 28, 2), ("eligible.leader.replicas.version", 1, 1)],
    ]
    differences = []
    for updates in cases:
        for version in (1, 2):
            values = {"timeout_ms": 30000, "feature_updates": [{"feature": f, "max_version_level": v, "upgrade_type": u} for f, v, u in updates], "validate_only": True}
            answers = [side.call(ApiKey.UPDATE_FEATURES, version, values) for side in (pair.kafka, pair.embedded)]
            shown = [(a["error_code"], a["error_message"], a.get("results")) for a in answers]
            if shown[0] != shown[1]:
                differences.append(f"v{version} {updates}: kafka {shown[0]}, embedded {shown[1]}")
    assert differences == []
