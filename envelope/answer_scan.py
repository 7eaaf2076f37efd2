"""An admin answer read for its audit outcome in one pass: the top-level error code and each resource's name, code and message.

The outcome record needs three things of each result; the full decode (the bounded pre-pass of bounded.py,
then kio) builds every field of the answer, and a CreateTopics answer of Kafka carries some 40 config entries
per new topic (KIP-525) that the audit never reads. This scan walks the same bytes once, by a plan compiled
from the same kio schema, and keeps only the three things.

It is a fast path, never a second opinion: it accepts exactly what the full decode accepts, or gives up.
Every rule of the pre-pass is checked the same way (lengths within the bytes left, Kafka's string limit, a
null only where the schema allows one, tagged fields within their sizes), and so is every rule of kio's
readers that bytes can break (UTF-8 strings, booleans of 0 or 1, error codes kio knows). Anything else, an
unknown tagged field, a varint over one byte where a string's UTF-8 is in doubt, any malformation, is
`None`, and the caller decodes the answer fully: the refusal, or the rare shape, comes from the one decoder.
tests/envelope/test_answer_scan.py holds the scan to the full decode for every forwarded API and version,
on generated and mutated answers; the fuzzer's response targets compare the two as well.

Pure and sans-IO, bounded like the pre-pass: no allocation follows a declared length, and every loop
consumes bytes.
"""

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio._kio_native import compact_array_reader, legacy_array_reader
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from kio.serial.errors import SerialError

from envelope.bounded import MAX_STRING_LENGTH
from envelope.bounded_plan import _ARRAY, _ENTITY, _FIXED, _STR, _Entity, _Field, plan_of
from envelope.codec import response_header_version, response_schema
from envelope.errors import ProtocolError, UnsupportedApiError
from envelope.responses import ResourceError
from envelope.varints import read_uvarint

# What a step does with its field (kio's readers refuse some values of these two fixed-width types).
_SKIP, _BOOL, _CODE = _FIXED, 5, 6
# The role of a field in the outcome.
_NONE, _NAME, _ERROR, _MESSAGE, _TOP_ERROR, _RESULTS = range(6)

# kio types whose reader accepts any bytes of their width; any other fixed type makes the API's answer unscanned.
_ANY_VALUE_TYPES = frozenset({"int8", "int16", "uint16", "int32", "int64", "uint64", "uuid", "timedelta_i32", "float64"})
_BOOLEAN = "bool"
_ERROR_CODE = "error_code"
_CODE_FIELD = "error_code"
_MESSAGE_FIELD = "error_message"
_KNOWN_CODES = frozenset(int(code) for code in ErrorCode)
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL_MARKER = 0xFF
_PRESENT_MARKER = 1
_VARINT_CONTINUES = 0x80
_CORRELATION_ID_SIZE = 4
# What kio's readers raise on bytes they refuse (as envelope/codec.py catches them).
_KIO_REFUSALS = (SerialError, ValueError, UnicodeDecodeError, OverflowError, IndexError, KeyError, TypeError)


@dataclass(frozen=True, slots=True)
class ResultFields:
    """Where an admin answer lists its per-resource results, and what names each resource in the audit."""

    array: str | None
    """The top-level array of results; None for an answer that carries only a top-level code."""
    name: str | None = None
    """The field of a result naming its resource (its value as `str` gives); None to use `constant`."""
    constant: str = ""
    """The resource name of every result when no field names it (an ACL result names no resource)."""


class _Unusual(Exception):
    """Not scanned: the full decode decides (a refusal, or a shape this scan leaves to it)."""


# One step of a compiled plan: (kind, nullable, width of a fixed field, nested plan, array element, role).
_Step = tuple[int, bool, int, "_Plan | None", "_Step | None", int]
_ArrayReader = Callable[[bytes, int], tuple[tuple[Any, ...] | None, int]]


