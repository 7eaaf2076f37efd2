"""Kafka's config validators (ConfigDef.Validator and the ones its configs define), and the words they refuse a value in.

kafka_configs.json names each config's validator with its parameters; a
`Validator` checks a parsed value as that validator's ensureValid does and
raises ConfigValueError, whose message is Kafka's ConfigException message.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.java_values import java_text, java_trim

_LEVEL_OR_DEFAULT = re.compile(r"\[(-?\d+),\.\.\.,(-?\d+)\] or (-?\d+)")
_ISO_DURATION = re.compile(
    r"[+-]?P(?:[+-]?[0-9]+D)?(?:T(?:[+-]?[0-9]+H)?(?:[+-]?[0-9]+M)?(?:[+-]?[0-9]+(?:[.,][0-9]{0,9})?S)?)?", re.IGNORECASE
)


class ConfigValueError(Exception):
    """Kafka's ConfigException: the message is what Kafka answers (as INVALID_CONFIG)."""


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
