"""Build a kio entity of any version from one version-independent dict.

Kafka messages grow fields over versions; handlers describe an answer once as
a plain dict (a superset of all versions' fields) and `build_entity` keeps the
fields the chosen version has, recursing into nested entities.
"""

import dataclasses
import datetime
import types
import typing
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(schema: type[Any]) -> dict[str, Any]:
    hints = _HINTS.get(schema)
    if hints is None:
        hints = _HINTS[schema] = typing.get_type_hints(schema)
    return hints


def _entity_type(hint: Any) -> type[Any] | None:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if arg is not type(None) and dataclasses.is_dataclass(arg):
                return typing.cast(type[Any], arg)
    return None


def _without_none(hint: Any) -> Any:
    """`X | None` -> `X`, so nullable arrays and entities convert like required ones."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    hint = _without_none(hint)
    origin = typing.get_origin(hint)
    if origin is tuple:
        (item_hint, *_) = typing.get_args(hint)
        return tuple(_convert(item_hint, item) for item in value)
    entity = _entity_type(hint)
    if entity is not None and isinstance(value, Mapping):
        return build_entity(entity, value)
    if hint is ErrorCode:
        return ErrorCode(int(value))
    if isinstance(hint, type) and issubclass(hint, datetime.timedelta) and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    return value


def build_entity(schema: type[Any], values: Mapping[str, Any]) -> Any:
    """Instantiate `schema` from `values`, ignoring keys this version lacks."""
    hints = _hints(schema)
    kwargs = {}
    for field in dataclasses.fields(schema):
        if field.name in values:
            kwargs[field.name] = _convert(hints[field.name], values[field.name])
    return schema(**kwargs)
