"""AlterConfigs and IncrementalAlterConfigs decided as Kafka 4.3.1's controller decides them.

Every message below is the one a real 4.3.1 controller answered for the same request
(tests/interop/test_describe_configs_kafka.py asks both sides the same questions).
"""

import logging

import pytest
from kio.schema.errors import ErrorCode

from authz import Operation, ResourceType
from authz.model import CLUSTER_NAME
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
from tests.controller.config_helpers import Denying, controller


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
        ("retention.ms", "-5", "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
        ("foo", "1", "Unknown topic config name: foo"),
        ("cleanup.policy", "foo", "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"),
        ("compression.gzip.level", "10", "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
        ("min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
        ("min.cleanable.dirty.ratio", "x", "Invalid value x for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
        (
            "leader.replication.throttled.replicas",
            "abc",
            "Invalid value [abc] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the "
            "literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
        ("message.timestamp.type", "foo", "Invalid value foo for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
        ("segment.bytes", "1", "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576"),
        ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
        ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."),
    ],
)
def test_topic_values_are_checked_as_log_config_checks_them(name: str, value: str, message: str) -> None:
    c = controller()
    c.add_topic("t1")
    assert c.incremental((CONFIG_TOPIC, "t1", [(name, OP_SET, value)])) == [(CONFIG_TOPIC, "t1", ErrorCode.invalid_config, message)]
    assert c.image.topics["t1"].configs == {}


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("retention.ms", "\u0661\u0660\u0660\u0660", "1000"),  # Long.parseLong takes any Unicode decimal digit
        ("retention.ms", "\uff11\uff10\uff10\uff10", "1000"),
        ("min.insync.replicas", "\u0661", "1"),
        ("min.cleanable.dirty.ratio", "0x1p-1", "0.5"),  # Double.parseDouble takes Java's hexadecimal floats
        ("min.cleanable.dirty.ratio", "0X.8P0D", "0.5"),
    ],
)
def test_numbers_are_read_as_java_reads_them(name: str, value: str, shown: str) -> None:
    """Found by an outside differential check: Kafka 4.3.1 accepted each of these."""
    c = controller()
    c.add_topic("t1")
    assert c.incremental((CONFIG_TOPIC, "t1", [(name, OP_SET, value)])) == [(CONFIG_TOPIC, "t1", 0, None)]
    assert c.configs(CONFIG_TOPIC, "t1")[name]["value"] == shown


@pytest.mark.parametrize(("name", "value", "kind"), [("retention.ms", "1_000", "LONG"), ("min.cleanable.dirty.ratio", "\u0660.5", "DOUBLE"), ("min.cleanable.dirty.ratio", "0x1", "DOUBLE")])
def test_numbers_java_refuses_are_refused(name: str, value: str, kind: str) -> None:
    c = controller()
    c.add_topic("t1")
    message = f"Invalid value {value} for configuration {name}: Not a number of type {kind}"
    assert c.incremental((CONFIG_TOPIC, "t1", [(name, OP_SET, value)])) == [(CONFIG_TOPIC, "t1", ErrorCode.invalid_config, message)]


def test_checks_across_topic_values_and_accepted_values() -> None:
    c = controller()
    c.add_topic("t1")
    both = [("min.compaction.lag.ms", OP_SET, "10"), ("max.compaction.lag.ms", OP_SET, "5")]
    assert c.incremental((CONFIG_TOPIC, "t1", both)) == [
        (CONFIG_TOPIC, "t1", ErrorCode.invalid_config, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")
    ]
    assert c.incremental((CONFIG_TOPIC, "t1", [("cleanup.policy", OP_SET, "delete,delete"), ("retention.ms", OP_SET, " 100 ")])) == [(CONFIG_TOPIC, "t1", 0, None)]
    assert c.image.topics["t1"].configs == {"cleanup.policy": "delete,delete", "retention.ms": " 100 "}  # stored as given, shown parsed
    assert c.configs(CONFIG_TOPIC, "t1")["cleanup.policy"]["value"] == "delete"


def test_topic_resources_the_validator_refuses_before_existence() -> None:
    c = controller()
    assert c.incremental((CONFIG_TOPIC, "nope", [("retention.ms", OP_SET, "abc")])) == [
        (CONFIG_TOPIC, "nope", ErrorCode.invalid_config, "Invalid value abc for configuration retention.ms: Not a number of type LONG")
    ]
    assert c.incremental((CONFIG_TOPIC, "nope", [("retention.ms", OP_SET, "1")])) == [(CONFIG_TOPIC, "nope", ErrorCode.unknown_topic_or_partition, "The topic 'nope' does not exist.")]
    assert c.incremental((CONFIG_TOPIC, "", [("retention.ms", OP_SET, "1")])) == [(CONFIG_TOPIC, "", ErrorCode.invalid_request, "Default topic resources are not allowed.")]
    assert c.incremental((CONFIG_TOPIC, "bad!", [("retention.ms", OP_SET, "1")])) == [
        (CONFIG_TOPIC, "bad!", ErrorCode.invalid_topic_exception, "Topic name is invalid: 'bad!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
    ]


def test_append_and_subtract_work_on_lists_from_their_default() -> None:
    c = controller()
    c.add_topic("t1")
    assert c.incremental((CONFIG_TOPIC, "t1", [("retention.ms", OP_APPEND, "1")])) == [
        (CONFIG_TOPIC, "t1", ErrorCode.invalid_config, "Can't APPEND to key retention.ms because its type is not LIST.")
    ]
    assert c.incremental((CONFIG_TOPIC, "t1", [("cleanup.policy", OP_APPEND, "compact")])) == [(CONFIG_TOPIC, "t1", 0, None)]
    assert c.image.topics["t1"].configs == {"cleanup.policy": "delete,compact"}
    assert c.incremental((CONFIG_TOPIC, "t1", [("cleanup.policy", OP_SUBTRACT, "delete")])) == [(CONFIG_TOPIC, "t1", 0, None)]
    assert c.image.topics["t1"].configs == {"cleanup.policy": "compact"}
    assert c.incremental((CONFIG_CLIENT_METRICS, "cm", [("metrics", OP_APPEND, "x")])) == [
        (CONFIG_CLIENT_METRICS, "cm", ErrorCode.invalid_config, "Can't APPEND to key metrics because its type is not LIST.")
    ]
    assert c.incremental((CONFIG_TOPIC, "t1", [("cleanup.policy", OP_DELETE, None)])) == [(CONFIG_TOPIC, "t1", 0, None)]
    assert c.image.topics["t1"].configs == {}


def test_legacy_alter_replaces_every_config_and_a_null_removes() -> None:
    c = controller()
    c.add_topic("t1", {"retention.ms": "1000", "segment.ms": "2000"})
    assert c.legacy((CONFIG_TOPIC, "t1", {"retention.ms": "5", "segment.ms": None})) == [(CONFIG_TOPIC, "t1", 0, None)]
    assert c.image.topics["t1"].configs == {"retention.ms": "5"}
    assert c.legacy((CONFIG_TOPIC, "t1", {"retention.ms": "abc"})) == [
        (CONFIG_TOPIC, "t1", ErrorCode.invalid_config, "Invalid value abc for configuration retention.ms: Not a number of type LONG")
    ]


def test_min_insync_replicas_follows_kip_966_while_elr_is_on() -> None:
    c = controller()
    assert c.incremental((CONFIG_BROKER, "", [("min.insync.replicas", OP_DELETE, None)])) == [
        (CONFIG_BROKER, "", ErrorCode.invalid_config, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    ]
    assert c.incremental((CONFIG_BROKER, "1", [("min.insync.replicas", OP_SET, "2")])) == [
        (CONFIG_BROKER, "1", ErrorCode.invalid_config, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    ]
    # the legacy API replaces the whole resource: leaving min.insync.replicas out removes it
    assert c.legacy((CONFIG_BROKER, "", {"log.retention.ms": "1"})) == [
        (CONFIG_BROKER, "", ErrorCode.invalid_config, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    ]
    assert c.incremental((CONFIG_BROKER, "", [("min.insync.replicas", OP_SET, "2")])) == [(CONFIG_BROKER, "", 0, None)]
    assert c.image.broker_configs[""] == {"min.insync.replicas": "2"}


def test_broker_names_and_nodes() -> None:
    c = controller()
    change = [("log.retention.ms", OP_SET, "1")]
    assert c.incremental((CONFIG_BROKER, "2", change), (CONFIG_BROKER, "x", change), (CONFIG_BROKER, "-1", change)) == [
        (CONFIG_BROKER, "2", 102, "No node with id 2 found."),
        (CONFIG_BROKER, "x", ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number."),
        (CONFIG_BROKER, "-1", ErrorCode.invalid_request, "Invalid negative broker ID."),
    ]
    # the forwarding broker checks broker values; the controller takes them as they are
    assert c.incremental((CONFIG_BROKER, "", [("log.retention.ms", OP_SET, "abc"), ("foo.bar", OP_SET, "1")]), validate_only=True) == [(CONFIG_BROKER, "", 0, None)]
    assert c.image.broker_configs[""] == {"min.insync.replicas": "1"}


def test_numbers_of_thousands_of_digits_are_read_as_java_reads_them() -> None:
    """Python's int() refuses over 4,300 digits, where Long.parseLong reads leading zeros and refuses only the value."""
    c = controller()
    c.add_topic("t1")
    too_long = "1" * 5000
    assert c.incremental((CONFIG_TOPIC, "t1", [("retention.ms", OP_SET, too_long)])) == [
        (CONFIG_TOPIC, "t1", ErrorCode.invalid_config, f"Invalid value {too_long} for configuration retention.ms: Not a number of type LONG")
    ]
    assert c.incremental((CONFIG_TOPIC, "t1", [("retention.ms", OP_SET, "0" * 5000 + "1000")])) == [(CONFIG_TOPIC, "t1", 0, None)]
    assert c.configs(CONFIG_TOPIC, "t1")["retention.ms"]["value"] == "1000"
    change = [("log.retention.ms", OP_SET, "1")]
    assert c.incremental((CONFIG_BROKER, too_long, change), (CONFIG_BROKER, "0" * 5000 + "2", change)) == [
        (CONFIG_BROKER, too_long, ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number."),
        (CONFIG_BROKER, "0" * 5000 + "2", 102, "No node with id 2 found."),
    ]


def test_groups_and_client_metrics_are_validated() -> None:
    c = controller()
    assert c.incremental((CONFIG_GROUP, "g", [("consumer.session.timeout.ms", OP_SET, "1")])) == [
        (CONFIG_GROUP, "g", ErrorCode.invalid_config, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
    ]
    assert c.incremental((CONFIG_GROUP, "g", [("consumer.session.timeout.ms", OP_SET, "50000"), ("consumer.heartbeat.interval.ms", OP_SET, "60000")])) == [
        (CONFIG_GROUP, "g", ErrorCode.invalid_config, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")
    ]
    assert c.incremental((CONFIG_GROUP, "g", [("foo", OP_SET, "1")])) == [(CONFIG_GROUP, "g", ErrorCode.invalid_config, "Unknown group config name: foo")]
    assert c.incremental((CONFIG_GROUP, "", [("consumer.session.timeout.ms", OP_SET, "50000")])) == [
        (CONFIG_GROUP, "", ErrorCode.invalid_request, "Default group resources are not allowed.")
    ]
    assert c.incremental((CONFIG_GROUP, "g", [("share.auto.offset.reset", OP_SET, "by_duration:PT1H")])) == [(CONFIG_GROUP, "g", 0, None)]
    assert c.incremental((CONFIG_CLIENT_METRICS, "cm", [("interval.ms", OP_SET, "5")])) == [
        (CONFIG_CLIENT_METRICS, "cm", ErrorCode.invalid_request, "Invalid value 5 for interval.ms, interval must be between 100 and 3600000 (1 hour)")
    ]
    assert c.incremental((CONFIG_CLIENT_METRICS, "cm", [("foo", OP_SET, "5")])) == [
        (CONFIG_CLIENT_METRICS, "cm", ErrorCode.invalid_request, "Unknown client metrics configuration: foo")
    ]
    assert c.incremental((CONFIG_CLIENT_METRICS, "cm", [("match", OP_SET, "bad")])) == [(CONFIG_CLIENT_METRICS, "cm", ErrorCode.invalid_config, "Illegal client matching pattern: bad")]
    assert c.incremental((CONFIG_CLIENT_METRICS, "", [("metrics", OP_SET, "x")])) == [(CONFIG_CLIENT_METRICS, "", ErrorCode.invalid_request, "Subscription name can't be empty")]
    assert c.incremental((CONFIG_CLIENT_METRICS, "cm", [("match", OP_SET, "client_id=a.*"), ("metrics", OP_SET, "org.apache")])) == [(CONFIG_CLIENT_METRICS, "cm", 0, None)]
    assert c.image.client_metrics_configs == {"cm": {"match": "client_id=a.*", "metrics": "org.apache"}}
    assert c.image.group_configs == {"g": {"share.auto.offset.reset": "by_duration:PT1H"}}


def test_the_request_is_sorted_first_duplicates_answered_once_and_unknown_types_refused() -> None:
    c = controller()
    c.add_topic("t1")
    c.add_topic("t2")
    outcome = c.incremental(
        (CONFIG_TOPIC, "t2", [("retention.ms", OP_SET, "1")]),
        (CONFIG_TOPIC, "t1", [("retention.ms", OP_SET, "1")]),
        (99, "x", [("a", OP_SET, "b")]),
        (CONFIG_TOPIC, "t1", [("retention.ms", OP_SET, "2")]),
        (CONFIG_TOPIC, "t1", [("retention.ms", OP_SET, "3")]),
    )
    assert outcome == [
        (99, "x", 35, "Unknown resource type 99."),
        (CONFIG_TOPIC, "t1", ErrorCode.invalid_request, "Duplicate resource."),
        (CONFIG_TOPIC, "t2", 0, None),
    ]
    assert c.image.topics["t1"].configs == {} and c.image.topics["t2"].configs == {"retention.ms": "1"}


def test_denials_follow_the_sorting_errors_and_precede_the_results() -> None:
    c = controller(authorizer=Denying({(Operation.ALTER_CONFIGS, ResourceType.TOPIC, "t1"), (Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)}))
    c.add_topic("t1")
    c.add_topic("t2")
    change = [("retention.ms", OP_SET, "1")]
    outcome = c.incremental((CONFIG_TOPIC, "t2", change), (CONFIG_TOPIC, "t1", change), (CONFIG_BROKER, "", change), (CONFIG_GROUP, "g", [("foo", OP_SET, "1")]), (99, "x", change))
    assert outcome == [
        (99, "x", 35, "Unknown resource type 99."),
        (CONFIG_TOPIC, "t1", 29, "Topic authorization failed."),
        (CONFIG_BROKER, "", 31, "Cluster authorization failed."),
        (CONFIG_TOPIC, "t2", 0, None),
        (CONFIG_GROUP, "g", ErrorCode.invalid_config, "Unknown group config name: foo"),
    ]


def test_an_unknown_operation_fails_the_whole_request() -> None:
    c = controller()
    c.add_topic("t1")
    assert c.incremental((CONFIG_TOPIC, "t1", [("retention.ms", 7, "1")]), (CONFIG_BROKER, "", [("a", OP_SET, "b")])) == [
        (CONFIG_TOPIC, "t1", -1, None),
        (CONFIG_BROKER, "", -1, None),
    ]
    assert c.image.broker_configs[""] == {"min.insync.replicas": "1"}


def test_broker_loggers_need_cluster_action_and_change_this_processes_loggers() -> None:
    logger = logging.getLogger("kafka.test.alter")
    logger.setLevel(logging.INFO)
    denied = controller(authorizer=Denying({(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)}))
    assert denied.incremental((CONFIG_BROKER_LOGGER, "1", [("kafka.test.alter", OP_SET, "DEBUG")])) == [(CONFIG_BROKER_LOGGER, "1", 31, "Cluster authorization failed.")]
    c = controller()
    assert c.incremental((CONFIG_BROKER_LOGGER, "1", [("kafka.test.alter", OP_SET, "DEBUG")]), validate_only=True) == [(CONFIG_BROKER_LOGGER, "1", 0, None)]
    assert logger.level == logging.INFO
    assert c.incremental((CONFIG_BROKER_LOGGER, "1", [("kafka.test.alter", OP_SET, "DEBUG")])) == [(CONFIG_BROKER_LOGGER, "1", 0, None)]
    assert logger.level == logging.DEBUG
    assert c.incremental((CONFIG_BROKER_LOGGER, "1", [("kafka.test.alter", OP_DELETE, None)])) == [(CONFIG_BROKER_LOGGER, "1", 0, None)]
    assert logger.level == logging.NOTSET
    assert c.incremental(
        (CONFIG_BROKER_LOGGER, "1", [("nope.logger", OP_SET, "DEBUG")]),
        (CONFIG_BROKER_LOGGER, "1", [("root", OP_SET, "BAD")]),
        (CONFIG_BROKER_LOGGER, "1", [("root", OP_DELETE, None)]),
        (CONFIG_BROKER_LOGGER, "1", [("root", OP_APPEND, "x")]),
        (CONFIG_BROKER_LOGGER, "2", [("root", OP_SET, "DEBUG")]),
        (CONFIG_BROKER_LOGGER, "x", [("root", OP_SET, "DEBUG")]),
        validate_only=True,
    ) == [
        (CONFIG_BROKER_LOGGER, "1", ErrorCode.invalid_config, "Logger nope.logger does not exist!"),
        (
            CONFIG_BROKER_LOGGER,
            "1",
            ErrorCode.invalid_config,
            "Cannot set the log level of root to BAD as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN",
        ),
        (CONFIG_BROKER_LOGGER, "1", ErrorCode.invalid_request, "Removing the log level of the root logger is not allowed"),
        (CONFIG_BROKER_LOGGER, "1", ErrorCode.invalid_request, "APPEND operation is not allowed for the BROKER_LOGGER resource"),
        (CONFIG_BROKER_LOGGER, "2", ErrorCode.invalid_request, "Unexpected node id. Expected 1, but received 2"),
        (CONFIG_BROKER_LOGGER, "x", ErrorCode.invalid_request, "Node id must be an integer, but it is: x"),
    ]
    # the legacy API has no BROKER_LOGGER: it reaches the authorization step and is refused there
    assert c.legacy((CONFIG_BROKER_LOGGER, "1", {"root": "DEBUG"})) == [(CONFIG_BROKER_LOGGER, "1", ErrorCode.invalid_request, "Unexpected resource type BROKER_LOGGER.")]
