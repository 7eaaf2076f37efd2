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

import struct
from dataclasses import dataclass
from typing import Any

from envelope.bounded_plan import _ARRAY, _BYTES, _ENTITY, _FIXED, _STR, _Entity, _Field, _min_size, plan_of
from envelope.errors import ProtocolError
from envelope.java_types import SHORT_MAX
from envelope.varints import read_uvarint, write_uvarint

# Kafka's Readable.readString: a string longer than Short.MAX_VALUE is malformed.
MAX_STRING_LENGTH = SHORT_MAX

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def _path(what: str, name: str) -> str:
    return f"{what}.{name}" if name else what


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


__all__ = ["MAX_STRING_LENGTH", "LargeArray", "Prepared", "check", "prepare", "stub_without"]
