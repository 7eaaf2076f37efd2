"""The embedded controller checks envelopes in Kafka's order, over a real socket."""

from typing import Any

import pytest
import trio
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from envelope.apis import ApiKey
from envelope.codec import encode_request
from envelope.principal import Principal, serialize_principal
from envelope.wrap import unwrap, wrap
from envelope_proxy.embedded import controller_properties

CREATE = {
    "topics": [{"name": "t1", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
    "timeout": 1000,
    "validate_only": False,
}


@pytest.fixture
async def controller(nursery: Any) -> tuple[EmbeddedController, str]:
    props = controller_properties(users={"stranger": "stranger-secret"})
    ctl = EmbeddedController(parse_controller_config(props))
    (bound,) = await nursery.start(ctl.run)
    return ctl, f"127.0.0.1:{bound.port}"


def _send_envelope(address: str, user: str, password: str, payload: bytes) -> tuple[int, bytes | None]:
    with wire.connect(address) as sock:
        assert wire.sasl_plain_login(sock, user, password) == 0
        return unwrap(wire.exchange(sock, payload))


def _raw_envelope(request_data: bytes, principal: bytes | None, address: bytes) -> bytes:
    body = EnvelopeRequest(request_data=request_data, request_principal=principal, client_host_address=address)
    return encode_request(body, correlation_id=77, client_id="test")


async def test_forwarded_request_runs_as_the_forwarded_principal_and_address(controller: tuple[EmbeddedController, str]) -> None:
    ctl, address = controller
    inner = wire.request(ApiKey.CREATE_TOPICS, 7, CREATE, correlation_id=1234)
    payload = wrap(inner, Principal("User", "admin"), "127.0.0.7", correlation_id=5)
    error, data = await trio.to_thread.run_sync(_send_envelope, address, "proxy", "proxy-secret", payload)
    assert error == 0 and data is not None
    assert int.from_bytes(data[:4], "big") == 1234  # the embedded response keeps the client's correlation id
    (change,) = ctl.image.changes
    assert (change.principal, change.client_address, change.forwarded_by, change.error_code) == ("User:admin", "127.0.0.7", "User:proxy", 0)
    assert "t1" in ctl.image.topics


@pytest.mark.parametrize(
    ("user", "payload", "expected"),
    [
        pytest.param(
            "stranger",
            wrap(wire.request(ApiKey.CREATE_TOPICS, 7, CREATE), Principal("User", "admin"), "127.0.0.1", correlation_id=1),
            ErrorCode.cluster_authorization_failed,
            id="no-cluster-action",
        ),
        pytest.param("proxy", _raw_envelope(wire.request(ApiKey.CREATE_TOPICS, 7, CREATE), b"\x00\x07garbage", bytes(4)), ErrorCode.principal_deserialization_failure, id="bad-principal"),
        pytest.param("proxy", _raw_envelope(wire.request(ApiKey.CREATE_TOPICS, 7, CREATE), None, bytes(4)), ErrorCode.principal_deserialization_failure, id="no-principal"),
        pytest.param(
            "proxy",
            _raw_envelope(wire.request(ApiKey.CREATE_TOPICS, 7, CREATE), serialize_principal(Principal("User", "a")), bytes(5)),
            ErrorCode.invalid_request,
            id="address-of-5-bytes",
        ),
        pytest.param(
            "proxy",
            _raw_envelope(
                wire.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}),
                serialize_principal(Principal("User", "a")),
                bytes(4),
            ),
            ErrorCode.invalid_request,
            id="not-forwardable",
        ),
        pytest.param(
            "proxy",
            _raw_envelope(b"\x00\x13\x00\x63\x00\x00\x00\x01\x00\x00", serialize_principal(Principal("User", "a")), bytes(4)),
            35,
            id="unknown-version",
        ),
    ],
)
async def test_envelope_refusals_carry_kafkas_error_codes(
    controller: tuple[EmbeddedController, str], user: str, payload: bytes, expected: int
) -> None:
    ctl, address = controller
    error, data = await trio.to_thread.run_sync(_send_envelope, address, user, f"{user}-secret", payload)
    assert (error, data) == (expected, None)
    assert ctl.image.topics == {}