@dataclass(frozen=True, slots=True)
class _Plan:
    flexible: bool
    steps: tuple[_Step, ...]
    tagged: dict[int, "_Plan"]
    """Each known tagged field's value, as a plan of its one step without a tag section of its own."""
    min_size: int
    tag_section: bool
    native_array: _ArrayReader | None = None
    """kio's reader of an array of these, for an entity of strings and fixed fields only: no count inside it for kio
    to trust, and the array's own count is checked first, so one native call reads the whole array."""
    name_field: str | None = None
    """A result's name, read from kio's value when the array was read natively."""


@dataclass(frozen=True, slots=True)
class AnswerPlan:
    """One API version's answer, compiled for the scan."""

    body: _Plan
    flexible_header: bool
    constant: str


def _step(field: _Field, kafka_type: str, plans: dict[type[Any], _Plan], role: int = _NONE, results: _Plan | None = None) -> _Step:
    kind = field.kind
    if kind == _FIXED:
        if kafka_type == _BOOLEAN:
            kind = _BOOL
        elif kafka_type == _ERROR_CODE:
            kind = _CODE
        elif kafka_type not in _ANY_VALUE_TYPES:
            raise _Unusual(f"no scan for kafka type {kafka_type}")
        return (kind, field.nullable, field.size, None, None, role)
    if kind == _ENTITY:
        assert field.entity is not None
        return (kind, field.nullable, 0, _compile(field.entity, plans), None, role)
    if kind == _ARRAY:
        element = field.element
        assert element is not None
        if element.kind == _ENTITY:
            assert element.entity is not None
            nested = results if results is not None else _compile(element.entity, plans)
            return (kind, field.nullable, 0, None, (_ENTITY, False, 0, nested, None, _NONE), role)
        return (kind, field.nullable, 0, None, _step(element, kafka_type, plans), role)
    return (kind, field.nullable, 0, None, None, role)


def _native_array(entity: _Entity) -> _ArrayReader | None:
    """kio's array reader for an entity of strings and fixed fields only (no array, bytes, entity or tagged field)."""
    if entity.tagged or any(field.kind not in (_FIXED, _STR) for field in entity.positional):
        return None
    reader: _ArrayReader = (compact_array_reader if entity.flexible else legacy_array_reader)(entity_reader(entity.schema))
    return reader


def _compile(entity: _Entity, plans: dict[type[Any], _Plan], roles: dict[str, int] | None = None, results: _Plan | None = None) -> _Plan:
    """A plan for `entity`; `roles` marks the fields the outcome reads, `results` is the plan of the results' element."""
    if roles is None and entity.schema in plans:
        return plans[entity.schema]
    fields = [item for item in dataclasses.fields(entity.schema) if item.init]
    types = {item.name: str(item.metadata.get("kafka_type", "")) for item in fields}
    roles = roles or {}
    steps = tuple(
        _step(field, types[field.name], plans, roles.get(field.name, _NONE), results if roles.get(field.name) == _RESULTS else None)
        for field in entity.positional
    )
    names = {int(item.metadata["tag"]): item.name for item in fields if "tag" in item.metadata}
    if any(roles.get(name, _NONE) != _NONE for name in names.values()):
        raise _Unusual("a result read from a tagged field")
    tagged = {tag: _Plan(True, (_step(field, types[names[tag]], plans),), {}, 0, False) for tag, field in entity.tagged.items()}
    name_field = next((name for name, role in roles.items() if role == _NAME), None)
    plan = _Plan(entity.flexible, steps, tagged, entity.min_size, entity.flexible, _native_array(entity), name_field)
    if not roles:
        plans[entity.schema] = plan
    return plan


