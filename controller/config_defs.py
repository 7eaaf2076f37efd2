"""Kafka's config definitions, as data, and its rules for reading a config value.

The definitions (names, types, defaults, documentation, validators, broker
synonyms, which broker configs are dynamic) come from kafka_configs.json,
which tools/kafka_configs/generate.py makes from Apache Kafka's own classes.
This module turns a config's text into a value the way Kafka's ConfigDef
does (`parse`), a value back into the text DescribeConfigs shows
(`to_text`), and says why Kafka would refuse a value, in Kafka's words
(`ConfigValueError`).
"""

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Any

from controller.java_order import DEFAULT_CAPACITY, LOAD_FACTOR, string_hash, string_map_order

# DescribeConfigsResponse.ConfigType, by ConfigDef.Type name; 0 is UNKNOWN.
CONFIG_TYPE_IDS = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8, "PASSWORD": 9}
UNKNOWN_CONFIG_TYPE = 0

_INT_BITS = {"INT": 32, "SHORT": 16, "LONG": 64}
#: Integer.parseInt's and Long.parseLong's text: Java takes any Unicode decimal digit (Character.digit), as
#: ``\d`` on a str pattern and Python's int() do; the two agree on everything this pattern lets through.
INTEGER = re.compile(r"[+-]?\d+")
#: No value of a Java long has more significant digits.
_LONG_DIGITS = 19
#: Double.parseDouble's text: ASCII digits only, or a Java hexadecimal float (binary exponent required).
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)")
_HEX_DOUBLE = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")
_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*")
LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")
_LEVEL_OR_DEFAULT = re.compile(r"\[(-?\d+),\.\.\.,(-?\d+)\] or (-?\d+)")
_ISO_DURATION = re.compile(
    r"[+-]?P(?:[+-]?[0-9]+D)?(?:T(?:[+-]?[0-9]+H)?(?:[+-]?[0-9]+M)?(?:[+-]?[0-9]+(?:[.,][0-9]{0,9})?S)?)?", re.IGNORECASE
)


class ConfigValueError(Exception):
    """Kafka's ConfigException: the message is what Kafka answers (as INVALID_CONFIG)."""


def java_trim(text: str) -> str:
    """Java's String.trim: strips every character up to and including U+0020 from both ends."""
    start, end = 0, len(text)
    while start < end and ord(text[start]) <= 32:
        start += 1
    while end > start and ord(text[end - 1]) <= 32:
        end -= 1
    return text[start:end]


def java_double(value: float) -> str:
    """Java's Double.toString: the shortest digits, plain from 10^-3 to 10^7, else computerized scientific notation."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in shortest.digits)
    exponent = int(shortest.exponent)  # abs(value) == int(digits) * 10**exponent
    if 1e-3 <= abs(value) < 1e7:
        if exponent >= 0:
            whole, fraction = digits + "0" * exponent, ""
        elif len(digits) + exponent > 0:
            whole, fraction = digits[: len(digits) + exponent], digits[len(digits) + exponent :]
        else:
            whole, fraction = "0", "0" * -(len(digits) + exponent) + digits
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{len(digits) - 1 + exponent}"


def java_text(value: Any) -> str:
    """What Java's toString gives for a parsed config value (in Kafka's error messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(java_text(item) for item in value) + "]"
    return str(value)


