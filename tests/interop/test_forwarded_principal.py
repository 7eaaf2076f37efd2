"""The Envelope's principal in every shape a forwarder may send, read by the embedded controller as Kafka 4.3.1 reads it.

DefaultKafkaPrincipalBuilder.deserialize reads a 2-byte version and DefaultPrincipalData from a ByteBuffer: bytes
after it are ignored, unknown tagged fields skipped, any non-zero TokenAuthenticated byte is true and malformed
UTF-8 becomes U+FFFD; a null or over-long string, an unknown version or data that ends early is
PRINCIPAL_DESERIALIZATION_FAILURE (97). Each shape carries a CreateDelegationToken (whose answer names the owner it
was read as, and refuses a token-authenticated one) to the embedded controller and to a real node; the answers must
agree. Tokens made are expired at once.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from devkit import wire
from devkit.kafka_node import KafkaNode
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from envelope.principal import Principal, deserialize_principal, serialize_principal
from envelope.wrap import unwrap
from tests.interop.envelope_client import Controller
from tests.interop.upstreams import poll

pytestmark = pytest.mark.interop

CREATE: dict[str, Any] = {"owner_principal_type": None, "owner_principal_name": None, "renewers": [], "max_lifetime": 60000}
LOOPBACK = b"\x7f\x00\x00\x01"


def _compact(text: bytes) -> bytes:
    value, out = len(text) + 1, bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out) + text


def _shapes(name: str) -> dict[str, bytes | None]:
    base = serialize_principal(Principal("User", name))
    fields = _compact(b"User") + _compact(name.encode())
    return {
        "as serialized": base,
        "TokenAuthenticated 2": base[:-2] + b"\x02\x00",
        "TokenAuthenticated 0xff": base[:-2] + b"\xff\x00",
        "a byte after it": base + b"\x00",
        "a whole principal after it": base + serialize_principal(Principal("User", "someone-else")),
        "an unknown tagged field": base[:-1] + b"\x01\x05\x01\x00",
        "two unknown tagged fields, token-authenticated": b"\x00\x00" + fields + b"\x01\x02\x00\x00\x07\x01\x00",
        "a tagged-field count that wraps negative": b"\x00\x00" + fields + b"\x00\xff\xff\xff\xff\x0f",
        "malformed UTF-8 in the type": b"\x00\x00" + _compact(b"\xff\xfeUser") + _compact(name.encode()) + b"\x00\x00",
        "a tagged field longer than the data": b"\x00\x00" + fields + b"\x00\x01\x05\x09\x00",
        "a name of 32768 bytes": b"\x00\x00" + _compact(b"User") + _compact(b"n" * 32768) + b"\x00\x00",
        "no TokenAuthenticated byte": b"\x00\x00" + fields,
        "no tagged-field section": b"\x00\x00" + fields + b"\x00",
        "version 1": b"\x00\x01" + base[2:],
        "version -1": b"\xff\xff" + base[2:],
        "one byte": b"\x00",
        "empty": b"",
        "null": None,
    }


def _send(controller: Controller, principal: bytes | None, api_key: int, version: int, values: dict[str, Any]) -> Any:
    with wire.connect(controller.address, timeout=30) as sock:
        assert wire.sasl_plain_login(sock, "proxy", controller.proxy_password) == 0
        inner = wire.request(api_key, version, values, correlation_id=9, client_id="principal-shapes")
        envelope = build_entity(request_schema(58, 0), {"request_data": inner, "request_principal": principal, "client_host_address": LOOPBACK})
        error, data = unwrap(wire.exchange(sock, encode_request(envelope, correlation_id=5, client_id="proxy")))
        return ("envelope error", error) if data is None else decode_response_body(api_key, version, data)[1]


def _name_of(principal: bytes | None) -> tuple[str, str]:
    read = deserialize_principal(principal or b"")
    return read.type, read.name


def _create_and_clean_up(controller: Controller, principal: bytes | None) -> Any:
    answer = _send(controller, principal, 38, 3, CREATE)
    if isinstance(answer, tuple):
        return answer
    if answer.token_id:
        # expire it at once as its owner (read as the controller read it)
        owner = serialize_principal(Principal(*_name_of(principal)))
        expire = {"hmac": answer.hmac, "expiry_time_period": -1}
        # a node's token cache learns the token a moment after the commit (DELEGATION_TOKEN_NOT_FOUND until then)
        expired = poll(lambda: int(_send(controller, owner, 40, 2, expire).error_code), lambda code: code != 62, 5.0)
        assert expired == 0
    return (int(answer.error_code), answer.principal_type, answer.principal_name, answer.token_requester_principal_name)


@pytest.mark.parametrize("shape", list(_shapes("x")))
def test_the_embedded_controller_reads_every_principal_shape_as_kafka(embedded_controller: Controller, kafka_node: KafkaNode, shape: str) -> None:
    name = f"ps-{uuid.uuid4().hex[:8]}"
    principal = _shapes(name)[shape]
    node = Controller("kafka", kafka_node.controller_address, kafka_node.users["proxy"])
    assert _create_and_clean_up(embedded_controller, principal) == _create_and_clean_up(node, principal)
