"""The status rules of docs/audit-schema.md ("Which status for which case"), record by record, and the check the
integration tiers run on every record (tests/audit_records.py `status_errors`)."""

import copy
from typing import Any

import orjson
import trio
from kio.schema.errors import ErrorCode

from authz.actions import Operation, ResourceAccess, cluster, topics
from authz.model import CLUSTER_NAME, PatternType, ResourceType
from envelope.apis import ApiKey
from envelope.header import RequestHeaderInfo
from proxy.audit.pipeline import AuditLog
from proxy.audit.request_records import BY_EDGE, BY_PROXY, BY_UPSTREAM, Failed, Read, Refused, RequestAudit
from proxy.forward.reads import denial_code
from proxy.net.addresses import ControllerAddress
from tests.audit_records import assert_valid, status_errors
from tests.proxy.audit.test_pipeline import FlakySink
from tests.proxy.audit.test_request_parameters import CALLER

DESCRIBE_ACLS = RequestHeaderInfo(ApiKey.DESCRIBE_ACLS, 3, 5, "test", 2, 20)
CREATE_TOPICS = RequestHeaderInfo(ApiKey.CREATE_TOPICS, 7, 6, "test", 2, 20)
DESCRIBE_CLUSTER = ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, Operation.DESCRIBE)


async def _records(header: RequestHeaderInfo, steps: Any, *, forwarded: bool = False) -> list[dict[str, Any]]:
    from proxy.audit.request_records import Forwarding

    sink = FlakySink(failures=0)
    log = AuditLog([sink])
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        audit = RequestAudit(log, 1, CALLER, header, forwarding=Forwarding("User:proxy", "c:9093") if forwarded else None)
        await steps(audit)
        await log.aclose(5)
    records = [orjson.loads(entry.line) for entry in sink.kept]
    assert_valid(records)  # the JSON Schema and the status rules
    return records


async def test_a_describe_acls_the_edge_denies_is_a_failure_not_an_upstream_error() -> None:
    """Finding 8 of issue 50: the proxy's own denial was ERROR, with an `upstream` row no upstream wrote."""
    denied = Read("acl", [DESCRIBE_CLUSTER], [DESCRIBE_CLUSTER], denial_code, ErrorCode.cluster_authorization_failed, None, BY_EDGE)
    (record,) = await _records(DESCRIBE_ACLS, lambda audit: audit.record(denied))
    data = record["data"]
    assert data["result"] == {
        "status": "FAILURE",
        "envelopeErrorCode": None,
        "errorCode": ErrorCode.cluster_authorization_failed,
        "errors": [{"resource": CLUSTER_NAME, "errorCode": 31, "errorName": "CLUSTER_AUTHORIZATION_FAILED", "message": "denied at the edge"}],
    }
    assert data["authorizationInfo"]["decision"] == "DENIED" and data["upstream"] is None


async def test_the_check_catches_the_record_of_finding_8() -> None:
    denied = Read("acl", [DESCRIBE_CLUSTER], [DESCRIBE_CLUSTER], denial_code, ErrorCode.cluster_authorization_failed, None, BY_EDGE)
    (record,) = await _records(DESCRIBE_ACLS, lambda audit: audit.record(denied))
    as_before = copy.deepcopy(record)
    as_before["data"]["result"]["status"] = "ERROR"
    as_before["data"]["result"]["errors"].append({"resource": "upstream", "errorCode": 31, "errorName": "CLUSTER_AUTHORIZATION_FAILED", "message": None})
    assert "a read the edge denied whole asked nothing upstream: FAILURE, not ERROR" in status_errors(as_before)


async def test_an_error_of_the_read_upstream_is_error_with_one_upstream_row() -> None:
    failed = Read("acl", [DESCRIBE_CLUSTER], [], denial_code, ErrorCode.unknown_server_error, "the read upstream has not answered yet", BY_UPSTREAM)
    (record,) = await _records(DESCRIBE_ACLS, lambda audit: audit.record(failed))
    result = record["data"]["result"]
    assert result["status"] == "ERROR"
    assert [(e["resource"], e["errorCode"]) for e in result["errors"]] == [("upstream", -1)]