@dataclass(frozen=True)
class Validator:
    kind: str
    text: str
    minimum: str | None = None
    maximum: str | None = None
    values: tuple[str, ...] = ()
    empty_allowed: bool = True
    null_allowed: bool = False
    max_size: int | None = None
    parts: tuple["Validator", ...] = ()

    @staticmethod
    def of(data: Mapping[str, Any] | None) -> "Validator | None":
        if data is None:
            return None
        return Validator(
            kind=str(data["class"]),
            text=str(data["text"]),
            minimum=data.get("min"),
            maximum=data.get("max"),
            values=tuple(data.get("values", ())),
            empty_allowed=bool(data.get("empty_allowed", True)),
            null_allowed=bool(data.get("null_allowed", False)),
            max_size=data.get("max_size"),
            parts=tuple(v for v in (Validator.of(p) for p in data.get("validators", ())) if v is not None),
        )

    def check(self, name: str, value: Any) -> None:
        """Kafka's Validator.ensureValid for the validators the definitions use; others pass."""
        problem = self._problem(name, value)
        if problem is not None:
            raise ConfigValueError(problem)

    def _problem(self, name: str, value: Any) -> str | None:
        if self.kind == "Range":
            if value is None:
                return invalid(name, None, "Value must be non-null")
            if self.minimum is not None and float(value) < float(self.minimum):
                return invalid(name, value, f"Value must be at least {self.minimum}")
            if self.maximum is not None and float(value) > float(self.maximum):
                return invalid(name, value, f"Value must be no more than {self.maximum}")
        elif self.kind == "ValidString":
            if value not in self.values:
                return invalid(name, value, "String must be one of: " + ", ".join(self.values))
        elif self.kind == "CaseInsensitiveValidString":
            if value is None or str(value).upper() not in self.values:
                return invalid(name, value, "String must be one of (case insensitive): " + ", ".join(self.values))
        elif self.kind == "ValidList":
            return self._list_problem(name, value)
        elif self.kind == "ListSize":
            if self.max_size is not None and len(value) > self.max_size:
                return invalid(name, value, f"exceeds maximum list size of [{self.max_size}].")
        elif self.kind == "CompositeValidator":
            for part in self.parts:
                if (problem := part._problem(name, value)) is not None:
                    return problem
        elif self.kind == "NonNullValidator":
            if value is None:
                return invalid(name, "null", "entry must be non null")
        elif self.kind == "NonEmptyString":
            if value == "":
                return invalid(name, value, "String must be non-empty")
        elif self.kind == "ThrottledReplicaListValidator":
            items = [java_trim(str(item)) for item in value]
            if not (all(re.fullmatch(r"([0-9]+:[0-9]+)?", item) for item in items) or "".join(items) == "*"):
                return invalid(
                    name,
                    value,
                    f"{name} must be the literal '*' or a list of replicas in the following format: "
                    "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
                )
        elif self.kind == "LambdaValidator" and (levels := _LEVEL_OR_DEFAULT.fullmatch(self.text)) is not None:
            low, high, default = (int(g) for g in levels.groups())
            if value is None:
                return invalid(name, None, "Value must be non-null")
            if value > high or (value < low and value != default):
                return invalid(name, value, f"Value must be between {low} and {high} or equal to {default}")
        elif self.kind == "Validator" and self.text.startswith("[latest, earliest, by_duration"):
            # share.auto.offset.reset: ShareGroupAutoOffsetResetStrategy.Validator
            text = str(value)
            lowered = text.lower()
            duration = lowered[len("by_duration:") :] if lowered.startswith("by_duration:") else None
            if lowered not in ("latest", "earliest") and (duration is None or not _valid_duration(text[len("by_duration:") :])):
                return invalid(
                    name,
                    value,
                    f"Invalid value `{text}` for configuration {name}. "
                    "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
                )
        return None

    def _list_problem(self, name: str, value: Any) -> str | None:
        if value is None:
            return None if self.null_allowed else f"Configuration '{name}' values must not be null."
        if not self.empty_allowed and not value:
            valid = "[" + ", ".join(self.values) + "]" if self.values else "any non-empty value"
            return f"Configuration '{name}' must not be empty. Valid values include: {valid}"
        if len(set(value)) != len(value):
            return f"Configuration '{name}' values must not be duplicated."
        for item in value:
            if item == "":
                return f"Configuration '{name}' values must not be empty."
            if self.values and item not in self.values:
                return invalid(name, item, "String must be one of: " + ", ".join(self.values))
        return None


def _valid_duration(text: str) -> bool:
    """Java's Duration.parse, roughly: PnDTnHnMn.nS with at least one part, and not negative."""
    match = _ISO_DURATION.fullmatch(text)
    if match is None or text.upper().endswith("T") or text.upper().lstrip("+-") == "P":
        return False
    return not text.startswith("-")


def invalid(name: str, value: Any, message: str | None) -> str:
    """ConfigException(name, value, message)'s message."""
    text = value if isinstance(value, str) else java_text(value)
    return f"Invalid value {text} for configuration {name}" + ("" if message is None else f": {message}")


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
    raw = json.loads(resources.files("controller").joinpath("kafka_configs.json").read_text(encoding="utf-8"))
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


