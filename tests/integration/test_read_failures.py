"""A read route that throws, through a proxy on loopback in front of the embedded controller: answered as a Kafka
broker answers a handler that throws (KafkaApis.handleError: the request's getErrorResponse, UNKNOWN_SERVER_ERROR,
no message), audited with that code, logged with the traceback, and the connection stays open for the next request.

Issue 48 found such a throw (DescribeDelegationToken read a field its version lacks); the proxy then closed the
client's connection on every call. The route table entry is replaced here, in the test only, by one that throws.
"""

import logging
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, start_stack
from proxy.forward.read_routes import READ_ROUTES
from tests.integration.conftest import audit_records

UNKNOWN = ErrorCode.unknown_server_error

# One request per read, at the newest version the proxy advertises, naming something so the error lists it.
READS: dict[int, tuple[int, dict[str, Any]]] = {
    ApiKey.METADATA: (
        13,
        {
            "topics": [{"name": "orders", "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    ),
    ApiKey.DESCRIBE_CONFIGS: (
        4,
        {
            "resources": [{"resource_type": 2, "resource_name": "orders", "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
    ),
    ApiKey.DESCRIBE_ACLS: (
        3,
        {
            "resource_type_filter": 1,
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": None,
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        },
    ),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (1, {"components": [], "strict": False}),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, {"users": [{"name": "alice"}, {"name": "bob"}]}),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (3, {"owners": None}),
}


async def _throws(*_: Any) -> Any:
    raise AttributeError("'DescribedDelegationToken' object has no attribute 'token_requester_principal_type'")


def _error_codes(api_key: int, body: Any) -> list[int]:
    """Every error code of the answer: the top-level one where the API has it, then each listed entry's."""
    top = [int(body.error_code)] if hasattr(body, "error_code") else []
    entries: dict[int, str] = {
        ApiKey.METADATA: "topics",
        ApiKey.DESCRIBE_CONFIGS: "results",
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: "results",
    }
    return top + [int(item.error_code) for item in getattr(body, entries.get(api_key, ""), ())]


def test_every_read_is_exercised() -> None:
    assert set(READS) == set(READ_ROUTES)


async def test_a_read_that_throws_is_answered_and_the_connection_stays_open(
    nursery: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stack = await start_stack(nursery, tmp_path / "audit")
    address = f"127.0.0.1:{stack.proxy.listener('CLIENT').port}"
    for api_key in READS:
        monkeypatch.setitem(READ_ROUTES, api_key, _throws)

    def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        with wire.connect(address, timeout=30) as sock:
            assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
            for correlation_id, (api_key, (version, values)) in enumerate(READS.items(), start=10):
                body = wire.call(sock, api_key, version, values, correlation_id)  # each on the same connection
                seen[ApiKey(api_key).name] = (_error_codes(api_key, body), getattr(body, "error_message", None))
                if api_key == ApiKey.METADATA:
                    seen["metadata brokers"] = body.brokers
            versions = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"}, 99)
            seen["then ApiVersions"] = int(versions.error_code)
        return seen

    with caplog.at_level(logging.ERROR, logger="proxy.forward.local_routes"):
        seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "METADATA": ([UNKNOWN, UNKNOWN], None),  # the top-level code (v13), and the topic asked with it
        "metadata brokers": (),
        "DESCRIBE_CONFIGS": ([UNKNOWN], None),  # no top-level code: each resource asked, with it
        "DESCRIBE_ACLS": ([UNKNOWN], None),
        "DESCRIBE_CLIENT_QUOTAS": ([UNKNOWN], None),
        "DESCRIBE_USER_SCRAM_CREDENTIALS": ([UNKNOWN, UNKNOWN, UNKNOWN], None),
        "DESCRIBE_DELEGATION_TOKEN": ([UNKNOWN], None),
        "then ApiVersions": ErrorCode.none,
    }

    failures = [r for r in caplog.records if "answered UNKNOWN_SERVER_ERROR" in r.getMessage()]
    assert len(failures) == len(READS)
    assert all(r.exc_info is not None and r.exc_info[0] is AttributeError for r in failures), "logged with the traceback"

    records = [r["data"] for r in audit_records(tmp_path / "audit")]
    reads = {d["methodName"]: d for d in records if d["stage"] == "read"}
    assert sorted(reads) == sorted(
        f"kafka.{name}"
        for name in (
            "Metadata",
            "DescribeConfigs",
            "DescribeAcls",
            "DescribeClientQuotas",
            "DescribeUserScramCredentials",
            "DescribeDelegationToken",
        )
    )
    for record in reads.values():
        result = record["result"]
        assert (result["status"], result["errorCode"]) == ("ERROR", UNKNOWN), record
        assert [(e["errorCode"], "AttributeError" in e["message"]) for e in result["errors"]] == [(UNKNOWN, True)]