@cache
def answer_plan(api_key: int, api_version: int, fields: ResultFields) -> AnswerPlan | None:
    """The compiled scan of one API version's answer; None when this scan leaves that answer to the full decode."""
    try:
        schema = response_schema(api_key, api_version)
    except UnsupportedApiError:
        return None
    top = plan_of(schema)
    plans: dict[type[Any], _Plan] = {}
    roles: dict[str, int] = {_CODE_FIELD: _TOP_ERROR} if any(f.name == _CODE_FIELD for f in top.positional) else {}
    results: _Plan | None = None
    try:
        if fields.array is not None:
            array = next((f for f in top.positional if f.name == fields.array and f.kind == _ARRAY), None)
            if array is None or array.element is None or array.element.entity is None:
                return None
            element = array.element.entity
            element_roles = {_CODE_FIELD: _ERROR, _MESSAGE_FIELD: _MESSAGE}
            if fields.name is not None:
                element_roles[fields.name] = _NAME
            kinds = {f.name: f.kind for f in element.positional}
            if kinds.get(_CODE_FIELD) != _FIXED or (fields.name is not None and kinds.get(fields.name) != _STR):
                return None
            results = _compile(element, plans, element_roles)
            roles[fields.array] = _RESULTS
        body = _compile(top, plans, roles, results)
    except _Unusual:
        return None
    return AnswerPlan(body, response_header_version(api_key, api_version) == 1, fields.constant)


