"""Raw Kafka wire helpers for tests that must send exactly chosen bytes."""

import socket
from typing import Any

from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from envelope.frames import FrameReader, encode_frame

__all__ = ["call", "connect", "encode_frame", "exchange", "is_closed", "read_frame", "request", "sasl_plain_login"]


def connect(address: str, *, source: str | None = None, timeout: float = 10.0) -> socket.socket:
    host, port = address.rsplit(":", 1)
    host = host.strip("[]")
    sock = socket.create_connection((host, int(port)), timeout=timeout, source_address=(source, 0) if source else None)
    return sock


def request(api_key: int, version: int, values: dict[str, Any], correlation_id: int = 1, client_id: str | None = "test") -> bytes:
    body = build_entity(request_schema(api_key, version), values)
    return encode_request(body, correlation_id=correlation_id, client_id=client_id)


def exchange(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(encode_frame(payload))
    return read_frame(sock)


def read_frame(sock: socket.socket) -> bytes:
    reader = FrameReader()
    while (frame := reader.next_frame()) is None:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed by peer")
        reader.feed(data)
    return frame


def call(sock: socket.socket, api_key: int, version: int, values: dict[str, Any], correlation_id: int = 1) -> Any:
    frame = exchange(sock, request(api_key, version, values, correlation_id))
    received, body = decode_response_body(api_key, version, frame)
    assert received == correlation_id
    return body


def is_closed(sock: socket.socket) -> bool:
    """True when the peer closed (EOF or reset) within the socket timeout."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def sasl_plain_login(sock: socket.socket, user: str, password: str) -> int:
    handshake = call(sock, 17, 1, {"mechanism": "PLAIN"}, correlation_id=1)
    assert int(handshake.error_code) == 0
    token = b"\x00" + user.encode() + b"\x00" + password.encode()
    result = call(sock, 36, 2, {"auth_bytes": token}, correlation_id=2)
    return int(result.error_code)
