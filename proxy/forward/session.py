"""One client connection's state, and the connection events the audit records for it."""

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Any

from authz import RequestContext
from envelope.principal import ANONYMOUS, Principal
from proxy.audit.connection_events import (
    AUTHENTICATION_FAILED,
    CONNECTED,
    DISCONNECTED,
    ConnectionEvent,
    Endpoint,
    authentication_failed_result,
)
from proxy.audit.request_records import Caller
from proxy.net.connection import KafkaConnection
from proxy.net.login import SessionExpiry
from proxy.net.refusals import CAUSE_SHUTDOWN, PROTOCOL_ERROR, RefusedConnection, refusal
from proxy.net.sasl.machine import LoginFailure
from proxy.net.settings import ListenerConfig


@dataclass(eq=False)  # one per connection, kept in a set
class Session:
    conn: KafkaConnection
    listener: ListenerConfig
    principal: Principal = ANONYMOUS
    mechanism: str | None = None
    authentication_id: str | None = None
    """The name the client's credential proved when it is not the principal's (GSSAPI: the Kerberos name)."""
    software_name: str | None = None
    software_version: str | None = None
    client_address: ipaddress.IPv4Address | ipaddress.IPv6Address = field(init=False)
    closing: bool = False
    close_cause: str | None = None
    """Why the proxy closes the connection (a `disconnected` cause); None while the client decides."""
    authenticated: bool = False
    refusal_audited: bool = False
    """A `refused` record already says why this connection closes."""
    requests: int = 0
    expiry: SessionExpiry = field(default_factory=SessionExpiry)
    """KIP-368: when the login's session ends, unless the client re-authenticates."""
    opened: float = field(default_factory=time.monotonic)
    caller: Caller = field(init=False)
    """This client as its request records name it."""

    def __post_init__(self) -> None:
        self.client_address = self.conn.peer.address
        self.caller = self._named()

    def close_when_idle(self, cause: str = CAUSE_SHUTDOWN) -> None:
        """Close now if waiting for a request, else right after the one in flight (its audit completes)."""
        self.closing = True
        self.close_cause = self.close_cause or cause
        self.conn.stop_waiting()  # a request in flight is not touched: the session loop ends after it

    def context(self, client_id: str | None) -> RequestContext:
        """What the edge authorizer knows of this client."""
        return RequestContext(
            principal=self.principal,
            client_address=self.client_address,
            listener=self.listener.name,
            security_protocol=self.listener.security_protocol,
            sasl_mechanism=self.mechanism,
            client_id=client_id,
            client_software_name=self.software_name,
            client_software_version=self.software_version,
        )

    def logged_in(self, principal: Principal, mechanism: str | None, authentication_id: str | None) -> None:
        """A login (or a re-authentication) named the client: its records name it so from now on."""
        self.principal, self.mechanism, self.authentication_id = principal, mechanism, authentication_id
        self.caller = self._named()

    def software(self, name: str, version: str) -> None:
        """ApiVersions v3+ named the client's software: its records name it so from now on."""
        self.software_name, self.software_version = name, version
        self.caller = self._named()

    def _named(self) -> Caller:
        # Made when the login or ApiVersions changes it, not per request: every request record reads `caller`.
        return Caller(
            principal=str(self.principal),
            mechanism=self.mechanism,
            authentication_id=self.authentication_id,
            listener=self.listener.name,
            security_protocol=self.listener.security_protocol,
            address=str(self.client_address),
            port=self.conn.peer.port,
            connection_id=self.conn.connection_id,
            software_name=self.software_name,
            software_version=self.software_version,
            proxied_by=self.conn.peer.proxied_by,
        )

    # -- connection events ----------------------------------------------------------------

    def endpoint(self) -> Endpoint:
        peer = self.conn.peer
        return Endpoint(self.listener.name, self.listener.security_protocol, peer.host, peer.port, self.conn.connection_id, peer.proxied_by)

    def event(self, node_id: int, stage: str, *, cause: str | None = None) -> dict[str, Any]:
        """`connected`, `authenticated`, `reauthenticated` or `disconnected` (with its cause, duration and request count)."""
        closing = stage == DISCONNECTED
        principal = str(self.principal) if self.authenticated and stage != CONNECTED else None
        return ConnectionEvent(
            stage,
            self.endpoint(),
            principal=principal,
            mechanism=self.mechanism if principal is not None else None,
            authentication_id=self.authentication_id if principal is not None else None,
            cause=cause,
            duration_ms=(time.monotonic() - self.opened) * 1000 if closing else None,
            requests=self.requests if closing else None,
            software=(self.software_name, self.software_version) if stage != CONNECTED else (None, None),
        ).record(node_id)

    def login_failed_event(self, node_id: int, failure: LoginFailure) -> dict[str, Any]:
        return ConnectionEvent(
            AUTHENTICATION_FAILED,
            self.endpoint(),
            principal=f"User:{failure.user}" if failure.user is not None else None,
            mechanism=failure.mechanism,
            authorization={"decision": "DENIED", "reason": AUTHENTICATION_FAILED, "detail": failure.message},
            result=authentication_failed_result(failure.error_code),
            software=(self.software_name, self.software_version),
        ).record(node_id)

    def protocol_refusal(self, detail: str) -> RefusedConnection:
        """Bytes Kafka closes the connection for, where no request record could say so."""
        principal = self.principal if self.authenticated else None
        return refusal(
            self.listener, self.conn.peer, PROTOCOL_ERROR, detail, connection_id=self.conn.connection_id, principal=principal, mechanism=self.mechanism
        )