class _Scan:
    """One walk over one answer: the top-level code and the results as they are read."""

    __slots__ = ("constant", "data", "end", "results", "top")

    def __init__(self, data: bytes, constant: str) -> None:
        self.data = data
        self.end = len(data)
        self.constant = constant
        self.top = 0
        self.results: list[ResourceError] = []

    def plain(self, start: int, after: int) -> bool:
        """No byte over 0x7F in `data[start:after]`: there every varint is one byte and every string ASCII (valid UTF-8)."""
        return self.data[start:after].isascii()

    def length(self, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
        """A length or count: (-1 for null, the position after it)."""
        data = self.data
        if flexible:
            first = data[pos]
            if first < _VARINT_CONTINUES:
                return first - 1, pos + 1
            raw, pos = read_uvarint(data, pos, self.end)
            return raw - 1, pos
        if wide:
            (value,) = _INT32.unpack_from(data, pos)
            pos += 4
        else:
            (value,) = _INT16.unpack_from(data, pos)
            pos += 2
        if value < -1:
            raise _Unusual("negative length")
        return value, pos

    def text(self, pos: int, flexible: bool, nullable: bool, capture: bool) -> tuple[int, str | None]:
        """A string: the position after it, and its value when `capture` (or when it must be decoded to be checked)."""
        size, pos = self.length(pos, flexible, False)
        if size < 0:
            if not nullable:
                raise _Unusual("null string")
            return pos, None
        after = pos + size
        if size > MAX_STRING_LENGTH or after > self.end:
            raise _Unusual("string length")
        if capture or not self.plain(pos, after):
            try:
                return after, str(self.data[pos:after], "utf-8")
            except UnicodeDecodeError:
                raise _Unusual("not UTF-8") from None
        return after, None

    def entity(self, plan: _Plan, pos: int, result: bool) -> int:
        data, end, flexible = self.data, self.end, plan.flexible
        name: Any = self.constant
        code = 0
        message: str | None = None
        for kind, nullable, size, nested, element, role in plan.steps:
            if kind == _SKIP:
                pos += size
            elif kind == _STR:
                pos, value = self.text(pos, flexible, nullable, role != _NONE)
                if role == _NAME:
                    name = value
                elif role == _MESSAGE:
                    message = value
            elif kind == _CODE:
                (code_value,) = _INT16.unpack_from(data, pos)
                if code_value not in _KNOWN_CODES:
                    raise _Unusual("unknown error code")
                pos += 2
                if role == _ERROR:
                    code = code_value
                elif role == _TOP_ERROR:
                    self.top = code_value
            elif kind == _BOOL:
                if data[pos] > 1:
                    raise _Unusual("boolean")
                pos += 1
            elif kind == _ARRAY:
                assert element is not None
                pos = self.array(element, nullable, pos, flexible, role == _RESULTS)
            elif kind == _ENTITY:
                assert nested is not None
                if nullable:
                    marker = data[pos]
                    pos += 1
                    if marker == _NULL_MARKER:
                        continue
                    if marker != _PRESENT_MARKER:
                        raise _Unusual("null marker")
                pos = self.entity(nested, pos, False)
            else:  # bytes
                size, pos = self.length(pos, flexible, True)
                if size < 0:
                    if not nullable:
                        raise _Unusual("null bytes")
                elif size > end - pos:
                    raise _Unusual("bytes length")
                else:
                    pos += size
        if pos > end:
            raise _Unusual("fields past the end")
        if plan.tag_section:
            pos = self.tags(plan, pos)
        if result:
            self.results.append(ResourceError(str(name), int(code), message))
        return pos

    def array(self, element: _Step, nullable: bool, pos: int, flexible: bool, results: bool) -> int:
        start = pos
        count, pos = self.length(pos, flexible, True)
        if count < 0:
            if not nullable:
                raise _Unusual("null array")
            return pos
        kind, _, size, nested, _, _ = element
        smallest = max(1, nested.min_size if nested is not None else size if kind in (_SKIP, _BOOL, _CODE) else 1 if flexible else 2 if kind == _STR else 4)
        if count * smallest > self.end - pos:
            raise _Unusual("array count")
        if nested is None:
            if kind == _SKIP:
                return pos + count * size
            if kind == _STR:
                for _ in range(count):
                    pos, _value = self.text(pos, flexible, element[1], False)
                return pos
            raise _Unusual("an array of checked values")  # none in the answers scanned: left to the full decode
        if nested.native_array is not None and (after := self.native(nested, start, results)) is not None:
            return after
        for _ in range(count):
            pos = self.entity(nested, pos, results)
        return pos

    def native(self, plan: _Plan, start: int, results: bool) -> int | None:
        """The array at `start` read by kio in one call; None when the walk must read it (kio refused it, or its bytes
        hold what kio and the pre-pass might judge apart: a varint over one byte, a string over Kafka's limit)."""
        assert plan.native_array is not None
        try:
            values, size = plan.native_array(self.data, start)
        except _KIO_REFUSALS:
            return None
        after = start + size
        if values is None or size > MAX_STRING_LENGTH or not self.plain(start, after):
            return None
        if results:
            name_field, constant = plan.name_field, self.constant
            self.results += [
                ResourceError(constant if name_field is None else str(getattr(value, name_field)), int(value.error_code), getattr(value, _MESSAGE_FIELD, None))
                for value in values
            ]
        return after

    def tags(self, plan: _Plan, pos: int) -> int:
        data, end = self.data, self.end
        count, pos = read_uvarint(data, pos, end)
        if count * 2 > end - pos:
            raise _Unusual("tagged fields count")
        for _ in range(count):
            tag, pos = read_uvarint(data, pos, end)
            size, pos = read_uvarint(data, pos, end)
            if size > end - pos:
                raise _Unusual("tagged field size")
            known = plan.tagged.get(tag)
            if known is None:
                raise _Unusual("unknown tagged field")  # the full decode reads the body without it
            # Read within its declared size, as the pre-pass reads it (tagged fields are rare: a copy is cheap).
            if _Scan(data[pos : pos + size], self.constant).entity(known, 0, False) != size:
                raise _Unusual("tagged field size")
            pos += size
        return pos


def scan_answer(plan: AnswerPlan, embedded: bytes) -> tuple[int, list[ResourceError]] | None:
    """(top-level error code, every per-resource result) of an answer frame, as the full decode would give them; None
    when the full decode must decide."""
    scan = _Scan(embedded, plan.constant)
    try:
        pos = _CORRELATION_ID_SIZE
        if plan.flexible_header:
            count, pos = read_uvarint(embedded, pos, len(embedded))
            if count:
                return None  # no response header tag is defined: the full decode skips them
        scan.entity(plan.body, pos, False)
    except (_Unusual, ProtocolError, IndexError, struct.error, ValueError, UnicodeDecodeError):
        return None
    return scan.top, scan.results


__all__ = ["AnswerPlan", "ResultFields", "answer_plan", "scan_answer"]
