"""A connection's login, with its IO: the certificate on SSL listeners, nothing on PLAINTEXT, the SASL machine otherwise.

`Login.events()` runs the exchange: it sends the machine's replies, applies the
pre-login frame cap (`sasl.server.max.receive.size`) and deadline
(`connections.preauth.idle.ms`), and closes after the failed-authentication
delay. It yields only what the connection's owner (the proxy's service, the
embedded controller) must act on: an ApiVersions to answer, a failed login to
audit, a refusal to record. When it ends, `result` is the principal, or None
with `cause` saying why the connection closes.

After the login, `SessionExpiry` keeps KIP-368's rules for the connection's owner:
a SaslHandshake begins a re-authentication (`Login.reauthenticate`) when the session
expires at all and the last one began at least a second ago, and any other request
after the session expired closes the connection, as Kafka's SocketServer does.
"""

import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from enum import Enum

import trio

from envelope.apis import ApiKey
from envelope.principal import ANONYMOUS, Principal
from proxy.net.connection import KafkaConnection
from proxy.net.refusals import (
    CAUSE_AUTHENTICATION_FAILED,
    CAUSE_PRIVILEGED_PRINCIPAL,
    PRIVILEGED_PRINCIPAL,
    SSL_PRINCIPAL_MAPPING,
    RefusedConnection,
    refusal,
)
from proxy.net.sasl.machine import (
    ApiVersionsRequest,
    Close,
    LoggedIn,
    LoginFailed,
    LoginFailure,
    Refused,
    Reply,
    SaslMachine,
    SessionLogin,
    privileged_refusal,
)
from proxy.net.settings import ListenerConfig, TransportSettings
from proxy.net.tls.handshake import SSL_MECHANISM, certificate_principal
from proxy.net.tls.principal import NoMatchingRule

log = logging.getLogger(__name__)

LoginEvent = ApiVersionsRequest | LoginFailed | Refused


# Kafka's KafkaChannel: a re-authentication may not begin within a second of the last one.
MIN_REAUTH_INTERVAL = 1.0
SESSION_EXPIRED = "the session expired (connections.max.reauth.ms or the credential's expiry) and the client did not re-authenticate"


@dataclass(frozen=True)
class Authenticated:
    principal: Principal
    mechanism: str | None
    session_lifetime_ms: int | None = None
    """KIP-368: how long the session lasts before it must re-authenticate; None: it does not expire."""

    authentication_id: str | None = None
    """The name the credential proved when it is not the principal's (GSSAPI: the Kerberos name)."""


class SessionStep(Enum):
    SERVE = "serve"
    REAUTHENTICATE = "reauthenticate"  # the frame, a SaslHandshake, begins a re-authentication
    EXPIRED = "expired"  # close the connection without an answer


@dataclass
class SessionExpiry:
    """When a connection's session ends (trio's clock), and when its last re-authentication began."""

    expires_at: float | None = None
    reauth_started_at: float | None = field(default=None, repr=False)

    def logged_in(self, lifetime_ms: int | None, now: float) -> None:
        self.expires_at = None if lifetime_ms is None else now + lifetime_ms / 1000

    def may_reauthenticate(self, now: float) -> bool:
        """Kafka's rule: only a session that expires re-authenticates, at most once a second."""
        if self.expires_at is None:
            return False
        return self.reauth_started_at is None or now - self.reauth_started_at >= MIN_REAUTH_INTERVAL

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now > self.expires_at

    def step(self, api_key: int, now: float) -> SessionStep:
        """What a request read at `now` after the login means, in the order of Kafka's SocketServer: a SaslHandshake
        that may re-authenticate does (even after the expiry), else any request after the expiry closes the connection."""
        if self.expires_at is None:
            return SessionStep.SERVE
        if api_key == ApiKey.SASL_HANDSHAKE and self.may_reauthenticate(now):
            self.reauth_started_at = now
            return SessionStep.REAUTHENTICATE
        return SessionStep.EXPIRED if self.expired(now) else SessionStep.SERVE


def refused_connection(conn: KafkaConnection, listener: ListenerConfig, event: Refused) -> RefusedConnection:
    """The connection-level refusal a Refused event stands for (what the audit and the metrics record)."""
    return refusal(listener, conn.peer, event.reason, event.detail, connection_id=conn.connection_id, principal=event.principal, mechanism=event.mechanism)


