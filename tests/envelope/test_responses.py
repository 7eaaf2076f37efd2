"""error_response / response_errors for every served admin API and version."""

import uuid
from typing import Any

import pytest

from authz.admin_apis import SERVED_ADMIN_APIS, error_response, response_errors
from envelope.build import build_entity
from envelope.codec import (
    decode_body,
    decode_response_body,
    encode_request,
    encode_response,
    known_versions,
    request_schema,
    response_schema,
)
from envelope.header import peek_request_header
from envelope.responses import ResourceError, error_name

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")

# One version-independent request per API (a superset of every version's fields), two resources each.
REQUESTS: dict[int, dict[str, Any]] = {
    19: {
        "topics": [
            {"name": "orders", "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": []},
            {"name": "payments", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []},
        ],
        "timeout": 30_000,
        "validate_only": False,
    },
    20: {
        "topic_names": ["orders", "payments"],
        "topics": [{"name": "orders", "topic_id": TOPIC_ID}, {"name": "payments", "topic_id": TOPIC_ID}],
        "timeout": 30_000,
    },
    30: {
        "creations": [
            {
                "resource_type": 2,
                "resource_name": "orders",
                "resource_pattern_type": 3,
                "principal": "User:alice",
                "host": "*",
                "operation": 3,
                "permission_type": 3,
            },
            {
                "resource_type": 3,
                "resource_name": "grp",
                "resource_pattern_type": 4,
                "principal": "User:bob",
                "host": "10.0.0.1",
                "operation": 3,
                "permission_type": 2,
            },
        ]
    },
    31: {
        "filters": [
            {
                "resource_type_filter": 2,
                "resource_name_filter": "orders",
                "pattern_type_filter": 3,
                "principal_filter": None,
                "host_filter": None,
                "operation": 1,
                "permission_type": 1,
            },
            {
                "resource_type_filter": 1,
                "resource_name_filter": None,
                "pattern_type_filter": 1,
                "principal_filter": "User:bob",
                "host_filter": "*",
                "operation": 2,
                "permission_type": 3,
            },
        ]
    },
    33: {
        "resources": [
            {"resource_type": 2, "resource_name": "orders", "configs": [{"name": "retention.ms", "value": "1000"}]},
            {"resource_type": 4, "resource_name": "1", "configs": []},
        ],
        "validate_only": False,
    },
    37: {
        "topics": [{"name": "orders", "count": 6, "assignments": None}, {"name": "payments", "count": 2, "assignments": None}],
        "timeout": 30_000,
        "validate_only": False,
    },
    44: {
        "resources": [
            {
                "resource_type": 2,
                "resource_name": "orders",
                "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
            },
            {"resource_type": 4, "resource_name": "1", "configs": []},
        ],
        "validate_only": False,
    },
    43: {"election_type": 0, "topic_partitions": [{"topic": "orders", "partitions": [0, 1]}], "timeout": 30_000},
    45: {
        "timeout": 30_000,
        "allow_replication_factor_change": True,
        "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": [1]}, {"partition_index": 1, "replicas": None}]}],
    },
    46: {"timeout": 30_000, "topics": None},
    49: {
        "entries": [
            {"entity": [{"entity_type": "user", "entity_name": "alice"}], "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]},
            {"entity": [{"entity_type": "client-id", "entity_name": None}], "ops": [{"key": "request_percentage", "value": 0, "remove": True}]},
        ],
        "validate_only": False,
    },
    51: {
        "deletions": [{"name": "bob", "mechanism": 2}],
        "upsertions": [{"name": "alice", "mechanism": 1, "iterations": 4096, "salt": b"salt", "salted_password": b"salted"}],
    },
    55: {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
    57: {
        "timeout": 30_000,
        "feature_updates": [
            {"feature": "metadata.version", "max_version_level": 27, "upgrade_type": 1, "allow_downgrade": False},
            {"feature": "group.version", "max_version_level": 1, "upgrade_type": 1, "allow_downgrade": False},
        ],
        "validate_only": False,
    },
    38: {"owner_principal_type": "User", "owner_principal_name": "bob", "renewers": [{"principal_type": "User", "principal_name": "carol"}], "max_lifetime": -1},
    39: {"hmac": b"\x01" * 64, "renew_period": 3_600_000},
    40: {"hmac": b"\x01" * 64, "expiry_time_period": -1},
    64: {"broker_id": 7},
    80: {
        "cluster_id": None,
        "timeout": 30_000,
        "voter_id": 4,
        "voter_directory_id": TOPIC_ID,
        "listeners": [{"name": "CONTROLLER", "host": "10.0.0.4", "port": 9093}],
        "ack_when_committed": True,
    },
    81: {"cluster_id": "abc", "voter_id": 4, "voter_directory_id": TOPIC_ID},
}

EXPECTED_RESOURCES: dict[int, list[str]] = {
    19: ["orders", "payments"],
    20: ["orders", "payments"],
    30: ["acl", "acl"],
    31: ["acl-filter", "acl-filter"],
    33: ["orders", "1"],
    37: ["orders", "payments"],
    44: ["orders", "1"],
    43: ["orders-0", "orders-1"],
    45: ["orders-0", "orders-1"],
    46: [],
    49: ["user=alice", "client-id=<default>"],
    51: ["alice", "bob"],  # each user once, sorted, as Kafka's getErrorResponse lists them
    55: [],  # an error answer names no partition; the code is top-level
    57: [],  # UpdateFeaturesResponse.createWithErrors names no feature for an error; the code is top-level
    # one top-level code each
    38: [],
    39: [],
    40: [],
    64: [],
    80: [],
    81: [],
}


def _cases() -> list[Any]:
    cases = []
    for api_key in sorted(SERVED_ADMIN_APIS):
        known = known_versions(api_key)
        assert known is not None
        for version in range(known[0], known[1] + 1):
            cases.append(pytest.param(api_key, version, id=f"api{api_key}-v{version}"))
    return cases


def test_served_admin_apis() -> None:
    assert frozenset({19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51, 55, 57, 64, 80, 81}) == SERVED_ADMIN_APIS


def test_cases_cover_min_and_max_versions() -> None:
    ids = {(p.values[0], p.values[1]) for p in _cases()}
    for api_key in SERVED_ADMIN_APIS:
        low, high = known_versions(api_key)  # type: ignore[misc]
        assert (api_key, low) in ids
        assert (api_key, high) in ids


def _request(api_key: int, version: int) -> Any:
    body = build_entity(request_schema(api_key, version), REQUESTS[api_key])
    # make sure the request itself is a valid wire message at that version
    frame = encode_request(body, correlation_id=1, client_id="t")
    assert decode_body(api_key, version, frame, peek_request_header(frame).header_size) == body
    return body


@pytest.mark.parametrize(("api_key", "version"), _cases())
@pytest.mark.parametrize("code", [41, 7])  # NOT_CONTROLLER, REQUEST_TIMED_OUT
def test_error_response_every_resource(api_key: int, version: int, code: int) -> None:
    request = _request(api_key, version)
    response = error_response(api_key, version, request, code, "controller unavailable")
    assert type(response) is response_schema(api_key, version)

    frame = encode_response(response, correlation_id=31337)
    correlation_id, decoded = decode_response_body(api_key, version, frame)
    assert correlation_id == 31337
    assert decoded == response

    top, resources = response_errors(api_key, decoded)
    # APIs with a top-level error code carry it there too (an admin client reads that first)
    assert top == (code if hasattr(decoded, "error_code") and api_key not in (19, 20, 30, 31, 33, 37, 44, 49, 51) else 0)
    expected = EXPECTED_RESOURCES[api_key]
    assert [r.resource for r in resources] == expected
    assert [r.error_code for r in resources] == [code] * len(expected)
    assert all(r.error_name == error_name(code) for r in resources)
    for r in resources:
        # the message is carried wherever the version has an error_message field
        assert r.message in ("controller unavailable", None)


@pytest.mark.parametrize(("api_key", "version"), [(19, 2), (33, 0), (37, 0), (44, 0), (30, 1), (31, 1)])
def test_error_message_is_carried(api_key: int, version: int) -> None:
    response = error_response(api_key, version, _request(api_key, version), 41, "boom")
    _, resources = response_errors(api_key, response)
    assert [r.message for r in resources] == ["boom", "boom"]


def test_config_error_answer_echoes_resource_type() -> None:
    response = error_response(44, 1, _request(44, 1), 41)
    assert [(int(r.resource_type), str(r.resource_name)) for r in response.responses] == [(2, "orders"), (4, "1")]


def test_response_errors_reads_top_level_code_and_unknown_api() -> None:
    body = build_entity(response_schema(18, 0), {"error_code": 35, "api_keys": []})
    assert response_errors(18, body) == (35, [])


def test_error_response_for_unserved_api_raises() -> None:
    with pytest.raises(ValueError):
        error_response(3, 12, object(), 41)


def test_error_name() -> None:
    assert error_name(41) == "NOT_CONTROLLER"
    assert error_name(0) == "NONE"
    assert error_name(29) == "TOPIC_AUTHORIZATION_FAILED"
    assert error_name(12345) == "UNKNOWN_ERROR_CODE_12345"
    assert ResourceError("t", 41, None).error_name == "NOT_CONTROLLER"


def test_delete_topics_by_id_error_answer_echoes_the_id() -> None:
    request = build_entity(request_schema(20, 6), {"topics": [{"name": None, "topic_id": TOPIC_ID}], "timeout": 1000})
    response = error_response(20, 6, request, 41)
    (item,) = response.responses
    assert item.name is None
    assert item.topic_id == TOPIC_ID
    assert int(item.error_code) == 41


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_token_error_answer_is_kafkas_get_error_response(version: int) -> None:
    """CreateDelegationTokenRequest.getErrorResponse: owner (and v3's requester) User:ANONYMOUS, every time -1, no token."""
    response = error_response(38, version, _request(38, version), 7)
    _, decoded = decode_response_body(38, version, encode_response(response, correlation_id=1))
    assert (decoded.error_code, decoded.principal_type, decoded.principal_name) == (7, "User", "ANONYMOUS")
    assert (decoded.issue_timestamp, decoded.expiry_timestamp, decoded.max_timestamp, decoded.token_id, decoded.hmac) == (-1, -1, -1, "", b"")
    if version == 3:
        assert (decoded.token_requester_principal_type, decoded.token_requester_principal_name) == ("User", "ANONYMOUS")


@pytest.mark.parametrize("api_key", [39, 40])
def test_a_renew_or_expire_error_answer_leaves_the_expiry_at_zero(api_key: int) -> None:
    response = error_response(api_key, 2, _request(api_key, 2), 7)
    assert (response.error_code, response.expiry_timestamp) == (7, 0)
