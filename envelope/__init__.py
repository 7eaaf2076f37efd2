"""Sans-IO Kafka wire layer: frames, headers, envelopes, principals.

Nothing here performs IO or imports trio; callers feed bytes in and get
bytes or plain values out.
"""

from envelope.apis import FORWARDABLE, api_name, is_forwardable
from envelope.codec import (
    decode_body,
    decode_response_body,
    encode_request,
    encode_response,
    peek_correlation_id,
    request_header_version,
    response_header_version,
)
from envelope.errors import FrameSizeError, ProtocolError, UnsupportedApiError
from envelope.frames import FrameReader, encode_frame
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import Principal, deserialize_principal, serialize_principal
from envelope.wrap import (
    EnvelopeError,
    EnvelopeRequestParts,
    unwrap,
    unwrap_request,
    wrap,
    wrap_response,
)

__all__ = [
    "FORWARDABLE",
    "EnvelopeError",
    "EnvelopeRequestParts",
    "FrameReader",
    "FrameSizeError",
    "Principal",
    "ProtocolError",
    "RequestHeaderInfo",
    "UnsupportedApiError",
    "api_name",
    "decode_body",
    "decode_response_body",
    "deserialize_principal",
    "encode_frame",
    "encode_request",
    "encode_response",
    "is_forwardable",
    "peek_correlation_id",
    "peek_request_header",
    "request_header_version",
    "response_header_version",
    "serialize_principal",
    "unwrap",
    "unwrap_request",
    "wrap",
    "wrap_response",
]
