"""Connections refused as a whole (IP filter, connection limits, privileged principals, SSL principal mapping).

The accept loop and the SASL exchange report each refusal once through an
`OnRefused` callback; the proxy turns it into an audit record, every server
counts it (until metrics are wired, `RefusalCounter.counts` is the metric).
"""

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from proxy.audit import AuditLog
from proxy.connection_events import REFUSED, connection_record

IP_FILTER = "ip-filter"
PRIVILEGED_PRINCIPAL = "privileged-principal"
SSL_PRINCIPAL_MAPPING = "ssl-principal-mapping"  # an SSL client certificate's DN matched no ssl.principal.mapping.rules
PROTOCOL_ERROR = "protocol-error"  # bytes Kafka would close the connection for: a bad frame size, a malformed header or SASL frame


@dataclass(frozen=True)
class RefusedConnection:
    listener: str
    security_protocol: str
    host: str
    port: int
    reason: str  # IP_FILTER, PRIVILEGED_PRINCIPAL, SSL_PRINCIPAL_MAPPING, or the limit's key (max.connections, max.connections.per.ip, ...)
    detail: str  # the matching rule or the limit, for people reading the log or the audit
    connection_id: str | None = None
    principal: str | None = None
    mechanism: str | None = None


OnRefused = Callable[[RefusedConnection], Awaitable[None]]


class RefusalCounter:
    """Counts refusals by (listener, reason)."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    async def __call__(self, event: RefusedConnection) -> None:
        self.counts[(event.listener, event.reason)] += 1


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
