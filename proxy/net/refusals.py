"""Connections refused as a whole (IP filter, connection limits, privileged principals, SSL principal mapping).

The accept loop and the SASL exchange report each refusal once through an
`OnRefused` callback; the proxy turns it into an audit record, every server
counts it (until metrics are wired, `RefusalCounter.counts` is the metric).
"""

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from proxy.net.addresses import ProxiedBy

IP_FILTER = "ip-filter"
PRIVILEGED_PRINCIPAL = "privileged-principal"
SSL_PRINCIPAL_MAPPING = "ssl-principal-mapping"  # an SSL client certificate's DN matched no ssl.principal.mapping.rules
PROXY_PROTOCOL_UNTRUSTED = "proxy-protocol-untrusted"  # a TCP peer outside proxy.protocol.trusted.cidrs (or one that sent a header from there)
PROXY_PROTOCOL_HEADER = "proxy-protocol-header"  # a trusted load balancer's header missing, late, malformed or truncated
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
    proxied_by: ProxiedBy | None = None
    """The load balancer the refused client came through (PROXY protocol)."""


class _Listener(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def security_protocol(self) -> str: ...


class _Peer(Protocol):
    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def proxied_by(self) -> ProxiedBy | None: ...


def refusal(
    listener: _Listener,
    peer: _Peer,
    reason: str,
    detail: str,
    *,
    connection_id: str | None = None,
    principal: object | None = None,
    mechanism: str | None = None,
) -> RefusedConnection:
    """The one way a refusal is built: at accept time (no connection id yet), during the login, or for bytes Kafka
    closes the connection for; `principal` once one is known."""
    return RefusedConnection(
        listener=listener.name,
        security_protocol=listener.security_protocol,
        host=peer.host,
        port=peer.port,
        reason=reason,
        detail=detail,
        connection_id=connection_id,
        principal=None if principal is None else str(principal),
        mechanism=mechanism,
        proxied_by=peer.proxied_by,
    )


OnRefused = Callable[[RefusedConnection], Awaitable[None]]


class RefusalCounter:
    """Counts refusals by (listener, reason)."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    async def __call__(self, event: RefusedConnection) -> None:
        self.counts[(event.listener, event.reason)] += 1


# Why a connection ended (`data.connection.cause` of `disconnected`).
CAUSE_CLIENT = "client"
CAUSE_IDLE = "idle"
CAUSE_SHUTDOWN = "shutdown"
CAUSE_AUTHENTICATION_FAILED = "authentication-failed"
CAUSE_PROTOCOL_ERROR = "protocol-error"
CAUSE_VERSIONS_CHANGED = "versions-changed"
CAUSE_PRIVILEGED_PRINCIPAL = "privileged-principal"
CAUSE_SESSION_EXPIRED = "session-expired"  # KIP-368: a request after the session's lifetime, without re-authentication
CAUSE_ERROR = "error"
