"""Kafka's config definitions, as data, and its rules for reading a config value by its definition.

The definitions (names, types, defaults, documentation, validators, broker
synonyms, which broker configs are dynamic) come from kafka_configs.json,
which tools/kafka_configs/generate.py makes from Apache Kafka's own classes.
This module turns a config's text into a value the way Kafka's ConfigDef
does (`parse`) and a value back into the text DescribeConfigs shows
(`to_text`); the validators are in config_validators.py, Java's own text
rules in java_values.py.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from controller.config_validators import ConfigValueError, Validator, invalid
from controller.java_values import java_double, java_integer, java_text, java_trim
from envelope.config_sources import UNKNOWN_CONFIG_TYPE as UNKNOWN_CONFIG_TYPE

# DescribeConfigsResponse.ConfigType, by ConfigDef.Type name; 0 is UNKNOWN.
CONFIG_TYPE_IDS = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8, "PASSWORD": 9}

# Each integer type's width in bits: the range Java's parse of it accepts
_INT_BITS = {"INT": 32, "SHORT": 16, "LONG": 64}
#: Double.parseDouble's text: ASCII digits only, or a Java hexadecimal float (binary exponent required).
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)")
_HEX_DOUBLE = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")
_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*")
LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")


def generated_data() -> dict[str, Any]:
    """kafka_configs.json as generate.py wrote it."""
    data: dict[str, Any] = json.loads(resources.files("controller").joinpath("kafka_configs.json").read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str
    default: str | None
    """What DescribeConfigs shows for the default: None when there is none (or it is null)."""
    required: bool
    internal: bool
    documentation: str | None
    validator: Validator | None
    dynamic: bool = False
    per_broker: bool = False
    synonyms: tuple[str, ...] = ()
    broker_synonym: str | None = None
    from_broker: bool = False
    broker_synonyms: tuple[tuple[str, int], ...] = ()
    """A topic config's broker synonyms, each with the factor that turns its value into this config's unit."""

    @property
    def type_id(self) -> int:
        return CONFIG_TYPE_IDS.get(self.type, UNKNOWN_CONFIG_TYPE)

    @property
    def sensitive(self) -> bool:
        return self.type == "PASSWORD"


@dataclass(frozen=True)
class Definitions:
    """One kind's ConfigDef: keys in definition order, and the order DescribeConfigs lists them in."""

    keys: dict[str, ConfigKey]
    describe_order: tuple[str, ...]

    def __contains__(self, name: object) -> bool:
        return name in self.keys

    def get(self, name: str) -> ConfigKey | None:
        return self.keys.get(name)

    def parse_all(self, props: Mapping[str, str | None]) -> dict[str, Any]:
        """ConfigDef.parse: every key in definition order, the first failure raised."""
        values: dict[str, Any] = {}
        for key in self.keys.values():
            if key.name in props:
                values[key.name] = parse(key, props[key.name])
            elif key.required:
                raise ConfigValueError(f'Missing required configuration "{key.name}" which has no default value.')
            else:
                values[key.name] = None if key.default is None else parse(key, key.default)
        return values


@dataclass(frozen=True)
class KafkaConfigs:
    version: str
    broker: Definitions
    broker_dynamic_only: dict[str, ConfigKey]
    """Dynamic broker configs outside KafkaConfig's definition (the replication and log-dir throttles)."""
    listener_mechanism_configs: frozenset[str]
    cluster_level_listener_configs: frozenset[str]
    listener_prefix_only: frozenset[str]
    topic: Definitions
    group: Definitions
    client_metrics: Definitions
    log_levels: tuple[str, ...]

    def broker_type(self, name: str) -> str | None:
        """KafkaConfig.configType: the exact name, a dynamic-only one, or the first synonym's (listener overrides)."""
        key = self.broker.get(name) or self.broker_dynamic_only.get(name)
        if key is not None:
            return key.type
        for synonym in self.broker_synonyms(name):
            if (found := self.broker.get(synonym)) is not None:
                return found.type
        return None

    def broker_synonyms(self, name: str, *, match_listener_override: bool = True) -> list[str]:
        """DynamicBrokerConfig.brokerConfigSynonyms."""
        key = self.broker.get(name)
        if key is not None and key.synonyms:
            return list(key.synonyms)
        if match_listener_override and (match := LISTENER_CONFIG.fullmatch(name)) is not None:
            base = match.group(1)
            mechanism = next((m for m in sorted(self.listener_mechanism_configs) if base.endswith(m)), None)
            return [name, mechanism or base]
        return [name]