async def test_the_proxys_own_failure_is_error_naming_no_upstream() -> None:
    failed = Read("acl", [], [], denial_code, ErrorCode.unknown_server_error, "the proxy failed answering it: AttributeError: x", BY_PROXY)
    (record,) = await _records(DESCRIBE_ACLS, lambda audit: audit.record(failed))
    result = record["data"]["result"]
    assert result["status"] == "ERROR"
    assert [(e["resource"], e["message"]) for e in result["errors"]] == [(None, "the proxy failed answering it: AttributeError: x")]


async def test_a_partial_denial_at_the_edge_is_a_failure() -> None:
    asked = topics(["a", "b"], Operation.DESCRIBE)
    (record,) = await _records(DESCRIBE_ACLS, lambda audit: audit.record(Read("acl", asked, asked[1:], denial_code, 0, None)))
    assert record["data"]["result"]["status"] == "FAILURE" and record["data"]["authorizationInfo"]["decision"] == "ALLOWED"


async def test_a_refused_admin_request_names_no_upstream_and_no_forwarding_principal() -> None:
    refused = Refused("request body cannot be decoded: truncated")
    (record,) = await _records(CREATE_TOPICS, lambda audit: audit.record(refused), forwarded=True)
    data = record["data"]
    assert (data["stage"], data["result"]["status"]) == ("refused", "REFUSED")
    assert data["upstream"] is None and data["forwardingPrincipal"] is None


async def test_an_unreachable_controller_is_error_and_the_controllers_refusal_names_it() -> None:
    async def unreachable(audit: RequestAudit) -> None:
        audit.resources = topics(["a"], Operation.CREATE)
        await audit.intent()
        await audit.record(Failed(None, ErrorCode.request_timed_out, "no active controller known"))

    _, outcome = await _records(CREATE_TOPICS, unreachable, forwarded=True)
    assert (outcome["data"]["result"]["status"], outcome["data"]["upstream"]["attempts"]) == ("ERROR", 0)

    async def refused_envelope(audit: RequestAudit) -> None:
        audit.resources = cluster(Operation.CREATE)
        await audit.intent()
        audit.delivered([ControllerAddress("c", 9093, 3000)], ControllerAddress("c", 9093, 3000), 0.0)
        await audit.record(Failed(ErrorCode.cluster_authorization_failed, ErrorCode.cluster_authorization_failed, "the proxy lacks ClusterAction"))

    _, outcome = await _records(CREATE_TOPICS, refused_envelope, forwarded=True)
    assert outcome["data"]["result"]["status"] == "ERROR" and outcome["data"]["upstream"]["attempts"] == 1


def test_the_check_names_each_broken_rule() -> None:
    base = {"schemaversion": 3, "data": {"stage": "read", "upstream": None, "forwardingPrincipal": None, "authorizationInfo": None}}

    def broken(stage: str, result: dict[str, Any] | None, **data: Any) -> list[str]:
        record = copy.deepcopy(base)
        record["data"].update(stage=stage, result=result, **data)
        return status_errors(record)

    ok = {"status": "SUCCESS", "envelopeErrorCode": None, "errorCode": 0, "errors": []}
    assert broken("local", ok) == []
    assert broken("local", {**ok, "status": "ERROR"})
    assert broken("refused", {**ok, "status": "REFUSED"}, authorizationInfo={"decision": "DENIED"}) == []
    assert broken("refused", {**ok, "status": "REFUSED"}, authorizationInfo={"decision": "DENIED"}, upstream={"address": "c:1", "nodeId": None})
    assert broken("outcome", {**ok, "envelopeErrorCode": 0})  # no upstream named
    assert broken("outcome", {"status": "FAILURE", "envelopeErrorCode": 0, "errorCode": 0, "errors": []}, upstream={"address": "c", "nodeId": 1})
    assert broken("intent", None) == [] and broken("intent", ok)
    assert broken("read", {"status": "ERROR", "envelopeErrorCode": None, "errorCode": -1, "errors": []})  # which failure?
    assert status_errors({"schemaversion": 2, "data": {"stage": "read", "result": {"status": "ERROR"}}}) == []  # older records: as they were
