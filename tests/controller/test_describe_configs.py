"""DescribeConfigs as Kafka 4.3.1's controller answers it (ControllerApis -> ConfigHelper), on the embedded controller.

What Kafka itself lists is in controller/kafka_configs.json (generated from its classes): a
fresh topic's values and the order of every kind. The rest (sources, synonyms, flags, errors,
their words) was read off a real 4.3.1 node; tests/interop/test_describe_configs_kafka.py
compares the two entry by entry.
"""

import logging
from typing import Any

import pytest

from authz import Operation, ResourceType
from authz.model import CLUSTER_NAME
from controller.config_defs import generated_defaults, kafka_configs
from controller.created_topic_configs import created_topic_configs
from envelope.config_resources import CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS, CONFIG_GROUP, CONFIG_TOPIC
from envelope.config_sources import (
    CLIENT_METRICS_CONFIG,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_LOGGER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    GROUP_CONFIG,
    STATIC_BROKER_CONFIG,
    TOPIC_CONFIG,
)
from tests.controller.config_helpers import NODE_ID, Denying, controller

INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or the message was sent to an "
    "incompatible broker. See the broker logs for more details."
)


def synonyms(entry: dict[str, Any]) -> list[tuple[str, str | None, int]]:
    return [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


def test_a_topic_lists_every_config_in_kafkas_order_with_its_default_values() -> None:
    c = controller()
    c.add_topic("t1")
    (result,) = c.describe((CONFIG_TOPIC, "t1"))
    names = [entry["name"] for entry in result["configs"]]
    assert names == list(kafka_configs().topic.describe_order)
    assert "internal.segment.bytes" not in names  # internal configs are not listed
    assert {e["name"]: e["value"] for e in result["configs"]} == generated_defaults("topic")
    assert (result["error_code"], result["error_message"]) == (0, "")
    for entry in result["configs"]:
        source = DYNAMIC_DEFAULT_BROKER_CONFIG if entry["name"] == "min.insync.replicas" else DEFAULT_CONFIG  # the cluster-level value of a fresh cluster
        assert (entry["config_source"], entry["read_only"], entry["is_sensitive"]) == (source, False, False)


def test_a_topic_override_is_a_topic_config_ahead_of_the_broker_synonyms() -> None:
    c = controller()
    c.add_topic("t1", {"retention.ms": "3600000", "cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "1"})
    configs = c.configs(CONFIG_TOPIC, "t1")
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["config_source"] == TOPIC_CONFIG
    # log.retention.ms has no default, so nothing of log.retention.hours follows (Kafka drops synonyms before the name)
    assert synonyms(configs["retention.ms"]) == [("retention.ms", "3600000", TOPIC_CONFIG)]
    # values as Kafka prints them once parsed
    assert configs["cleanup.policy"]["value"] == "compact,delete"
    assert synonyms(configs["cleanup.policy"]) == [("cleanup.policy", "compact,delete", TOPIC_CONFIG), ("log.cleanup.policy", "delete", DEFAULT_CONFIG)]
    assert configs["min.cleanable.dirty.ratio"]["value"] == "1.0"
    # the cluster-level min.insync.replicas a fresh cluster holds (KIP-966) shows through
    assert configs["min.insync.replicas"]["config_source"] == DYNAMIC_DEFAULT_BROKER_CONFIG
    assert synonyms(configs["min.insync.replicas"]) == [("min.insync.replicas", "1", DYNAMIC_DEFAULT_BROKER_CONFIG), ("min.insync.replicas", "1", DEFAULT_CONFIG)]
    assert configs["segment.bytes"]["config_type"] == 3 and configs["retention.ms"]["config_type"] == 5
    assert configs["cleanup.policy"]["config_type"] == 7 and configs["preallocate"]["config_type"] == 1
    assert configs["min.cleanable.dirty.ratio"]["config_type"] == 6 and configs["compression.type"]["config_type"] == 2
    assert configs["retention.ms"]["documentation"] == kafka_configs().topic.keys["retention.ms"].documentation


def test_topic_defaults_follow_the_broker_static_and_dynamic_configs() -> None:
    c = controller({"log.retention.hours": "1", "log.segment.bytes": "2097152", "log.roll.ms": "5000"})
    c.add_topic("t")
    configs = c.configs(CONFIG_TOPIC, "t")
    # retention.ms derives from log.retention.hours, but its synonyms start at log.retention.ms, which is unset
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["config_source"], synonyms(configs["retention.ms"])) == ("3600000", DEFAULT_CONFIG, [])
    assert configs["segment.bytes"]["value"] == "2097152"
    assert synonyms(configs["segment.bytes"]) == [("log.segment.bytes", "2097152", STATIC_BROKER_CONFIG), ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)]
    assert (configs["segment.ms"]["value"], synonyms(configs["segment.ms"])) == ("5000", [("log.roll.ms", "5000", STATIC_BROKER_CONFIG), ("log.roll.hours", "168", DEFAULT_CONFIG)])
    # a cluster-wide dynamic value wins over the static one, and both are listed
    assert c.incremental((CONFIG_BROKER, "", [("log.segment.bytes", 0, "4194304")])) == [(CONFIG_BROKER, "", 0, None)]
    configs = c.configs(CONFIG_TOPIC, "t")
    assert (configs["segment.bytes"]["value"], configs["segment.bytes"]["config_source"]) == ("4194304", DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [s[2] for s in synonyms(configs["segment.bytes"])] == [DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG]


def test_without_synonyms_or_documentation_they_are_left_out_and_key_lists_filter() -> None:
    c = controller()
    c.add_topic("t1", {"retention.ms": "1000"})
    (result,) = c.describe((CONFIG_TOPIC, "t1"), synonyms=False, documentation=False, keys=["segment.ms", "retention.ms", "nope"])
    assert [e["name"] for e in result["configs"]] == [n for n in kafka_configs().topic.describe_order if n in ("segment.ms", "retention.ms")]
    assert all(e["synonyms"] == [] and e["documentation"] is None for e in result["configs"])
    (everything,) = c.describe((CONFIG_TOPIC, "t1"), keys=[])
    assert len(everything["configs"]) == len(kafka_configs().topic.describe_order)


def test_topic_errors() -> None:
    c = controller()
    results = c.describe((CONFIG_TOPIC, "nope"), (CONFIG_TOPIC, ""), (CONFIG_TOPIC, "bad name!"))
    assert [(r["error_code"], r["error_message"], r["configs"]) for r in results] == [
        (3, "", []),
        (17, "Topic name is invalid: the empty string is not allowed", []),
        (17, "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", []),
    ]


def test_the_cluster_default_lists_only_its_dynamic_configs_starting_with_min_insync_replicas() -> None:
    c = controller()
    configs = c.configs(CONFIG_BROKER, "")
    assert list(configs) == ["min.insync.replicas"]
    entry = configs["min.insync.replicas"]
    assert (entry["value"], entry["config_source"], entry["read_only"], entry["is_sensitive"], entry["config_type"]) == ("1", DYNAMIC_DEFAULT_BROKER_CONFIG, False, False, 3)
    assert synonyms(entry) == [("min.insync.replicas", "1", DYNAMIC_DEFAULT_BROKER_CONFIG)]
    assert entry["documentation"] == kafka_configs().broker.keys["min.insync.replicas"].documentation


def test_stored_cluster_defaults_that_kafka_would_not_apply_are_not_listed() -> None:
    c = controller()
    outcome = c.incremental((CONFIG_BROKER, "", [("num.partitions", 0, "3"), ("log.retention.ms", 0, "abc"), ("ssl.keystore.password", 0, "x"), ("listeners", 0, "A://:1"), ("foo.bar", 0, "1")]))
    assert outcome == [(CONFIG_BROKER, "", 0, None)]  # the controller only checks the broker name
    assert set(c.image.broker_configs[""]) == {"min.insync.replicas", "num.partitions", "log.retention.ms", "ssl.keystore.password", "listeners", "foo.bar"}
    configs = c.configs(CONFIG_BROKER, "")
    # non-dynamic, mistyped, SSL stores without a listener prefix and per-broker configs are ignored; an unknown name is kept
    assert set(configs) == {"min.insync.replicas", "foo.bar"}
    assert (configs["foo.bar"]["value"], configs["foo.bar"]["is_sensitive"], configs["foo.bar"]["config_type"], configs["foo.bar"]["read_only"]) == (None, True, 0, True)


def test_the_node_lists_every_broker_config_with_static_ones_and_unknown_ones_first() -> None:
    static = {"num.partitions": "3", "listener.name.controller.plain.sasl.jaas.config": "secret", "embedded.broker.count": "1", "log.retention.hours": "24"}
    c = controller(static)
    (result,) = c.describe((CONFIG_BROKER, str(NODE_ID)))
    entries = {e["name"]: e for e in result["configs"]}
    names = [e["name"] for e in result["configs"]]
    order = list(kafka_configs().broker.describe_order)
    assert names[-len(order) :] == order
    assert set(names[: -len(order)]) == {"listener.name.controller.plain.sasl.jaas.config", "embedded.broker.count"}
    jaas = entries["listener.name.controller.plain.sasl.jaas.config"]
    assert (jaas["value"], jaas["is_sensitive"], jaas["config_type"], jaas["read_only"], jaas["config_source"]) == (None, True, 9, True, STATIC_BROKER_CONFIG)
    assert synonyms(jaas) == [("listener.name.controller.plain.sasl.jaas.config", None, STATIC_BROKER_CONFIG)] and jaas["documentation"] is None
    unknown = entries["embedded.broker.count"]
    assert (unknown["value"], unknown["is_sensitive"], unknown["config_type"]) == (None, True, 0)
    assert synonyms(entries["num.partitions"]) == [("num.partitions", "3", STATIC_BROKER_CONFIG), ("num.partitions", "1", DEFAULT_CONFIG)]
    assert synonyms(entries["broker.id"]) == [("broker.id", "1", STATIC_BROKER_CONFIG), ("broker.id", "-1", DEFAULT_CONFIG)]  # node.id stands for it
    assert synonyms(entries["min.insync.replicas"]) == [("min.insync.replicas", "1", DYNAMIC_DEFAULT_BROKER_CONFIG), ("min.insync.replicas", "1", DEFAULT_CONFIG)]
    assert synonyms(entries["log.retention.hours"]) == [("log.retention.hours", "24", STATIC_BROKER_CONFIG), ("log.retention.hours", "168", DEFAULT_CONFIG)]
    assert (entries["log.retention.ms"]["value"], synonyms(entries["log.retention.ms"])) == (None, [])
    assert entries["num.partitions"]["read_only"] is True and entries["log.retention.ms"]["read_only"] is False
    assert entries["ssl.keystore.password"]["value"] is None and entries["ssl.keystore.password"]["is_sensitive"] is True


def test_other_broker_names_are_refused_as_kafka_refuses_them() -> None:
    c = controller()
    results = c.describe((CONFIG_BROKER, "2"), (CONFIG_BROKER, "x"), (CONFIG_BROKER_LOGGER, ""), (CONFIG_BROKER_LOGGER, "2"), (CONFIG_CLIENT_METRICS, ""), (CONFIG_GROUP, ""))
    assert [(r["resource_type"], r["error_code"], r["error_message"]) for r in results] == [
        (CONFIG_BROKER, 42, "Unexpected broker id, expected 1 or empty string, but received 2"),
        (CONFIG_BROKER, 42, "Broker id must be an integer, but it is: x"),
        (CONFIG_BROKER_LOGGER, 42, "Broker id must not be empty"),
        (CONFIG_BROKER_LOGGER, 42, "Unexpected broker id, expected 1 but received 2"),
        (CONFIG_CLIENT_METRICS, 42, "Client metrics subscription name must not be empty"),
        (CONFIG_GROUP, 42, "Group name must not be empty"),
    ]


def test_broker_loggers_are_this_processes_loggers() -> None:
    logging.getLogger("kafka.test.describe").setLevel(logging.WARNING)
    c = controller()
    configs = c.configs(CONFIG_BROKER_LOGGER, str(NODE_ID))
    assert next(iter(configs)) == "root"
    entry = configs["kafka.test.describe"]
    assert (entry["value"], entry["config_source"], entry["config_type"], entry["documentation"], entry["synonyms"]) == ("WARN", DYNAMIC_BROKER_LOGGER_CONFIG, 0, "", [])


def test_groups_and_client_metrics_list_their_defaults_and_overrides() -> None:
    c = controller()
    group = c.configs(CONFIG_GROUP, "g")
    assert list(group) == list(kafka_configs().group.describe_order)
    assert {n: e["value"] for n, e in group.items()} == generated_defaults("group")
    assert synonyms(group["consumer.session.timeout.ms"]) == [("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)]
    assert synonyms(group["share.isolation.level"]) == [("share.isolation.level", "read_uncommitted", DEFAULT_CONFIG)]
    metrics = c.configs(CONFIG_CLIENT_METRICS, "cm")
    assert {n: (e["value"], e["config_source"]) for n, e in metrics.items()} == {"interval.ms": ("300000", DEFAULT_CONFIG), "match": ("", DEFAULT_CONFIG), "metrics": ("", DEFAULT_CONFIG)}
    assert c.incremental((CONFIG_GROUP, "g", [("consumer.session.timeout.ms", 0, "50000")]), (CONFIG_CLIENT_METRICS, "cm", [("metrics", 0, "org.apache")])) == [
        (CONFIG_GROUP, "g", 0, None),
        (CONFIG_CLIENT_METRICS, "cm", 0, None),
    ]
    entry = c.configs(CONFIG_GROUP, "g")["consumer.session.timeout.ms"]
    assert (entry["value"], entry["config_source"]) == ("50000", GROUP_CONFIG)
    assert synonyms(entry) == [("consumer.session.timeout.ms", "50000", GROUP_CONFIG), ("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)]
    entry = c.configs(CONFIG_CLIENT_METRICS, "cm")["metrics"]
    assert (entry["value"], entry["config_source"], synonyms(entry)) == ("org.apache", CLIENT_METRICS_CONFIG, [("metrics", "org.apache", CLIENT_METRICS_CONFIG)])


def test_an_unknown_resource_type_fails_the_whole_request() -> None:
    c = controller()
    c.add_topic("t1")
    results = c.describe((CONFIG_TOPIC, "t1"), (99, "x"))
    assert [(r["resource_type"], r["error_code"], r["error_message"], r["configs"]) for r in results] == [
        (CONFIG_TOPIC, 42, INVALID_REQUEST_MESSAGE, []),
        (99, 42, INVALID_REQUEST_MESSAGE, []),
    ]


@pytest.mark.parametrize(
    ("kind", "name", "denied", "code", "message"),
    [
        (CONFIG_TOPIC, "t1", (Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, "t1"), 29, "Topic authorization failed."),
        (CONFIG_GROUP, "g", (Operation.DESCRIBE_CONFIGS, ResourceType.GROUP, "g"), 30, "Group authorization failed."),
        (CONFIG_BROKER, "", (Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME), 31, "Cluster authorization failed."),
        (CONFIG_BROKER_LOGGER, "1", (Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME), 31, "Cluster authorization failed."),
        (CONFIG_CLIENT_METRICS, "cm", (Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME), 31, "Cluster authorization failed."),
    ],
)
def test_denied_resources_come_after_the_others(kind: int, name: str, denied: tuple[Operation, ResourceType, str], code: int, message: str) -> None:
    c = controller(authorizer=Denying({denied}))
    c.add_topic("t1")
    c.add_topic("t2")
    results = c.describe((kind, name), (CONFIG_TOPIC, "t2"))
    assert [(r["resource_type"], r["resource_name"], r["error_code"]) for r in results] == [(CONFIG_TOPIC, "t2", 0), (kind, name, code)]
    assert (results[1]["error_message"], results[1]["configs"]) == (message, [])


def test_create_topics_gets_every_config_by_name_resolved_as_the_controller_resolves_it() -> None:
    c = controller({"log.retention.hours": "2", "log.roll.hours": "x"})
    configs = created_topic_configs(c.image, {"log.retention.hours": "2", "log.roll.hours": "x"}, NODE_ID, {"cleanup.policy": "compact, delete"})
    names = [entry["name"] for entry in configs]
    assert names == sorted(kafka_configs().topic.describe_order)
    by_name = {entry["name"]: (entry["value"], entry["config_source"]) for entry in configs}
    assert by_name["cleanup.policy"] == ("compact, delete", TOPIC_CONFIG)  # as sent, not parsed
    assert by_name["retention.ms"] == ("7200000", STATIC_BROKER_CONFIG)  # hours turned into milliseconds
    assert by_name["segment.ms"] == ("0", STATIC_BROKER_CONFIG)  # a value that is no number converts to 0, as Kafka's converter does
    assert by_name["min.insync.replicas"] == ("1", DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert by_name["segment.bytes"] == ("1073741824", DEFAULT_CONFIG)
    assert all(entry["read_only"] is False and entry["is_sensitive"] is False for entry in configs)
