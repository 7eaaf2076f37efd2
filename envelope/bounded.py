"""A bounded pre-pass over a message body, run before kio decodes it.

kio's native reader trusts declared lengths: it reserves `count` slots for an
array before it looks at how many bytes are left, and a failed allocation
aborts the process instead of raising. It also refuses any tagged field its
schema does not know, where Kafka's generated parsers skip it. This module
walks the same schema kio will use, field by field, and checks every declared
length the way Kafka's parsers do before anything is allocated:

- an array's count times the smallest size of one element must fit in the
  bytes left, and a null array is only accepted where the schema allows null;
- a string is at most 32767 bytes (Kafka's `readString` limit) and fits;
- bytes and records fit; varints are at most 5 bytes long;
- a tagged field's size fits, and a known tagged field parses inside it.

When a tagged-field section holds tags the schema does not know, `prepare`
returns a copy of the body without them, for kio to decode. The caller still
forwards the original bytes: the copy only feeds the audit and local answers.

Pure Python and sans-IO: no trio, no allocation proportional to a declared
length, and every loop is bounded by the bytes it consumes.
"""

import dataclasses
import struct
from dataclasses import dataclass
from typing import Any

from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveField, PrimitiveTupleField, classify_field, is_optional

from envelope.errors import ProtocolError

# Kafka's Readable.readString: a string longer than Short.MAX_VALUE is malformed.
MAX_STRING_LENGTH = 32767
_MAX_VARINT_BYTES = 5
_INT32_MAX = 2**31 - 1

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

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


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


def _path(what: str, name: str) -> str:
    return f"{what}.{name}" if name else what


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


def read_uvarint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes, as Kafka's ByteUtils reads it: (value, new position)."""
    if pos < end and data[pos] < 0x80:
        return data[pos], pos + 1  # the usual one-byte varint: lengths and counts under 128
    value = 0
    shift = 0
    for index in range(_MAX_VARINT_BYTES):
        if pos + index >= end:
            raise ProtocolError("varint runs past the end of the message")
        byte = data[pos + index]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value > _INT32_MAX:
                raise ProtocolError(f"varint {value} does not fit in a signed 32-bit integer")
            return value, pos + index + 1
        shift += 7
    raise ProtocolError("varint is longer than 5 bytes")


def skip_tagged_fields(frame: bytes, offset: int) -> int:
    """The offset after a header's tagged-field section; every tag skipped, as Kafka skips tags it does not know."""
    end = len(frame)
    count, offset = read_uvarint(frame, offset, end)
    if count * 2 > end - offset:
        raise ProtocolError(f"header: {count} tagged fields but only {end - offset} bytes remain")
    for _ in range(count):
        _, offset = read_uvarint(frame, offset, end)
        length, offset = read_uvarint(frame, offset, end)
        offset += length
        if offset > end:
            raise ProtocolError("tagged field runs past the end of the header")
    return offset


def write_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@dataclass(frozen=True, slots=True)
class LargeArray:
    """A top-level array of entities too long to decode in one native call: where its count is, and each element."""

    field: str
    element: type[Any]
    count_at: int
    end: int
    bounds: list[tuple[int, int]]
    flexible: bool


def stub_without(source: bytes, start: int, end: int, arrays: list[LargeArray]) -> bytes:
    """The body `source[start:end]` with each of `arrays` emptied, for kio to decode the rest in one call."""
    stub = bytearray()
    pos = start
    for array in arrays:
        stub += source[pos : array.count_at]
        stub += write_uvarint(1) if array.flexible else _INT32.pack(0)
        pos = array.end
    stub += source[pos:end]
    return bytes(stub)


