"""Raw Kafka wire helpers for tests that must send exactly chosen bytes."""

import base64
import dataclasses
import socket
from typing import Any

from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from envelope.frames import FrameReader, encode_frame
from proxy.net.sasl.scram_client import ScramClient

__all__ = ["ONE_PARTITION_TOPIC", "call", "connect", "create_topic", "create_topic_at", "encode_frame", "exchange", "is_closed", "plain", "plain_token", "read_frame", "request", "sasl_authenticate", "sasl_handshake", "sasl_plain_authenticate", "sasl_plain_login", "scram_token_login"]


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


def plain_token(user: str, password: str, authzid: str = "") -> bytes:
    """RFC 4616's message: authzid NUL authcid NUL password."""
    return f"{authzid}\x00{user}\x00{password}".encode()


def sasl_handshake(sock: socket.socket, mechanism: str, correlation_id: int = 1) -> int:
    """SaslHandshake v1 for `mechanism`: its error code (0: the server takes it)."""
    return int(call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism}, correlation_id=correlation_id).error_code)


def sasl_authenticate(sock: socket.socket, token: bytes, correlation_id: int) -> Any:
    """SaslAuthenticate v2 carrying `token`: the decoded answer."""
    return call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}, correlation_id=correlation_id)


def sasl_plain_authenticate(sock: socket.socket, user: str, password: str, correlation_id: int = 1) -> Any:
    """SaslHandshake(PLAIN) v1, then SaslAuthenticate v2: the decoded SaslAuthenticate answer."""
    assert sasl_handshake(sock, "PLAIN", correlation_id) == 0
    return sasl_authenticate(sock, plain_token(user, password), correlation_id + 1)


def sasl_plain_login(sock: socket.socket, user: str, password: str) -> int:
    """The error code of a PLAIN login on `sock` (0: logged in)."""
    return int(sasl_plain_authenticate(sock, user, password).error_code)


def plain(value: Any) -> Any:
    """A decoded message as plain data to compare: entities as dicts, arrays as lists, a non-number enum as its value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    if hasattr(value, "value") and not isinstance(value, (int, str)):
        return value.value
    return value


#: One topic of a CreateTopics request: a partition, one replica, the broker's configs.
ONE_PARTITION_TOPIC = {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}


def create_topic(sock: socket.socket, name: str, *, version: int = 5, correlation_id: int = 3, timeout_ms: int = 5000) -> Any:
    """CreateTopics of `name` (:data:`ONE_PARTITION_TOPIC`) on a logged-in `sock`: the topic's decoded result."""
    values = {"topics": [{"name": name, **ONE_PARTITION_TOPIC}], "timeout": timeout_ms, "validate_only": False}
    return call(sock, ApiKey.CREATE_TOPICS, version, values, correlation_id).topics[0]


def create_topic_at(
    address: str, user: str, password: str, name: str, *, version: int = 5, source: str | None = None, timeout: float = 30.0
) -> int:
    """A new connection to `address` (from `source`), a PLAIN login and :func:`create_topic`: the topic's error code, or
    the login's where it failed."""
    with connect(address, source=source, timeout=timeout) as sock:
        code = sasl_plain_login(sock, user, password)
        return code if code != 0 else int(create_topic(sock, name, version=version).error_code)


def scram_token_login(sock: socket.socket, token_id: str, hmac: bytes, mechanism: str = "SCRAM-SHA-256") -> int:
    """A delegation-token login as Kafka's ScramLoginModule with tokenauth="true" makes it: the SaslAuthenticate
    error code (0: logged in, and the server's proof checked)."""
    assert sasl_handshake(sock, mechanism) == 0
    client = ScramClient(mechanism, token_id, base64.b64encode(hmac).decode(), extensions={"tokenauth": "true"})
    first = sasl_authenticate(sock, client.first(), correlation_id=2)
    if int(first.error_code):
        return int(first.error_code)
    final = sasl_authenticate(sock, client.final(bytes(first.auth_bytes)), correlation_id=3)
    if int(final.error_code) == 0:
        client.verify(bytes(final.auth_bytes))
    return int(final.error_code)