def _key(data: Mapping[str, Any]) -> ConfigKey:
    synonyms = tuple(data.get("synonyms", ()))
    return ConfigKey(
        name=str(data["name"]),
        type=str(data["type"]),
        default=data.get("default"),
        required=bool(data.get("required", False)),
        internal=bool(data.get("internal", False)),
        documentation=data.get("documentation"),
        validator=Validator.of(data.get("validator")),
        dynamic=bool(data.get("dynamic", False)),
        per_broker=bool(data.get("per_broker", False)),
        synonyms=synonyms if synonyms != (data["name"],) else (),
        broker_synonym=data.get("broker_synonym"),
        from_broker=bool(data.get("from_broker", False)),
        broker_synonyms=tuple((str(name), int(factor)) for name, factor in data.get("broker_synonyms", ())),
    )


def _definitions(data: Mapping[str, Any]) -> Definitions:
    return Definitions({k.name: k for k in (_key(item) for item in data["configs"])}, tuple(data["describe_order"]))


@cache
def kafka_configs() -> KafkaConfigs:
    """The definitions of the Kafka release the embedded controller answers as (read once)."""
    raw = generated_data()
    broker = raw["broker"]
    return KafkaConfigs(
        version=str(raw["kafka_version"]),
        broker=_definitions(broker),
        broker_dynamic_only={k.name: k for k in (_key(item) for item in broker["dynamic_only"])},
        listener_mechanism_configs=frozenset(broker["listener_mechanism_configs"]),
        cluster_level_listener_configs=frozenset(broker["cluster_level_listener_configs"]),
        listener_prefix_only=frozenset(broker["listener_prefix_only"]),
        topic=_definitions(raw["topic"]),
        group=_definitions(raw["group"]),
        client_metrics=_definitions(raw["client_metrics"]),
        log_levels=tuple(raw["log_levels"]),
    )


def generated_defaults(kind: str) -> dict[str, str | None]:
    """What Kafka itself listed for a fresh topic, group or client-metrics resource (for tests)."""
    raw = generated_data()
    return dict(raw[kind]["defaults"])


def parse_type(name: str, value: str | None, kind: str) -> Any:
    """ConfigDef.parseType for a config given as text."""
    if value is None:
        return None
    trimmed = java_trim(value)
    if kind == "BOOLEAN":
        if trimmed.lower() == "true":
            return True
        if trimmed.lower() == "false":
            return False
        raise ConfigValueError(invalid(name, value, "Expected value to be either true or false"))
    if kind in ("STRING", "PASSWORD", "CLASS"):
        return trimmed  # a class name is not loaded: the embedded controller runs no Java
    if kind in _INT_BITS:
        number = java_integer(trimmed, _INT_BITS[kind])
        if number is None:
            raise ConfigValueError(invalid(name, value, f"Not a number of type {kind}"))
        return number
    if kind == "DOUBLE":
        if _HEX_DOUBLE.fullmatch(trimmed) is not None:
            return float.fromhex(trimmed.rstrip("fFdD"))
        if _DOUBLE.fullmatch(trimmed) is None:
            raise ConfigValueError(invalid(name, value, "Not a number of type DOUBLE"))
        return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
    if kind == "LIST":
        return [] if not trimmed else _COMMA_WITH_WHITESPACE.split(trimmed)
    return trimmed


def parse(key: ConfigKey, value: str | None) -> Any:
    """ConfigDef.parseValue: the type, duplicates dropped from a validated list, then the validator."""
    parsed = parse_type(key.name, value, key.type)
    if key.validator is not None and key.validator.kind == "ValidList" and isinstance(parsed, list):
        parsed = list(dict.fromkeys(parsed))
    if key.validator is not None:
        key.validator.check(key.name, parsed)
    return parsed


def to_text(value: Any, kind: str | None) -> str | None:
    """ConfigDef.convertToString: the text DescribeConfigs shows for a parsed value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(java_text(item) for item in value)
    if isinstance(value, float) or kind == "DOUBLE":
        return java_double(float(value))
    return str(value)


def normalized(key: ConfigKey | None, value: str | None) -> str | None:
    """A stored value as Kafka shows it once parsed (`compact, delete` -> `compact,delete`, `1` -> `1.0`)."""
    if key is None or value is None:
        return value
    try:
        return to_text(parse(key, value), key.type)
    except ConfigValueError:
        return value