class _Reader:
    """One walk over one body; `out` is None while only checking, else the copy without unknown tags."""

    __slots__ = ("data", "depth", "large", "large_threshold", "out", "unknown_tags")

    def __init__(self, data: bytes, out: bytearray | None, large_threshold: int | None = None) -> None:
        self.data = data
        self.out = out
        self.unknown_tags = 0
        self.depth = 0
        self.large_threshold = large_threshold
        self.large: list[LargeArray] = []

    def length(self, pos: int, end: int, flexible: bool, what: str, wide: bool, name: str = "") -> tuple[int, int]:
        """A length or count prefix: (-1 for null, new position). The field's path is `what`, or `what.name` when a
        name is given (built only for an error message: formatting it for every field took half the walk)."""
        if flexible:
            raw, pos = read_uvarint(self.data, pos, end)
            return raw - 1, pos
        width = 4 if wide else 2
        if pos + width > end:
            raise ProtocolError(f"{_path(what, name)}: length runs past the end of the message")
        (value,) = (_INT32 if wide else _INT16).unpack_from(self.data, pos)
        if value < -1:
            raise ProtocolError(f"{_path(what, name)}: invalid length {value}")
        return int(value), pos + width

    def field(self, field: _Field, pos: int, end: int, flexible: bool, where: str) -> int:
        kind = field.kind
        if kind == _FIXED:
            if pos + field.size > end:
                raise ProtocolError(f"{where}.{field.name}: message ends inside the field")
            return pos + field.size
        if kind == _ENTITY:
            what = f"{where}.{field.name}"
            assert field.entity is not None
            if field.nullable:
                if pos >= end:
                    raise ProtocolError(f"{what}: message ends inside the field")
                marker = self.data[pos]
                if self.out is not None:
                    self.out.append(marker)
                if marker == 0xFF:
                    return pos + 1
                if marker != 1:
                    raise ProtocolError(f"{what}: invalid null marker {marker}")
                pos += 1
            return self.entity(field.entity, pos, end, what)
        if kind == _ARRAY:
            return self.array(field, pos, end, flexible, f"{where}.{field.name}")
        size, body = self.length(pos, end, flexible, where, kind == _BYTES, field.name)
        if size < 0:
            if not field.nullable:
                raise ProtocolError(f"{where}.{field.name}: non-nullable field was serialized as null")
            return body
        if kind == _STR and size > MAX_STRING_LENGTH:
            raise ProtocolError(f"{where}.{field.name}: string of {size} bytes is longer than {MAX_STRING_LENGTH}")
        if size > end - body:
            raise ProtocolError(f"{where}.{field.name}: length {size} but only {end - body} bytes remain")
        return body + size

    def array(self, field: _Field, pos: int, end: int, flexible: bool, what: str) -> int:
        element = field.element
        assert element is not None
        count, body = self.length(pos, end, flexible, what, wide=True)
        if count < 0:
            if not field.nullable:
                raise ProtocolError(f"{what}: non-nullable array was serialized as null")
            if self.out is not None:
                self.out += self.data[pos:body]
            return body
        smallest = max(1, _min_size(element, flexible))
        if count * smallest > end - body:
            raise ProtocolError(f"{what}: {count} elements of at least {smallest} bytes but only {end - body} bytes remain")
        threshold = self.large_threshold
        if threshold is not None and count > threshold and self.depth == 1 and element.entity is not None and self.out is None:
            bounds = []
            for _ in range(count):
                after = self.entity(element.entity, body, end, what)
                bounds.append((body, after))
                body = after
            self.large.append(LargeArray(field.name, element.entity.schema, pos, body, bounds, flexible))
            return body
        if element.kind != _ENTITY or self.out is None:
            for _ in range(count):
                body = self.field(element, body, end, flexible, what)
            if self.out is not None:
                self.out += self.data[pos:body]
            return body
        self.out += self.data[pos:body]
        assert element.entity is not None
        for _ in range(count):
            body = self.entity(element.entity, body, end, what)
        return body

    def entity(self, entity: _Entity, pos: int, end: int, where: str) -> int:
        flexible = entity.flexible
        self.depth += 1
        for field in entity.positional:
            start = pos
            pos = self.field(field, pos, end, flexible, where)
            if self.out is not None and field.kind not in (_ENTITY, _ARRAY):
                self.out += self.data[start:pos]
        if flexible:
            pos = self.tags(entity, pos, end, where)
        self.depth -= 1
        return pos

    def tags(self, entity: _Entity, pos: int, end: int, where: str) -> int:
        count, pos = read_uvarint(self.data, pos, end)
        # Each tagged field takes at least two bytes (tag and size varints).
        if count * 2 > end - pos:
            raise ProtocolError(f"{where}: {count} tagged fields but only {end - pos} bytes remain")
        kept: list[tuple[int, bytes]] = []
        for _ in range(count):
            tag, pos = read_uvarint(self.data, pos, end)
            size, pos = read_uvarint(self.data, pos, end)
            if size > end - pos:
                raise ProtocolError(f"{where}: tagged field {tag} of {size} bytes but only {end - pos} bytes remain")
            known = entity.tagged.get(tag)
            if known is None:
                # Kafka keeps unknown tags aside without reading them; so do we (the copy leaves them out).
                self.unknown_tags += 1
            else:
                kept.append((tag, self.tagged_value(known, pos, pos + size, entity.flexible, f"{where}[tag {tag}]")))
            pos += size
        if self.out is not None:
            self.out += write_uvarint(len(kept))
            for tag, value in kept:
                self.out += write_uvarint(tag) + write_uvarint(len(value)) + value
        return pos

    def tagged_value(self, field: _Field, pos: int, end: int, flexible: bool, what: str) -> bytes:
        """A known tagged field, read inside its declared size; its bytes for the copy."""
        if self.out is None:
            after = self.field(field, pos, end, flexible, what)
            value = b""
        else:
            outer, self.out = self.out, bytearray()
            try:
                after = self.field(field, pos, end, flexible, what)
                if field.kind not in (_ENTITY, _ARRAY):
                    self.out += self.data[pos:after]
                value = bytes(self.out)
            finally:
                self.out = outer
        if after != end:
            raise ProtocolError(f"{what}: value takes {after - pos} bytes, its size says {end - pos}")
        return value


