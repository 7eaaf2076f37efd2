"""The delegation-token APIs keep their times as plain int64s: Kafka answers -1 and takes any period."""

import struct
from typing import Any

import pytest

from envelope.build import build_entity
from envelope.codec import decode_body, decode_response_body, encode_request, encode_response, request_schema, response_schema
from envelope.header import peek_request_header

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@pytest.mark.parametrize("expiry", [-1, 0, LONG_MAX, LONG_MIN])
def test_a_renew_answer_with_any_expiry_reads_and_writes_back_the_same_bytes(expiry: int) -> None:
    # RenewDelegationTokenResponse v1 (not flexible): error code, expiry, throttle time, after a v0 header
    frame = struct.pack(">ihqi", 5, 64, expiry, 0)
    correlation_id, body = decode_response_body(39, 1, frame)
    assert (correlation_id, body.error_code, body.expiry_timestamp) == (5, 64, expiry)
    assert encode_response(body, correlation_id=5) == frame


@pytest.mark.parametrize(("api_key", "field"), [(38, "max_lifetime"), (39, "renew_period"), (40, "expiry_time_period")])
@pytest.mark.parametrize("period", [LONG_MIN, -1, 0, LONG_MAX])
def test_a_request_with_any_period_round_trips(api_key: int, field: str, period: int) -> None:
    values: dict[str, Any] = {"owner_principal_type": None, "owner_principal_name": None, "renewers": [], "hmac": b"\x00" * 64, field: period}
    for version in (1, 2):
        body = build_entity(request_schema(api_key, version), values)
        frame = encode_request(body, correlation_id=1, client_id="t")
        assert getattr(decode_body(api_key, version, frame, peek_request_header(frame).header_size), field) == period


def test_the_schemas_keep_kios_identity_and_field_order() -> None:
    schema = response_schema(38, 3)
    assert schema.__name__ == "CreateDelegationTokenResponse" and schema.__api_key__ == 38 and schema.__version__ == 3
    assert [f for f in schema.__dataclass_fields__] == [
        "error_code",
        "principal_type",
        "principal_name",
        "token_requester_principal_type",
        "token_requester_principal_name",
        "issue_timestamp",
        "expiry_timestamp",
        "max_timestamp",
        "token_id",
        "hmac",
        "throttle_time",
    ]
    assert request_schema(38, 3) is request_schema(38, 3)  # cached: one class per version
