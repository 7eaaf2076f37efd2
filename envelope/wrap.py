"""EnvelopeRequest / EnvelopeResponse (API key 58, v0, flexible).

`wrap` puts a client's request bytes into RequestData untouched: the proxy
never re-encodes what a client sent. kio encodes the rest of the envelope, once
per principal, address and client id (see `_template`).
"""

import functools
import ipaddress
import struct
from dataclasses import dataclass

from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey
from envelope.codec import CORRELATION_ID, decode_body, decode_response_body, encode_body, encode_request, encode_response
from envelope.errors import ProtocolError
from envelope.header import peek_request_header
from envelope.principal import Principal, deserialize_principal, serialize_principal
from envelope.varints import read_uvarint, write_uvarint

ENVELOPE_VERSION = 0
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class _EnvelopeTemplate:
    """An EnvelopeRequest as kio encodes it for one principal, address and client id, cut where the per-request
    parts go: the correlation id (header bytes 4-8) and RequestData, the body's first field."""

    api_prefix: bytes
    """Header bytes before the correlation id: api key and version."""
    header_rest: bytes
    """Header bytes after the correlation id: client id and tagged fields."""
    body_rest: bytes
    """Body bytes after RequestData: the principal, the address and tagged fields."""


_CORRELATION_AT = 4  # api key (int16) and api version (int16) come first in every request header
_EMPTY_COMPACT_BYTES = b"\x01"  # compact bytes carry length + 1 as an unsigned varint


def _client_address(client_ip: IPAddress | str) -> IPAddress:
    address = client_ip if isinstance(client_ip, (ipaddress.IPv4Address, ipaddress.IPv6Address)) else ipaddress.ip_address(client_ip)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d; Kafka's
        # ACL host match expects the plain IPv4 address.
        return address.ipv4_mapped
    return address


@functools.lru_cache(maxsize=1024)
def _template(principal: Principal, address: IPAddress, client_id: str | None) -> _EnvelopeTemplate:
    # kio encodes the envelope once per (principal, address, client id) with empty RequestData; a session
    # forwards many requests as one principal from one address, and each then costs a few concatenations.
    body = EnvelopeRequest(request_data=b"", request_principal=serialize_principal(principal), client_host_address=address.packed)
    frame = encode_request(body, correlation_id=0, client_id=client_id)
    header_size = len(frame) - len(encode_body(body))
    if frame[header_size : header_size + 1] != _EMPTY_COMPACT_BYTES:
        raise AssertionError("EnvelopeRequest v0 no longer starts with RequestData")
    return _EnvelopeTemplate(
        api_prefix=frame[:_CORRELATION_AT],
        header_rest=frame[_CORRELATION_AT + CORRELATION_ID.size : header_size],
        body_rest=frame[header_size + 1 :],
    )


def wrap(
    raw_request: bytes,
    principal: Principal,
    client_ip: IPAddress | str,
    *,
    correlation_id: int,
    client_id: str | None = None,
) -> bytes:
    """Whole EnvelopeRequest (header + body, no size prefix) carrying raw_request, byte for byte."""
    template = _template(principal, _client_address(client_ip), client_id)
    return b"".join(
        (
            template.api_prefix,
            CORRELATION_ID.pack(correlation_id),
            template.header_rest,
            write_uvarint(len(raw_request) + 1),  # compact bytes: length + 1
            raw_request,
            template.body_rest,
        )
    )


_ERROR_CODE = struct.Struct(">h")
_AFTER_CORRELATION_ID = CORRELATION_ID.size
_NO_TAGGED_FIELDS = 0
_NULL_COMPACT_BYTES = 0
_KNOWN_ERROR_CODES = frozenset(int(code) for code in ErrorCode)


def _unwrap_untagged(frame: bytes) -> tuple[int, bytes | None] | None:
    """The EnvelopeResponse every controller sends, without tagged fields, read in place (no copy of the
    answer but the slice handed on); None for any other shape, which kio then decodes with the bounded check."""
    end = len(frame)
    if end <= _AFTER_CORRELATION_ID or frame[_AFTER_CORRELATION_ID] != _NO_TAGGED_FIELDS:
        return None
    length, offset = read_uvarint(frame, _AFTER_CORRELATION_ID + 1, end)
    data: bytes | None = None
    if length != _NULL_COMPACT_BYTES:
        data, offset = frame[offset : offset + length - 1], offset + length - 1
    if offset + _ERROR_CODE.size + 1 != end or frame[end - 1] != _NO_TAGGED_FIELDS:
        return None
    (error_code,) = _ERROR_CODE.unpack_from(frame, offset)
    if error_code not in _KNOWN_ERROR_CODES:
        return None  # kio refuses a code it does not know; so does the proxy, as before
    return error_code, data


def unwrap(envelope_response: bytes) -> tuple[int, bytes | None]:
    """(error code, embedded response bytes) of a whole EnvelopeResponse frame."""
    untagged = _unwrap_untagged(envelope_response)
    if untagged is not None:
        return untagged
    _, body = decode_response_body(ApiKey.ENVELOPE, ENVELOPE_VERSION, envelope_response)
    return int(body.error_code), body.response_data


def wrap_response(correlation_id: int, error_code: int, response_data: bytes | None) -> bytes:
    """The controller side: an EnvelopeResponse frame payload."""
    body = EnvelopeResponse(response_data=response_data, error_code=ErrorCode(error_code))
    return encode_response(body, correlation_id=correlation_id)


@dataclass(frozen=True, slots=True)
class EnvelopeRequestParts:
    request_data: bytes
    principal: Principal
    client_address: IPAddress


class EnvelopeError(ProtocolError):
    """An envelope a controller must refuse, with the error code Kafka answers."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def unwrap_request(frame: bytes) -> tuple[int, EnvelopeRequestParts]:
    """Controller side: (envelope correlation id, parts) of an EnvelopeRequest frame.

    Checks in Kafka's order: principal (97), then address (42).
    """
    header = peek_request_header(frame)
    body = decode_body(header.api_key, header.api_version, frame, header.header_size)
    if body.request_principal is None:
        raise EnvelopeError(ErrorCode.principal_deserialization_failure, "envelope carries no principal")
    try:
        principal = deserialize_principal(body.request_principal)
    except ProtocolError as exc:
        raise EnvelopeError(ErrorCode.principal_deserialization_failure, str(exc)) from exc
    raw_address = body.client_host_address
    if len(raw_address) not in (4, 16):
        raise EnvelopeError(ErrorCode.invalid_request, f"client address of {len(raw_address)} bytes")
    address = ipaddress.ip_address(raw_address)
    return header.correlation_id, EnvelopeRequestParts(body.request_data, principal, address)
