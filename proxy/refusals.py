"""Connections refused as a whole (IP filter, connection limits, privileged principals, SSL principal mapping).

The accept loop and the SASL exchange report each refusal once through an
`OnRefused` callback; the proxy turns it into an audit record, every server
counts it (until metrics are wired, `RefusalCounter.counts` is the metric).
"""

import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxy.audit import AuditLog, make_record

IP_FILTER = "ip-filter"
PRIVILEGED_PRINCIPAL = "privileged-principal"
SSL_PRINCIPAL_MAPPING = "ssl-principal-mapping"  # an SSL client certificate's DN matched no ssl.principal.mapping.rules


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


OnRefused = Callable[[RefusedConnection], None]


class RefusalCounter:
    """Counts refusals by (listener, reason)."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def __call__(self, event: RefusedConnection) -> None:
        self.counts[(event.listener, event.reason)] += 1


def refusal_record(node_id: int, event: RefusedConnection) -> dict[str, Any]:
    """An audit record (stage `refused`, method `kafka.Connection`) for a connection refused before any request."""
    data: dict[str, Any] = {
        "requestId": str(uuid.uuid4()),
        "stage": "refused",
        "methodName": "kafka.Connection",
        "apiKey": None,
        "apiVersion": None,
        "authenticationInfo": {
            "principal": event.principal,
            "mechanism": event.mechanism,
            "listener": event.listener,
            "securityProtocol": event.security_protocol,
        },
        "forwardingPrincipal": None,
        "requestMetadata": {
            "clientAddress": event.host,
            "clientPort": event.port,
            "clientId": None,
            "clientSoftwareName": None,
            "clientSoftwareVersion": None,
            "correlationId": None,
            "connectionId": event.connection_id,
        },
        "resources": [],
        "authorizationInfo": {"decision": "DENIED", "reason": event.reason, "detail": event.detail},
        "result": {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": None, "errors": []},
        "timings": {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.0},
        "upstream": None,
    }
    return make_record(node_id, None, data)


class AuditedRefusals(RefusalCounter):
    """The proxy's callback: count, then write the audit record."""

    def __init__(self, audit: AuditLog, node_id: int) -> None:
        super().__init__()
        self.audit = audit
        self.node_id = node_id

    def __call__(self, event: RefusedConnection) -> None:
        super().__call__(event)
        self.audit.write(refusal_record(self.node_id, event))
