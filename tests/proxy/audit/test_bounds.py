"""What a client chooses cannot decide how large an audit record grows."""

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.audit.cloudevents import TRUNCATION_MARK, RecordLimits, _bounded_copy, encode, encode_bounded, first_entries, make_record
from tests.audit_records import assert_valid


def _request_record(*, client_id: str = "c", software: str = "app", resources: int = 1, name: str = "orders") -> dict[str, Any]:
    data: dict[str, Any] = {
        "requestId": "6f1c1d6e-6a39-4d7c-9a53-4c0f6b2d8a11",
        "stage": "intent",
        "methodName": "kafka.CreateTopics",
        "apiKey": 19,
        "apiVersion": 7,
        "authenticationInfo": {"principal": "User:alice", "mechanism": "PLAIN", "listener": "CLIENT", "securityProtocol": "SASL_PLAINTEXT"},
        "forwardingPrincipal": "User:proxy",
        "requestMetadata": {
            "clientAddress": "127.0.0.1",
            "clientPort": 5000,
            "clientId": client_id,
            "clientSoftwareName": software,
            "clientSoftwareVersion": "1.0",
            "correlationId": 1,
            "connectionId": "CLIENT-1",
            "proxiedBy": None,
        },
        "resources": [],
        "authorizationInfo": None,
        "result": None,
        "timings": None,
        "upstream": {"address": "127.0.0.1:9093", "nodeId": None},
        "connection": None,
    }
    rows = [{"type": "TOPIC", "name": f"{name}-{i}" if resources > 1 else name, "patternType": "LITERAL", "operation": "CREATE"} for i in range(resources)]
    data["resources"] = [r for r in first_entries(data, rows, 1000, "resources")]
    return make_record(100, f"topic:{rows[0]['name']}", data)


def test_a_small_record_is_written_as_it_is() -> None:
    record = _request_record()
    bounded, line = encode_bounded(record, RecordLimits())
    assert bounded == record
    assert "truncated" not in bounded["data"]
    assert json.loads(line) == record


def test_client_chosen_strings_are_capped_and_marked() -> None:
    record = _request_record(client_id="x" * 100_000, software="a" * 30_000, name="t" * 5000)
    bounded, line = encode_bounded(record, RecordLimits(max_string_chars=256))
    meta = bounded["data"]["requestMetadata"]
    assert meta["clientId"] == "x" * 256 + TRUNCATION_MARK
    assert meta["clientSoftwareName"].endswith(TRUNCATION_MARK) and len(meta["clientSoftwareName"]) <= 256 + len(TRUNCATION_MARK)
    assert bounded["data"]["resources"][0]["name"] == "t" * 256 + TRUNCATION_MARK
    assert bounded["subject"].endswith(TRUNCATION_MARK)
    assert set(bounded["data"]["truncated"]["fields"]) >= {"requestMetadata.clientId", "requestMetadata.clientSoftwareName", "resources.name", "subject"}
    assert len(line) < 4096
    assert_valid([bounded])


def test_a_long_resource_list_keeps_its_first_entries_and_counts_the_rest() -> None:
    record = _request_record(resources=100_000)
    assert record["data"]["truncated"]["omitted"] == {"resources": 99_000}  # cut before the rows were built
    bounded, _ = encode_bounded(record, RecordLimits(max_resources=10))
    assert [r["name"] for r in bounded["data"]["resources"]] == [f"orders-{i}" for i in range(10)]
    assert bounded["data"]["truncated"]["omitted"] == {"resources": 99_990}
    assert_valid([bounded])


def test_no_record_exceeds_the_byte_limit() -> None:
    record = _request_record(resources=5000, name="n" * 200, client_id="c" * 1000)
    limits = RecordLimits(max_string_chars=1024, max_resources=5000, max_record_bytes=16_384)
    bounded, line = encode_bounded(record, limits)
    assert len(line) <= limits.max_record_bytes
    kept = len(bounded["data"]["resources"])
    assert 0 < kept < 5000
    assert bounded["data"]["truncated"]["omitted"]["resources"] == 5000 - kept
    assert_valid([bounded])


_LIMIT_CHARS, _LIMIT_ROWS = 32, 4
_AROUND_THE_LIMIT = st.text(alphabet="aé", min_size=_LIMIT_CHARS - 2, max_size=_LIMIT_CHARS + 2)


@settings(max_examples=300, deadline=None)
@given(
    client_id=_AROUND_THE_LIMIT,
    software=_AROUND_THE_LIMIT,
    name=st.text(alphabet="t", min_size=_LIMIT_CHARS - 8, max_size=_LIMIT_CHARS),
    resources=st.integers(min_value=1, max_value=_LIMIT_ROWS + 2),
    errors=st.lists(st.tuples(_AROUND_THE_LIMIT, _AROUND_THE_LIMIT), max_size=_LIMIT_ROWS + 2),
    reason=st.one_of(st.none(), _AROUND_THE_LIMIT),
)
def test_a_record_within_its_limits_is_written_as_the_capping_copy_would_write_it(
    client_id: str, software: str, name: str, resources: int, errors: list[tuple[str, str]], reason: str | None
) -> None:
    """encode_bounded skips the capping copy when nothing needs cutting: the line must be the same either way,
    with every string and list just under, at and just over its limit."""
    record = _request_record(client_id=client_id, software=software, name=name, resources=resources)
    record["data"]["result"] = {"status": "FAILURE", "errors": [{"resource": r, "errorCode": 1, "message": m} for r, m in errors]}
    if reason is not None:
        record["data"]["authorizationInfo"] = {"decision": "DENIED", "reason": reason, "denied": record["data"]["resources"]}
    limits = RecordLimits(max_string_chars=_LIMIT_CHARS, max_resources=_LIMIT_ROWS)
    bounded, line = encode_bounded(record, limits)
    assert line == encode(_bounded_copy(record, _LIMIT_CHARS, _LIMIT_ROWS))
    assert json.loads(line) == bounded
