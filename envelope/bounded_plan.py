"""The bounded reader's plan of a kio schema: each field's kind, nullability and smallest size, compiled once per class.

The pre-pass in bounded.py walks a body by this plan instead of by kio's
dataclasses, so that every field's rule (a fixed width, a length-prefixed
string or bytes, a nested entity, an array, a tagged field) is looked up once
and the smallest size of an array's element is known before its count is
trusted. The fuzzer builds bodies from the same plans. Pure, no IO.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any

from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveField, PrimitiveTupleField, classify_field, is_optional

_FIXED_SIZES: dict[str, int] = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_STRING = "string"
_BYTES_LIKE = frozenset({"bytes", "records"})

# Field kinds of a compiled plan.
_FIXED, _STR, _BYTES, _ENTITY, _ARRAY = range(5)


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kind: int
    nullable: bool
    size: int = 0  # _FIXED: width in bytes
    entity: "_Entity | None" = None  # _ENTITY, or an _ARRAY of entities
    element: "_Field | None" = None  # _ARRAY: one element


@dataclass(frozen=True, slots=True)
class _Entity:
    name: str
    schema: type[Any]
    flexible: bool
    positional: tuple[_Field, ...]
    tagged: dict[int, _Field]
    min_size: int


def _primitive(name: str, kafka_type: str, nullable: bool) -> _Field:
    if kafka_type in _FIXED_SIZES:
        return _Field(name, _FIXED, nullable, size=_FIXED_SIZES[kafka_type])
    if kafka_type == _STRING:
        return _Field(name, _STR, nullable)
    if kafka_type in _BYTES_LIKE:
        return _Field(name, _BYTES, nullable)
    raise TypeError(f"no bounded reader for kafka type {kafka_type!r} of field {name}")


def _element_nullable(field: dataclasses.Field[Any]) -> bool:
    args = getattr(field.type, "__args__", ())
    inner = args[0] if args else None
    return type(None) in getattr(inner, "__args__", ())


def _min_size(field: _Field, flexible: bool) -> int:
    if field.kind == _FIXED:
        return field.size
    if field.kind == _ENTITY:
        assert field.entity is not None
        return 1 if field.nullable else field.entity.min_size
    if flexible:
        return 1  # a compact length is at least one varint byte
    return 2 if field.kind == _STR else 4


_PLANS: dict[type[Any], _Entity] = {}


def plan_of(schema: type[Any]) -> _Entity:
    """The bounded reader's view of a kio schema class (cached per class)."""
    plan = _PLANS.get(schema)
    if plan is None:
        plan = _PLANS[schema] = _compile(schema)
    return plan


def _compile(schema: type[Any]) -> _Entity:
    flexible = bool(schema.__flexible__)
    positional: list[_Field] = []
    tagged: dict[int, _Field] = {}
    for field in dataclasses.fields(schema):
        if not field.init:
            continue
        kind = classify_field(field)
        nullable = is_optional(field)
        kafka_type = field.metadata.get("kafka_type", "")
        planned: _Field
        if isinstance(kind, PrimitiveField):
            planned = _primitive(field.name, kafka_type, nullable)
        elif isinstance(kind, EntityField):
            planned = _Field(field.name, _ENTITY, nullable, entity=plan_of(kind.type_))
        elif isinstance(kind, PrimitiveTupleField):
            element = _primitive(field.name, kafka_type, _element_nullable(field))
            planned = _Field(field.name, _ARRAY, nullable, element=element)
        else:
            assert isinstance(kind, EntityTupleField)
            element_plan = plan_of(kind.type_)
            planned = _Field(field.name, _ARRAY, nullable, element=_Field(field.name, _ENTITY, False, entity=element_plan))
        if "tag" in field.metadata:
            tagged[int(field.metadata["tag"])] = planned
        else:
            positional.append(planned)
    min_size = sum(_min_size(f, flexible) for f in positional) + (1 if flexible else 0)
    return _Entity(schema.__name__, schema, flexible, tuple(positional), tagged, min_size)
