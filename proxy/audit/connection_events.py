"""Connection events: audit records of type `io.github.kafka-envelope-proxy.connection` (docs/audit-schema.md).

One connection gives `connected`, then `authenticated` (SASL or SSL) or
`authentication-failed`, then `disconnected` with its cause; a connection refused
as a whole gives `refused` (proxy/net/refusals.py).
"""

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from proxy.audit.pipeline import CONNECTION_EVENT_TYPE, AuditLog, make_record
from proxy.net.refusals import RefusalCounter, RefusedConnection

CONNECTED = "connected"
REFUSED = "refused"
AUTHENTICATED = "authenticated"
AUTHENTICATION_FAILED = "authentication-failed"
DISCONNECTED = "disconnected"



def connection_record(
    node_id: int,
    stage: str,
    *,
    listener: str,
    security_protocol: str,
    host: str,
    port: int,
    connection_id: str | None,
    principal: str | None = None,
    mechanism: str | None = None,
    authorization: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
    timings: dict[str, float] | None = None,
    cause: str | None = None,
    duration_ms: float | None = None,
    requests: int | None = None,
    software: tuple[str | None, str | None] = (None, None),
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "requestId": str(uuid.uuid4()),
        "stage": stage,
        "methodName": "kafka.Connection",
        "apiKey": None,
        "apiVersion": None,
        "authenticationInfo": {
            "principal": principal,
            "mechanism": mechanism,
            "listener": listener,
            "securityProtocol": security_protocol,
        },
        "forwardingPrincipal": None,
        "requestMetadata": {
            "clientAddress": host,
            "clientPort": port,
            "clientId": None,
            "clientSoftwareName": software[0],
            "clientSoftwareVersion": software[1],
            "correlationId": None,
            "connectionId": connection_id,
        },
        "resources": [],
        "authorizationInfo": authorization,
        "result": result,
        "timings": timings,
        "upstream": None,
        "connection": {
            "cause": cause,
            "durationMs": None if duration_ms is None else round(duration_ms, 3),
            "requests": requests,
        },
    }
    return make_record(node_id, None, data, event_type=CONNECTION_EVENT_TYPE)


def authentication_failed_result(error_code: int = ErrorCode.sasl_authentication_failed) -> dict[str, Any]:
    return {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": error_code, "errors": []}


def refusal_record(node_id: int, event: RefusedConnection) -> dict[str, Any]:
    """A connection event (stage `refused`) for a connection refused before any request."""
    return connection_record(
        node_id,
        REFUSED,
        listener=event.listener,
        security_protocol=event.security_protocol,
        host=event.host,
        port=event.port,
        connection_id=event.connection_id,
        principal=event.principal,
        mechanism=event.mechanism,
        authorization={"decision": "DENIED", "reason": event.reason, "detail": event.detail},
        result={"status": "REFUSED", "envelopeErrorCode": None, "errorCode": None, "errors": []},
        timings={"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.0},
    )


class AuditedRefusals(RefusalCounter):
    """The proxy's callback: count, then write the audit record (before the connection is closed)."""

    def __init__(self, audit: AuditLog, node_id: int) -> None:
        super().__init__()
        self.audit = audit
        self.node_id = node_id

    async def __call__(self, event: RefusedConnection) -> None:
        await super().__call__(event)
        await self.audit.write(refusal_record(self.node_id, event))
