"""ControllerConfigurationValidator: whether a resource's configs, as a change would leave them, are valid.

A topic's name and configs (LogConfig), a broker's name (its values the
forwarding broker has checked), a client-metrics subscription's configs
(ClientMetricsConfigs) and a group's configs over the broker's bounds
(GroupConfig), each refused as Kafka refuses it, in its words.
"""

import re
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from controller.config_defs import Definitions, kafka_configs
from controller.config_resources import ConfigProblem
from controller.config_state import ConfigState
from controller.config_validators import ConfigValueError
from controller.java_order import string_map_order
from controller.java_values import java_integer
from controller.topic_configs import topic_configs_problem
from controller.topic_rules import topic_name_problem
from envelope.config_resources import CONFIG_BROKER, CONFIG_CLIENT_METRICS, CONFIG_GROUP, CONFIG_TOPIC

# ClientMetricsConfigs: the push interval a subscription may ask for, 100 ms to an hour
MIN_INTERVAL_MS = 100
MAX_INTERVAL_MS = 3_600_000


def validate_resource_configs(kind: int, name: str, configs: dict[str, str], state: ConfigState) -> None:
    """ControllerConfigurationValidator."""
    if kind == CONFIG_TOPIC:
        if not name:
            raise ConfigProblem(ErrorCode.invalid_request, "Default topic resources are not allowed.")
        if (problem := topic_name_problem(name)) is not None:
            raise ConfigProblem(ErrorCode.invalid_topic_exception, problem)
        if (problem := topic_configs_problem(configs, state)) is not None:
            raise ConfigProblem(ErrorCode.invalid_config, problem)
    elif kind == CONFIG_BROKER:
        if name:
            broker = java_integer(name)
            if broker is None:
                raise ConfigProblem(ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number.")
            if broker < 0:
                raise ConfigProblem(ErrorCode.invalid_request, "Invalid negative broker ID.")
    elif kind == CONFIG_CLIENT_METRICS:
        _client_metrics_problem(name, configs)
    elif kind == CONFIG_GROUP:
        if not name:
            raise ConfigProblem(ErrorCode.invalid_request, "Default group resources are not allowed.")
        _group_problem(configs, state)


def _parsed(defs: Definitions, configs: Mapping[str, str | None], unknown_code: int, unknown_words: str) -> dict[str, Any]:
    """Every name checked against `defs` first (an unknown one refused with `unknown_code`, in Kafka's HashMap
    order), then every value parsed, the first failure refused as INVALID_CONFIG."""
    for config in string_map_order(configs):
        if config not in defs:
            raise ConfigProblem(unknown_code, f"{unknown_words}{config}")
    try:
        return defs.parse_all(configs)
    except ConfigValueError as exc:
        raise ConfigProblem(ErrorCode.invalid_config, str(exc)) from exc


def _client_metrics_problem(name: str, configs: dict[str, str]) -> None:
    """ClientMetricsConfigs.validate."""
    if not name:
        raise ConfigProblem(ErrorCode.invalid_request, "Subscription name can't be empty")
    values = _parsed(kafka_configs().client_metrics, configs, ErrorCode.invalid_request, "Unknown client metrics configuration: ")
    if "interval.ms" in configs:
        interval = values["interval.ms"]
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise ConfigProblem(ErrorCode.invalid_request, f"Invalid value {interval} for interval.ms, interval must be between 100 and 3600000 (1 hour)")
    if "match" in configs:
        for pattern in values["match"]:
            if not _valid_match(pattern):
                raise ConfigProblem(ErrorCode.invalid_config, f"Illegal client matching pattern: {pattern}")


MATCH_PARAMS = frozenset({"client_instance_id", "client_id", "client_software_name", "client_software_version", "client_source_address", "client_source_port"})


def _valid_match(pattern: str) -> bool:
    parts = java_split_regex(pattern, "=")
    if len(parts) != 2 or parts[0].strip() not in MATCH_PARAMS:
        return False
    try:
        re.compile(parts[1].strip())
    except re.error:
        return False
    return True


def java_split_regex(text: str, separator: str) -> list[str]:
    parts = text.split(separator)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


# GroupConfig.validate's checks against the broker's bounds: (group config, broker minimum, broker maximum, checked only when set)
GROUP_BOUNDS = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", False),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", False),
    ("consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms", True),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", False),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms", False),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms", False),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit", False),
    ("share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks", False),
    ("share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms", True),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", False),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms", False),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas", False),
    ("streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms", True),
)


def _group_problem(configs: dict[str, str], state: ConfigState) -> None:
    """GroupConfig.validate: names, values over the broker's group defaults, then the broker's bounds."""
    defs = kafka_configs().group
    combined: dict[str, str | None] = {k: v for k, v in state.group_defaults().items() if (key := defs.get(k)) is not None and key.from_broker}
    combined.update(configs)
    values = _parsed(defs, combined, ErrorCode.invalid_config, "Unknown group config name: ")
    for config, low, high, only_when_set in GROUP_BOUNDS:
        if config not in values or (only_when_set and config not in combined):
            continue
        value = values[config]
        minimum = state.broker_number(low) if low is not None else None
        maximum = state.broker_number(high) if high is not None else None
        if minimum is not None and value < minimum:
            raise ConfigProblem(ErrorCode.invalid_config, f"{config} must be greater than or equal to {low}")
        if maximum is not None and value > maximum:
            raise ConfigProblem(ErrorCode.invalid_config, f"{config} must be less than or equal to {high}")
    for prefix in ("consumer", "share", "streams"):
        session, heartbeat = f"{prefix}.session.timeout.ms", f"{prefix}.heartbeat.interval.ms"
        if values[session] <= values[heartbeat]:
            raise ConfigProblem(ErrorCode.invalid_config, f"{session} must be greater than {heartbeat}")
