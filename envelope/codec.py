"""Message bodies and headers through kio, keyed by (api key, version)."""

import dataclasses
import io
import struct
from functools import cache
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.primitive import i16, i32, i64

from envelope.bounded import prepare, stub_without
from envelope.errors import ProtocolError, UnsupportedApiError
from envelope.varints import skip_tagged_fields

# APIs whose int64 times kio reads as datetimes and timedeltas, but whose values Kafka does not bound: the
# delegation-token APIs answer -1 for "no timestamp" (kio refuses a negative datetime) and take any period
# (a timedelta holds no more than about 2.7 million years of milliseconds). Their times stay plain int64s.
_PLAIN_TIMES_APIS = frozenset({38, 39, 40})  # Create/Renew/ExpireDelegationToken
_TIME_TYPES = frozenset({"datetime_i64", "timedelta_i64"})
_SCHEMA_ATTRIBUTES = ("__type__", "__version__", "__flexible__", "__api_key__", "__header_schema__")


def _with_plain_times(schema: type[Any]) -> type[Any]:
    """The same kio schema (its name, version, header, field order and metadata) with int64 for every time field."""
    fields: list[tuple[str, Any, Any]] = []
    for item in dataclasses.fields(schema):
        options: dict[str, Any] = {"metadata": item.metadata}
        kind: Any = item.type
        if item.metadata.get("kafka_type") in _TIME_TYPES:
            options["metadata"] = {**item.metadata, "kafka_type": "int64"}
            kind = i64
        if item.default is not dataclasses.MISSING:
            options["default"] = item.default
        if item.default_factory is not dataclasses.MISSING:
            options["default_factory"] = item.default_factory
        fields.append((item.name, kind, dataclasses.field(**options)))
    namespace = {name: schema.__dict__[name] for name in _SCHEMA_ATTRIBUTES if name in schema.__dict__}
    plain = dataclasses.make_dataclass(schema.__name__, fields, namespace=namespace, frozen=True, slots=True, kw_only=True)
    plain.__module__ = schema.__module__
    plain.__doc__ = schema.__doc__
    return plain


@cache
def request_schema(api_key: int, api_version: int) -> type[Any]:
    try:
        schema = load_request_schema(api_key, api_version)
    except KioIndexError:
        raise UnsupportedApiError(api_key, api_version) from None
    return _with_plain_times(schema) if api_key in _PLAIN_TIMES_APIS else schema


@cache
def response_schema(api_key: int, api_version: int) -> type[Any]:
    try:
        schema = load_response_schema(api_key, api_version)
    except KioIndexError:
        raise UnsupportedApiError(api_key, api_version) from None
    return _with_plain_times(schema) if api_key in _PLAIN_TIMES_APIS else schema


@cache
def known_versions(api_key: int) -> tuple[int, int] | None:
    """The (min, max) versions kio has schemas for, or None for an unknown key."""
    versions = []
    for version in range(0, 64):
        try:
            request_schema(api_key, version)
        except UnsupportedApiError:
            continue
        versions.append(version)
    if not versions:
        return None
    return min(versions), max(versions)


def request_header_version(api_key: int, api_version: int) -> int:
    """Header version a request uses; versions newer than kio knows are flexible."""
    known = known_versions(api_key)
    if known is None:
        return 1
    version = min(max(api_version, known[0]), known[1])
    return int(request_schema(api_key, version).__header_schema__.__version__)


def response_header_version(api_key: int, api_version: int) -> int:
    known = known_versions(api_key)
    if known is None:
        return 0
    version = min(max(api_version, known[0]), known[1])
    return int(response_schema(api_key, version).__header_schema__.__version__)


CORRELATION_ID = struct.Struct(">i")
"""The first field of every response header, and bytes 4-8 of every request header."""


def peek_correlation_id(frame: bytes) -> int:
    """Correlation id of a response frame (first field of every response header)."""
    if len(frame) < CORRELATION_ID.size:
        raise ProtocolError("response shorter than its correlation id")
    return int(CORRELATION_ID.unpack_from(frame)[0])


# Top-level arrays longer than this are decoded element by element (see bounded.split_large_arrays).
LARGE_ARRAY_ELEMENTS = 2000


