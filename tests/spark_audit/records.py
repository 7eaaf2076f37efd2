"""Hand-made audit records for the spark_audit tests (docs/audit-schema.md, versions 1 and 2)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

REQUEST_TYPE = "io.github.kafka-envelope-proxy.request"
CONNECTION_TYPE = "io.github.kafka-envelope-proxy.connection"


def record_id(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012d}"


def rid(name: str) -> str:
    """The request id (a UUID, as the schema wants) the tests call ``name``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"request/{name}"))


def resource(name: str, operation: str = "CREATE", kind: str = "TOPIC") -> dict[str, str]:
    return {"type": kind, "name": name, "patternType": "LITERAL", "operation": operation}


def acl(principal: str, operation: str, kind: str, name: str, pattern: str = "LITERAL", **extra: str) -> dict[str, str]:
    """One binding of an ACL file as the audit job's what-if and hygiene read it (docs/audit-job.md)."""
    return {"principal": principal, "operation": operation, "resourceType": kind, "resourceName": name, "patternType": pattern, **extra}


def err(code: int, name: str, resource_name: str = "orders") -> dict[str, Any]:
    return {"resource": resource_name, "errorCode": code, "errorName": name, "message": "m"}


def request(
    n: int,
    time: str,
    request_id: str,
    stage: str,
    *,
    principal: str | None = "User:alice",
    method: str = "kafka.CreateTopics",
    api_key: int | None = 19,
    subject: str | None = "topic:orders",
    resources: Sequence[dict[str, str]] | None = None,
    status: str | None = None,
    error_code: int | None = 0,
    errors: Sequence[dict[str, Any]] = (),
    client: str = "127.0.0.1",
    listener: str = "CLIENT",
    forwarding: str | None = "User:proxy",
    total_ms: float = 1.2,
    upstream_ms: float = 1.0,
    decision: dict[str, Any] | None = None,
    version: int = 2,
) -> dict[str, Any]:
    """A schema-conforming request record; ``result`` and ``timings`` are null for intents."""
    result: dict[str, Any] | None = None
    timings: dict[str, float] | None = None
    if stage != "intent":
        result = {"status": status, "envelopeErrorCode": 0, "errorCode": error_code, "errors": list(errors)}
        timings = {"queueMs": 0.0, "upstreamMs": upstream_ms, "totalMs": total_ms}
    return {
        "specversion": "1.0",
        "id": record_id(n),
        "type": REQUEST_TYPE,
        "source": "envelope-proxy/1",
        "time": time,
        "subject": subject,
        "datacontenttype": "application/json",
        "schemaversion": version,
        "data": {
            "requestId": rid(request_id),
            "stage": stage,
            "methodName": method,
            "apiKey": api_key,
            "apiVersion": 5,
            "authenticationInfo": {
                "principal": principal,
                "mechanism": "PLAIN",
                "listener": listener,
                "securityProtocol": "SASL_PLAINTEXT",
            },
            "forwardingPrincipal": forwarding,
            "requestMetadata": {
                "clientAddress": client,
                "clientPort": 50000 + n,
                "clientId": "admin",
                "clientSoftwareName": None,
                "clientSoftwareVersion": None,
                "correlationId": n,
                "connectionId": f"c-{n}",
            },
            "resources": [resource("orders")] if resources is None else list(resources),
            "authorizationInfo": decision,
            "result": result,
            "timings": timings,
            "upstream": {"address": "127.0.0.1:9093", "nodeId": 1},
        },
    }


def connection(
    n: int,
    time: str,
    stage: str,
    *,
    principal: str | None = None,
    client: str = "10.0.0.9",
    listener: str = "CLIENT",
    mechanism: str | None = "PLAIN",
    reason: str | None = None,
) -> dict[str, Any]:
    """A version 2 connection event; ``authentication-failed`` and ``refused`` carry Kafka's refusal shape."""
    refused = stage in ("authentication-failed", "refused")
    result: dict[str, Any] | None = None
    authorization: dict[str, Any] | None = None
    if refused:
        code = 58 if stage == "authentication-failed" else None
        result = {"status": "REFUSED", "errorCode": code, "envelopeErrorCode": None, "errors": []}
        authorization = {"decision": "DENIED", "reason": reason or stage, "detail": "d"}
    return {
        "specversion": "1.0",
        "id": record_id(n),
        "type": CONNECTION_TYPE,
        "source": "envelope-proxy/1",
        "time": time,
        "subject": None,
        "datacontenttype": "application/json",
        "schemaversion": 2,
        "data": {
            "requestId": rid(f"conn-{n}"),
            "stage": stage,
            "methodName": "kafka.Connection",
            "apiKey": None,
            "apiVersion": None,
            "authenticationInfo": {
                "principal": principal,
                "mechanism": mechanism,
                "listener": listener,
                "securityProtocol": "SASL_PLAINTEXT",
            },
            "forwardingPrincipal": None,
            "requestMetadata": {
                "clientAddress": client,
                "clientPort": 40000 + n,
                "clientId": None,
                "clientSoftwareName": None,
                "clientSoftwareVersion": None,
                "correlationId": None,
                "connectionId": f"c-{n}",
            },
            "resources": [],
            "authorizationInfo": authorization,
            "result": result,
            "timings": None,
            "upstream": None,
            "connection": {"cause": None, "durationMs": None, "requests": None},
        },
    }


def write_jsonl(path: Path, lines: Sequence[dict[str, Any] | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(line if isinstance(line, str) else json.dumps(line))
            f.write("\n")
    return path


def ts(text: str) -> datetime:
    """The naive datetime PySpark returns for a UTC instant (in the test process's local time zone)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone().replace(tzinfo=None)
