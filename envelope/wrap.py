"""EnvelopeRequest / EnvelopeResponse (API key 58, v0, flexible).

`wrap` puts a client's request bytes into RequestData untouched: the proxy
never re-encodes what a client sent.
"""

import ipaddress
from dataclasses import dataclass

from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey
from envelope.codec import decode_body, decode_response_body, encode_request, encode_response
from envelope.errors import ProtocolError
from envelope.header import peek_request_header
from envelope.principal import Principal, deserialize_principal, serialize_principal

ENVELOPE_VERSION = 0
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def wrap(
    raw_request: bytes,
    principal: Principal,
    client_ip: IPAddress | str,
    *,
    correlation_id: int,
    client_id: str | None = None,
) -> bytes:
    """Whole EnvelopeRequest (header + body, no size prefix) carrying raw_request."""
    address = ipaddress.ip_address(client_ip)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d; Kafka's
        # ACL host match expects the plain IPv4 address.
        address = address.ipv4_mapped
    body = EnvelopeRequest(
        request_data=raw_request,
        request_principal=serialize_principal(principal),
        client_host_address=address.packed,
    )
    return encode_request(body, correlation_id=correlation_id, client_id=client_id)


def unwrap(envelope_response: bytes) -> tuple[int, bytes | None]:
    """(error code, embedded response bytes) of a whole EnvelopeResponse frame."""
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