class Login:
    def __init__(
        self, conn: KafkaConnection, listener: ListenerConfig, transport: TransportSettings, *, reauthenticating: SessionLogin | None = None
    ) -> None:
        self.conn = conn
        self.listener = listener
        self.transport = transport
        self.result: Authenticated | None = None
        self.cause: str | None = None
        """Why the connection closes when `result` is None (a `disconnected` cause); None when the client left."""
        self._machine = SaslMachine(listener, reauthenticating=reauthenticating) if listener.uses_sasl else None
        self._first_frame: bytes | None = None

    @classmethod
    def reauthenticate(
        cls, conn: KafkaConnection, listener: ListenerConfig, transport: TransportSettings, session: SessionLogin, handshake: bytes
    ) -> "Login":
        """A re-authentication (KIP-368) of a SASL session, begun by the SaslHandshake frame `handshake`; run its
        `events()` as a login's."""
        login = cls(conn, listener, transport, reauthenticating=session)
        login._first_frame = handshake
        return login

    def api_versions_answered(self, valid: bool) -> None:
        if self._machine is not None:
            self._machine.api_versions_answered(valid)

    async def events(self) -> AsyncGenerator[LoginEvent, None]:
        if self.listener.security_protocol == "SSL":
            async for event in self._certificate():
                yield event
        elif self._machine is None:
            refusal = privileged_refusal(self.listener, ANONYMOUS)
            if refusal is not None:
                self.cause = CAUSE_PRIVILEGED_PRINCIPAL
                yield self._refused(Refused(PRIVILEGED_PRINCIPAL, refusal, ANONYMOUS, None))
            else:
                self.result = Authenticated(ANONYMOUS, None)
        else:
            async for event in self._sasl(self._machine):
                yield event

    def _refused(self, event: Refused) -> Refused:
        conn = self.conn
        log.warning("connection %s from %s:%s refused: %s", conn.connection_id, conn.peer.host, conn.peer.port, event.detail)
        return event

    async def _certificate(self) -> AsyncGenerator[LoginEvent, None]:
        """SSL listeners: the client certificate's mapped DN (User:ANONYMOUS without one)."""
        try:
            principal = certificate_principal(self.conn.stream, self.listener)
        except NoMatchingRule as exc:
            # Kafka: an authentication failure, so the connection closes after the failed-authentication delay.
            self.cause = CAUSE_AUTHENTICATION_FAILED
            yield self._refused(Refused(SSL_PRINCIPAL_MAPPING, str(exc), None, SSL_MECHANISM))
            await trio.sleep(self.transport.failed_auth_delay)
            return
        refusal = privileged_refusal(self.listener, principal)
        if refusal is not None:
            self.cause = CAUSE_PRIVILEGED_PRINCIPAL
            yield self._refused(Refused(PRIVILEGED_PRINCIPAL, refusal, principal, SSL_MECHANISM))
            await trio.sleep(self.transport.failed_auth_delay)
            return
        self.result = Authenticated(principal, SSL_MECHANISM)

    async def _sasl(self, machine: SaslMachine) -> AsyncGenerator[LoginEvent, None]:
        conn, transport = self.conn, self.transport
        # Before the login, frames are small and must come soon: an anonymous peer holds nothing long.
        conn.reader.max_frame_size = transport.sasl_max_receive_size
        idle_timeout = conn.idle_timeout
        conn.idle_timeout = min(idle_timeout, transport.preauth_idle_timeout)
        try:
            while not machine.done:
                frame, self._first_frame = self._first_frame, None
                if frame is None:
                    frame = await conn.receive_frame()
                if frame is None:
                    return
                for event in machine.receive(frame):
                    if isinstance(event, Reply):
                        await conn.send(event.data)
                    elif isinstance(event, LoggedIn):
                        self.result = Authenticated(event.principal, event.mechanism, event.session_lifetime_ms, event.authentication_id)
                    elif isinstance(event, Close):
                        self.cause = event.cause
                        log.info("connection %s from %s: closed before login (%s)", conn.connection_id, conn.peer.host, event.cause)
                        if event.delayed:
                            await trio.sleep(transport.failed_auth_delay)
                    elif isinstance(event, LoginFailed):
                        failure = event.failure
                        why = f"{failure.message} ({failure.reason})" if failure.reason else failure.message
                        log.info("connection %s from %s: %s login failed: %s", conn.connection_id, conn.peer.host, failure.mechanism, why)
                        yield event  # audited before the client reads its answer
                    elif isinstance(event, Refused):
                        yield self._refused(event)
                    else:
                        yield event
        finally:
            conn.reader.max_frame_size = transport.max_frame_size
            conn.idle_timeout = idle_timeout


__all__ = [
    "MIN_REAUTH_INTERVAL",
    "SESSION_EXPIRED",
    "ApiVersionsRequest",
    "Authenticated",
    "Login",
    "LoginEvent",
    "LoginFailed",
    "LoginFailure",
    "Refused",
    "SessionExpiry",
    "SessionLogin",
    "SessionStep",
    "refused_connection",
]
