"""Connection events: audit records of type `io.github.kafka-envelope-proxy.connection` (docs/audit-schema.md).

One connection gives `connected`, then `authenticated` (SASL or SSL) or
`authentication-failed`, then a `reauthenticated` for each re-authentication (KIP-368),
then `disconnected` with its cause; a connection refused as a whole gives `refused`
(proxy/net/refusals.py).
"""

from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from proxy.audit.cloudevents import CONNECTION_EVENT_TYPE, make_record, new_id
from proxy.audit.pipeline import AuditLog
from proxy.audit.proxied import proxied_by_record
from proxy.net.addresses import ProxiedBy
from proxy.net.refusals import RefusalCounter, RefusedConnection

CONNECTED = "connected"
REFUSED = "refused"
AUTHENTICATED = "authenticated"
REAUTHENTICATED = "reauthenticated"
AUTHENTICATION_FAILED = "authentication-failed"
DISCONNECTED = "disconnected"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a connection came in: what every connection event of it names."""

    listener: str
    security_protocol: str
    host: str
    port: int
    connection_id: str | None
    proxied_by: ProxiedBy | None = None
    """The load balancer the client came through; `host` and `port` are then the client its header named."""


@dataclass(frozen=True, slots=True)
class ConnectionEvent:
    """One connection event; `record` makes the audit record of it."""

    stage: str
    endpoint: Endpoint
    principal: str | None = None
    mechanism: str | None = None
    authentication_id: str | None = None
    authorization: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    timings: dict[str, float] | None = None
    cause: str | None = None
    duration_ms: float | None = None
    requests: int | None = None
    software: tuple[str | None, str | None] = (None, None)

    def record(self, node_id: int) -> dict[str, Any]:
        where = self.endpoint
        data: dict[str, Any] = {
            "requestId": new_id(),
            "stage": self.stage,
            "methodName": "kafka.Connection",
            "apiKey": None,
            "apiVersion": None,
            "authenticationInfo": {
                "principal": self.principal,
                "mechanism": self.mechanism,
                "listener": where.listener,
                "securityProtocol": where.security_protocol,
                **({"authenticationId": self.authentication_id} if self.authentication_id is not None else {}),
            },
            "forwardingPrincipal": None,
            "requestMetadata": {
                "clientAddress": where.host,
                "clientPort": where.port,
                "clientId": None,
                "clientSoftwareName": self.software[0],
                "clientSoftwareVersion": self.software[1],
                "correlationId": None,
                "connectionId": where.connection_id,
                "proxiedBy": None if where.proxied_by is None else proxied_by_record(where.proxied_by),
            },
            "resources": [],
            "authorizationInfo": self.authorization,
            "result": self.result,
            "timings": self.timings,
            "upstream": None,
            "connection": {
                "cause": self.cause,
                "durationMs": None if self.duration_ms is None else round(self.duration_ms, 3),
                "requests": self.requests,
            },
        }
        return make_record(node_id, None, data, event_type=CONNECTION_EVENT_TYPE)


def authentication_failed_result(error_code: int = ErrorCode.sasl_authentication_failed) -> dict[str, Any]:
    return {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": error_code, "errors": []}


def refusal_record(node_id: int, event: RefusedConnection) -> dict[str, Any]:
    """A connection event (stage `refused`) for a connection refused before any request."""
    endpoint = Endpoint(event.listener, event.security_protocol, event.host, event.port, event.connection_id, event.proxied_by)
    return ConnectionEvent(
        REFUSED,
        endpoint,
        principal=event.principal,
        mechanism=event.mechanism,
        authorization={"decision": "DENIED", "reason": event.reason, "detail": event.detail},
        result={"status": "REFUSED", "envelopeErrorCode": None, "errorCode": None, "errors": []},
        timings={"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.0},
    ).record(node_id)


class AuditedRefusals(RefusalCounter):
    """The proxy's callback: count, then write the audit record (before the connection is closed)."""

    def __init__(self, audit: AuditLog, node_id: int) -> None:
        super().__init__()
        self.audit = audit
        self.node_id = node_id

    async def __call__(self, event: RefusedConnection) -> None:
        await super().__call__(event)
        await self.audit.write(refusal_record(self.node_id, event))
