"""Peek at a request header without decoding the body."""

import struct
from dataclasses import dataclass

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.serial.errors import SerialError

from envelope.bounded import skip_tagged_fields
from envelope.codec import decode_entity, request_header_version
from envelope.errors import ProtocolError

_FIXED = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class RequestHeaderInfo:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int
    header_size: int  # offset of the body inside the frame


def peek_correlation_id(frame: bytes) -> int:
    """Correlation id of a response frame (first field of every response header)."""
    if len(frame) < 4:
        raise ProtocolError("response shorter than its correlation id")
    return int(struct.unpack_from(">i", frame)[0])


def peek_request_header(frame: bytes) -> RequestHeaderInfo:
    if len(frame) < _FIXED.size:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id = _FIXED.unpack_from(frame)
    header_version = request_header_version(api_key, api_version)
    try:
        # Header v2 is v1 plus a tagged-field section; no tag is defined for it, so
        # unknown tags are skipped (as Kafka does) rather than refused.
        header, size = decode_entity(RequestHeaderV1, frame, 0)
        if header_version == 2:
            size = skip_tagged_fields(frame, size)
    except (SerialError, ValueError, UnicodeDecodeError, IndexError) as exc:
        raise ProtocolError(f"malformed request header: {exc}") from exc
    return RequestHeaderInfo(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=header.client_id,
        header_version=header_version,
        header_size=size,
    )