@dataclass(frozen=True)
class KafkaFeatures:
    """The feature levels of the Kafka release (Feature, MetadataVersion, QuorumFeatures)."""

    supported: dict[str, tuple[int, int]]
    format_defaults: dict[str, int]
    latest_metadata_version: int
    metadata_changes: dict[int, bool]
    """Each metadata.version level, and whether it changed the metadata (didMetadataChange)."""
    dependencies: dict[str, dict[int, dict[str, int]]]
    minimum_metadata_version: tuple[int, str]
    names: frozenset[str]
    """Every name Feature.featureFromName knows, test features included."""

    def metadata_changed_between(self, high: int, low: int) -> bool:
        """MetadataVersion.checkIfMetadataChanged for a downgrade from `high` to `low`."""
        version = high
        while not self.metadata_changes.get(version, True) and version != low and version - 1 in self.metadata_changes:
            version -= 1
        return version != low

    def dependency_problem(self, name: str, level: int, proposed: Mapping[str, int]) -> str | None:
        """Feature.featureFromName, then Feature.validateVersion against the levels the update would leave, in Kafka's words.

        A name Kafka does not know gets here only at level 0, which its range check lets through.
        """
        prefix = f"Invalid update version {level} for feature {name}."
        if name not in self.names:
            return f"{prefix} Feature {name} not found."
        minimum, minimum_name = self.minimum_metadata_version
        metadata = proposed.get("metadata.version")
        if level >= 1 and (metadata is None or metadata < minimum):
            return f"{prefix} {name} could not be set to {level} because it depends on metadata.version={minimum} ({minimum_name})"
        for feature, needed in self.dependencies.get(name, {}).get(level, {}).items():
            have = proposed.get(feature)
            if have is None or have < needed:
                return f"{prefix} {name} could not be set to {level} because it depends on {feature} level {needed}"
        return None


@cache
def kafka_features() -> KafkaFeatures:
    raw = json.loads(resources.files("controller").joinpath("kafka_configs.json").read_text(encoding="utf-8"))["features"]
    return KafkaFeatures(
        supported={str(n): (int(r[0]), int(r[1])) for n, r in raw["supported"].items()},
        format_defaults={str(n): int(v) for n, v in raw["format_defaults"].items()},
        latest_metadata_version=int(raw["latest_production_metadata_version"]),
        metadata_changes={int(v["level"]): bool(v["changed"]) for v in raw["metadata_versions"]},
        dependencies={str(n): {int(lv): {str(f): int(x) for f, x in deps.items()} for lv, deps in levels.items()} for n, levels in raw["dependencies"].items()},
        minimum_metadata_version=(int(raw["minimum_metadata_version"]["level"]), str(raw["minimum_metadata_version"]["name"])),
        names=frozenset(str(n) for n in raw["names"]),
    )


def generated_defaults(kind: str) -> dict[str, str | None]:
    """What Kafka itself listed for a fresh topic, group or client-metrics resource (for tests)."""
    raw = json.loads(resources.files("controller").joinpath("kafka_configs.json").read_text(encoding="utf-8"))
    return dict(raw[kind]["defaults"])


def java_integer(text: str, bits: int = 32) -> int | None:
    """Short/Integer/Long.parseX of `text` for a `bits`-wide type: the value, or None where Java throws
    NumberFormatException. Leading zeros are dropped first, so that no text reaches int() with more digits
    than a long has: int() refuses over 4,300 digits, and a config value may hold 32,767 characters."""
    if INTEGER.fullmatch(text) is None:
        return None
    sign, digits = (text[0], text[1:]) if text[0] in "+-" else ("", text)
    start = 0
    while start < len(digits) - 1 and unicodedata.decimal(digits[start]) == 0:
        start += 1
    if len(digits) - start > _LONG_DIGITS:
        return None
    number = int(sign + digits[start:])
    bound = 2 ** (bits - 1)
    return number if -bound <= number < bound else None


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


def java_hash_map_order(keys: Iterable[str], *, copy_of_size: int) -> list[str]:
    """The order of a java.util.HashMap made by putAll of `copy_of_size` entries into an empty one (its table sized up front)."""
    return string_map_order(keys, int(copy_of_size / LOAD_FACTOR + 1.0) if copy_of_size else DEFAULT_CAPACITY)


def scala_hash_map_order(keys: Iterable[str]) -> list[str]:
    """The order a scala.collection.mutable.HashMap (2.13) iterates `keys` in: by bucket, then by hash within one."""
    ordered = list(keys)
    capacity = DEFAULT_CAPACITY
    while len(ordered) > capacity * LOAD_FACTOR:
        capacity *= 2

    def spread(key: str) -> int:
        h = string_hash(key) & 0xFFFFFFFF
        return h ^ (h >> 16)

    return sorted(ordered, key=lambda k: (spread(k) & (capacity - 1), spread(k)))