def _elements(read: Any, source: bytes, bounds: list[tuple[int, int]]) -> tuple[Any, ...]:
    return tuple(read(source, start)[0] for start, _ in bounds)


def decode_entity(schema: type[Any], data: bytes, offset: int) -> tuple[Any, int]:
    """(value, bytes it took in `data`). The bounded pre-pass runs first: kio aborts the
    process on hostile counts and refuses unknown tagged fields, which Kafka skips."""
    prepared = prepare(schema, data, offset, large_threshold=LARGE_ARRAY_ELEMENTS)
    try:
        if not prepared.large:
            value, size = entity_reader(schema)(prepared.source, prepared.start)
            if prepared.start + size != prepared.end:
                raise ProtocolError(f"cannot decode {schema.__name__}: {size} bytes decoded, {prepared.end - prepared.start} checked")
        else:
            value, _ = entity_reader(schema)(stub_without(prepared.source, prepared.start, prepared.end, prepared.large), 0)
            entries = {a.field: _elements(entity_reader(a.element), prepared.source, a.bounds) for a in prepared.large}
            value = dataclasses.replace(value, **entries)
    except (SerialError, ValueError, UnicodeDecodeError, OverflowError, IndexError, KeyError, TypeError) as exc:
        raise ProtocolError(f"cannot decode {schema.__name__}: {exc}") from exc
    return value, prepared.consumed


def decode_body(api_key: int, api_version: int, frame: bytes, offset: int, *, allow_trailing: bool = False) -> Any:
    """Decode a request body that starts at `offset` of a request frame.

    `allow_trailing` mirrors Kafka's generated parsers, which read the fields
    they know and ignore what follows (librdkafka's all-topics Metadata v13
    carries three such bytes); only requests answered locally use it.
    """
    value, size = decode_entity(request_schema(api_key, api_version), frame, offset)
    if offset + size != len(frame) and not allow_trailing:
        raise ProtocolError(f"{len(frame) - offset - size} trailing bytes after request body")
    return value


def decode_response_body(api_key: int, api_version: int, frame: bytes) -> tuple[int, Any]:
    """Decode a whole response frame: (correlation id, body)."""
    # A response header is the correlation id, then (v1) tagged fields, none of them defined: read in place.
    correlation_id = peek_correlation_id(frame)
    header_size = CORRELATION_ID.size
    if response_header_version(api_key, api_version) == 1:
        header_size = skip_tagged_fields(frame, header_size)
    body, _ = decode_entity(response_schema(api_key, api_version), frame, header_size)
    return correlation_id, body


def _write(schema: type[Any], entity: Any, out: io.BytesIO) -> None:
    entity_writer(schema)(out, entity)


def encode_body(body: Any) -> bytes:
    """A message body alone, without a header."""
    out = io.BytesIO()
    _write(type(body), body, out)
    return out.getvalue()


def encode_request(body: Any, *, correlation_id: int, client_id: str | None, api_version: int | None = None) -> bytes:
    """Header + body of a request we originate (the proxy's own login, tests)."""
    api_key = int(body.__api_key__)
    version = int(body.__version__) if api_version is None else api_version
    out = io.BytesIO()
    if request_header_version(api_key, version) == 2:
        _write(
            RequestHeaderV2,
            RequestHeaderV2(
                request_api_key=i16(api_key),
                request_api_version=i16(version),
                correlation_id=i32(correlation_id),
                client_id=client_id,
            ),
            out,
        )
    else:
        _write(
            RequestHeaderV1,
            RequestHeaderV1(
                request_api_key=i16(api_key),
                request_api_version=i16(version),
                correlation_id=i32(correlation_id),
                client_id=client_id,
            ),
            out,
        )
    _write(type(body), body, out)
    return out.getvalue()


def encode_response(body: Any, *, correlation_id: int) -> bytes:
    """Header + body of a response; the header version follows the body's schema."""
    out = io.BytesIO()
    header_schema = type(body).__header_schema__
    _write(header_schema, header_schema(correlation_id=i32(correlation_id)), out)
    _write(type(body), body, out)
    return out.getvalue()
