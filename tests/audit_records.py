"""Reading and checking audit records in tests: every record must match proxy/audit/record.schema.json and the status
rules of docs/audit-schema.md ("Which status for which case")."""

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from proxy.audit.chain_format import CHECKPOINT_EVENT_TYPE
from proxy.audit.cloudevents import load_schema


@cache
def validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema())


def complete_lines(path: Path) -> list[str]:
    """The lines of an audit or spool file that were written whole (a SIGKILL may leave a torn last line)."""
    data = path.read_bytes()
    return [line for line in data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines() if line.strip()]


def records_under(directory: Path) -> list[dict[str, Any]]:
    """Every record in `*.jsonl` files below `directory`: published, staged and spooled.

    A running proxy may publish (rename) a staging file between listing and
    reading it; then the listing is taken again, a bounded number of times.
    """
    for _ in range(50):
        try:
            return [json.loads(line) for path in sorted(directory.rglob("*.jsonl")) for line in complete_lines(path)]
        except FileNotFoundError:
            continue
    raise AssertionError(f"audit files under {directory} kept moving while being read")


UNSEALED_PLACEHOLDER = {"chainseq": 1, "chainprev": "0" * 64}
"""What a record built in memory (`AuditEntry.record`) lacks until the writer seals its line (proxy/audit/chain.py)."""


def schema_errors(record: dict[str, Any]) -> list[str]:
    """How `record` breaks the JSON Schema. A record as built, without either chain attribute, is checked as the
    line the writer makes of it; whether written lines carry their chain is `tests.audit_records.chain_problems`."""
    if "chainseq" not in record and "chainprev" not in record:
        record = {**record, **UNSEALED_PLACEHOLDER}
    return [f"{'/'.join(map(str, error.absolute_path)) or '<record>'}: {error.message}" for error in validator().iter_errors(record)]


# Stages whose records carry a result, and the statuses each may have (docs/audit-schema.md, status rules).
STATUSES_OF_STAGE = {
    "outcome": {"SUCCESS", "FAILURE", "ERROR"},
    "local": {"SUCCESS"},
    "read": {"SUCCESS", "FAILURE", "ERROR"},
    "refused": {"REFUSED"},
    "authentication-failed": {"REFUSED"},
}


def _outcome_errors(status: str, result: dict[str, Any], upstream: dict[str, Any]) -> list[str]:
    problems = []
    if any(e["resource"] == "upstream" for e in result["errors"]):
        problems.append("an outcome names `upstream` as a resource")
    if status == "FAILURE" and (result["envelopeErrorCode"] != 0 or (result["errorCode"] == 0 and not result["errors"])):
        problems.append("an outcome FAILURE is the controller's answer (envelope error 0) with an error in it")
    if status == "ERROR":
        if result["envelopeErrorCode"] == 0 and result["errorCode"] == 0:
            problems.append("an outcome ERROR without an envelope error or an error code")
        if result["envelopeErrorCode"] is not None and upstream.get("attempts", 1) < 1:
            problems.append("an outcome ERROR with an envelope error from an upstream that was never sent the envelope")
    return problems


def _read_errors(status: str, result: dict[str, Any], authorization: dict[str, Any]) -> list[str]:
    problems = []
    failures = [e for e in result["errors"] if e["resource"] in ("upstream", None)]
    if status == "ERROR":
        if len(failures) != 1 or failures[0]["errorCode"] != result["errorCode"] or result["errorCode"] == 0:
            problems.append("a read ERROR names one failure (a row `upstream`, or no resource for the proxy's own) with the record's error code")
        if authorization.get("decision") == "DENIED":
            problems.append("a read the edge denied whole asked nothing upstream: FAILURE, not ERROR")
    if status == "FAILURE":
        if failures:
            problems.append("a read FAILURE names an upstream or proxy failure: that is ERROR")
        if not result["errors"] and result["errorCode"] == 0:
            problems.append("a read FAILURE without a denial or an error code")
    return problems


def status_errors(record: dict[str, Any]) -> list[str]:
    """How `record` breaks the status rules of docs/audit-schema.md; empty when it keeps them (or is older than version 3)."""
    if record.get("schemaversion") not in (3, 4, 5) or record.get("type") == CHECKPOINT_EVENT_TYPE:
        return []
    data = record["data"]
    stage, result, upstream = data["stage"], data.get("result"), data.get("upstream")
    problems: list[str] = []
    if "probe" in data and stage not in ("intent", "outcome"):
        problems.append(f"a {stage} record carries probe: only the intent and outcome of a forwarded probe do")
    allowed = STATUSES_OF_STAGE.get(stage)
    if allowed is None:
        return problems + ([] if result is None else [f"a {stage} record carries a result"])
    if result is None:
        return [*problems, f"a {stage} record has no result"]
    status, errors = result["status"], result["errors"]
    if status not in allowed:
        problems.append(f"a {stage} record is {status}, not one of {sorted(allowed)}")
    if upstream is not None and stage != "outcome":
        problems.append(f"a {stage} record names an upstream: only a forwarded request's intent and outcome do")
    if stage == "outcome" and upstream is None:
        problems.append(f"an outcome ({status}) names no upstream")
    if status == "SUCCESS":
        if result["errorCode"] not in (0, None) or result["envelopeErrorCode"] not in (0, None) or errors:
            problems.append("SUCCESS with an error code or an error row")
    elif status == "REFUSED":
        if result["envelopeErrorCode"] is not None or (data.get("authorizationInfo") or {}).get("decision") != "DENIED":
            problems.append("REFUSED needs no envelope error and a DENIED authorizationInfo (the proxy's own decision)")
        if data.get("forwardingPrincipal") is not None:
            problems.append("REFUSED names a forwarding principal: nothing was forwarded")
    elif stage == "outcome":
        problems += _outcome_errors(status, result, upstream or {})
    elif stage == "read":
        problems += _read_errors(status, result, data.get("authorizationInfo") or {})
    return problems


def proxied_by_errors(record: dict[str, Any]) -> list[str]:
    """Version 4 names the load balancer in every record (`requestMetadata.proxiedBy`, null for a direct client), and
    a client behind one is never the load balancer itself unless the load balancer spoke for itself (LOCAL)."""
    if record.get("schemaversion") not in (4, 5) or record.get("type") == CHECKPOINT_EVENT_TYPE:
        return []
    metadata = record["data"]["requestMetadata"]
    if "proxiedBy" not in metadata:
        return ["a version 4 record without requestMetadata.proxiedBy"]
    proxied = metadata["proxiedBy"]
    if proxied is not None and proxied["command"] == "PROXY" and (proxied["address"], proxied["port"]) == (metadata["clientAddress"], metadata["clientPort"]):
        return ["a proxied client named with the load balancer's own address and port"]
    return []


def assert_valid(records: list[dict[str, Any]]) -> None:
    """Each record matches the JSON Schema, the status rules and the proxiedBy rule."""
    for record in records:
        proxied = proxied_by_errors(record)
        assert not proxied, f"audit record breaks the proxiedBy rule: {proxied}\n{json.dumps(record, indent=1)}"
        errors = schema_errors(record)
        assert not errors, f"audit record does not match the schema: {errors}\n{json.dumps(record, indent=1)}"
        broken = status_errors(record)
        assert not broken, f"audit record breaks the status rules of docs/audit-schema.md: {broken}\n{json.dumps(record, indent=1)}"