def check(schema: type[Any], data: bytes, offset: int = 0) -> tuple[int, int]:
    """Walk one `schema` body at `offset`: (end offset, unknown tagged fields). Raises ProtocolError."""
    reader = _Reader(data, None)
    end = reader.entity(plan_of(schema), offset, len(data), schema.__name__)
    return end, reader.unknown_tags


def _walk(schema: type[Any], data: bytes, offset: int, large_threshold: int | None) -> tuple[_Reader, int]:
    reader = _Reader(data, None, large_threshold)
    return reader, reader.entity(plan_of(schema), offset, len(data), schema.__name__)


@dataclass(frozen=True, slots=True)
class Prepared:
    """What kio may safely decode: `source[start:end]` is the body, `consumed` its size in the original bytes."""

    source: bytes
    start: int
    end: int
    consumed: int
    unknown_tags: int
    large: list[LargeArray]
    """Top-level arrays over the threshold `prepare` was given, found in `source` (decode them element by element)."""


def prepare(schema: type[Any], data: bytes, offset: int = 0, *, large_threshold: int | None = None) -> Prepared:
    """The original `data` when the body holds no unknown tagged field; otherwise a copy
    of the body alone without them. Raises ProtocolError on anything Kafka refuses.

    With `large_threshold`, top-level arrays of more entities than that are located too:
    kio decodes a body in one native call that holds the interpreter lock throughout
    (60 ms for 100,000 topic names), element by element the lock changes hands between calls."""
    checked, end = _walk(schema, data, offset, large_threshold)
    if not checked.unknown_tags:
        return Prepared(data, offset, end, end - offset, 0, checked.large)
    writer = _Reader(data, bytearray())
    writer.entity(plan_of(schema), offset, len(data), schema.__name__)
    assert writer.out is not None
    copy = bytes(writer.out)
    # Unknown tags are rare: the copy is walked once more to find its large arrays.
    large = _walk(schema, copy, 0, large_threshold)[0].large if large_threshold is not None else []
    return Prepared(copy, 0, len(copy), end - offset, checked.unknown_tags, large)


__all__ = ["MAX_STRING_LENGTH", "LargeArray", "Prepared", "check", "plan_of", "prepare", "read_uvarint", "stub_without", "write_uvarint"]
