"""Server side SASL (SaslHandshake v0-1, SaslAuthenticate v0-2) for PLAIN and SCRAM-SHA-256/512."""

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey, api_name
from envelope.build import build_entity
from envelope.codec import decode_body, encode_response, response_schema
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import ANONYMOUS, Principal
from proxy.net.connection import KafkaConnection
from proxy.net.refusals import (
    CAUSE_AUTHENTICATION_FAILED,
    CAUSE_PRIVILEGED_PRINCIPAL,
    CAUSE_PROTOCOL_ERROR,
    PRIVILEGED_PRINCIPAL,
    PROTOCOL_ERROR,
    SSL_PRINCIPAL_MAPPING,
    OnRefused,
    RefusedConnection,
)
from proxy.net.sasl.mechanisms import AuthenticationFailed, ServerExchange, attempted_user, server_exchange, verify_plain
from proxy.net.settings import ListenerConfig, TransportSettings
from proxy.net.tls.handshake import SSL_MECHANISM, certificate_principal
from proxy.net.tls.principal import NoMatchingRule

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Authenticated:
    principal: Principal
    mechanism: str | None


@dataclass(frozen=True)
class LoginFailure:
    """A failed SASL login, for the audit: the mechanism, the user the client tried (None if unreadable), Kafka's answer."""

    mechanism: str
    user: str | None
    message: str
    error_code: int


@dataclass
class AuthReport:
    """Filled by `authenticate` when it returns None: why the connection closes (a `disconnected` cause of
    proxy/audit/connection_events.py; None when the client left) and, for a failed login, what failed.
    `on_failure` (the audit) is awaited before the client is told its login failed."""

    cause: str | None = None
    failure: LoginFailure | None = None
    on_failure: Callable[[LoginFailure], Awaitable[None]] | None = None

    async def login_failed(self, failure: LoginFailure) -> None:
        self.cause, self.failure = CAUSE_AUTHENTICATION_FAILED, failure
        if self.on_failure is not None:
            await self.on_failure(failure)


ApiVersionsAnswer = Callable[[RequestHeaderInfo, bytes], Awaitable[bool]]
"""Answers one ApiVersions; False when it was answered INVALID_REQUEST (Kafka then still allows another)."""


def privileged_refusal(listener: ListenerConfig, principal: Principal) -> str | None:
    """Why `principal` may not use this listener (KIP-590: privileged principals only act through the internal path)."""
    if str(principal) not in listener.privileged_principals:
        return None
    return f"principal {principal} is in privileged.principals and may not use listener {listener.name}"


class SaslServer:
    """Runs the pre-authentication exchange on one connection."""

    def __init__(
        self,
        conn: KafkaConnection,
        listener: ListenerConfig,
        answer_api_versions: ApiVersionsAnswer,
        *,
        failure_delay: float,
        on_refused: OnRefused | None = None,
        on_login_failed: Callable[[str], None] | None = None,
        report: AuthReport | None = None,
    ) -> None:
        self.on_login_failed = on_login_failed
        self.report = report if report is not None else AuthReport()
        self._first_token: bytes | None = None
        self.conn = conn
        self.listener = listener
        self.answer_api_versions = answer_api_versions
        self.failure_delay = failure_delay
        self.on_refused = on_refused

    async def run(self) -> Authenticated | None:
        """The session's principal, or None when the connection must close."""
        mechanism: str | None = None
        exchange: ServerExchange | None = None
        raw_tokens = False
        versions_answered = False
        while True:
            frame = await self.conn.receive_frame()
            if frame is None:
                return None
            if exchange is not None and raw_tokens:
                # SaslHandshake v0: raw tokens follow, no Kafka header.
                header, token = None, frame
            else:
                header = peek_request_header(frame)
                if header.api_key == ApiKey.API_VERSIONS and exchange is None and not versions_answered:
                    # Kafka answers one valid ApiVersions before SaslHandshake; a second one closes the connection.
                    versions_answered = await self.answer_api_versions(header, frame)
                    continue
                if header.api_key == ApiKey.SASL_HANDSHAKE and exchange is None:
                    mechanism = await self._handshake(header, frame)
                    if mechanism is None:
                        return None
                    exchange = server_exchange(mechanism, self.listener)
                    raw_tokens = header.api_version == 0
                    continue
                if header.api_key != ApiKey.SASL_AUTHENTICATE or exchange is None or raw_tokens:
                    self.report.cause = CAUSE_PROTOCOL_ERROR
                    refusal = f"{api_name(header.api_key)} v{header.api_version} before SASL authentication completed (ErrorCode.illegal_sasl_state)"
                    await report_refusal(self.conn, self.listener, None, mechanism, refusal, self.on_refused, reason=PROTOCOL_ERROR)
                    return None
                body = decode_body(header.api_key, header.api_version, frame, header.header_size)
                token = bytes(body.auth_bytes)
            assert mechanism is not None
            if not await self._step(exchange, header, token, mechanism):
                return None
            if exchange.complete and exchange.user is not None:
                return Authenticated(Principal("User", exchange.user), mechanism)

    async def _handshake(self, header: RequestHeaderInfo, frame: bytes) -> str | None:
        body = decode_body(header.api_key, header.api_version, frame, header.header_size)
        requested = str(body.mechanism).upper()
        ok = requested in self.listener.sasl_mechanisms
        if not ok:
            log.info("connection %s from %s: unsupported SASL mechanism %s", self.conn.connection_id, self.conn.peer.host, requested)
            await self.report.login_failed(LoginFailure(requested, None, f"Unsupported SASL mechanism {requested}", ErrorCode.unsupported_sasl_mechanism))
        await self._respond(header, {"error_code": 0 if ok else ErrorCode.unsupported_sasl_mechanism, "mechanisms": list(self.listener.sasl_mechanisms)})
        if not ok:
            return None
        return requested

    async def _respond(self, header: RequestHeaderInfo, values: dict[str, object]) -> None:
        body = build_entity(response_schema(header.api_key, header.api_version), values)
        await self.conn.send(encode_response(body, correlation_id=header.correlation_id))

    async def _step(self, exchange: ServerExchange, header: RequestHeaderInfo | None, token: bytes, mechanism: str) -> bool:
        """Answer one token; False when the connection must close. `header` is None for raw tokens."""
        if exchange.complete:
            # Nothing may follow a completed exchange here; there is no valid answer, so close.
            log.info("connection %s from %s: SASL token after completion, closing", self.conn.connection_id, self.conn.peer.host)
            self.report.cause = CAUSE_PROTOCOL_ERROR
            return False
        if self._first_token is None:
            self._first_token = token  # names the user, for the audit of a failed login
        try:
            challenge = exchange.evaluate(token)
        except AuthenticationFailed as exc:
            log.info("connection %s from %s: %s login failed: %s", self.conn.connection_id, self.conn.peer.host, mechanism, exc.reason)
            if self.on_login_failed is not None:
                self.on_login_failed(mechanism)
            await self.report.login_failed(LoginFailure(mechanism, attempted_user(mechanism, self._first_token), str(exc), ErrorCode.sasl_authentication_failed))
            await self._fail(header, str(exc))
            return False
        if exchange.complete and exchange.user is not None:
            principal = Principal("User", exchange.user)
            refusal = privileged_refusal(self.listener, principal)
            if refusal is not None:
                self.report.cause = CAUSE_PRIVILEGED_PRINCIPAL
                await report_refusal(self.conn, self.listener, principal, mechanism, refusal, self.on_refused)
                await self._fail(header, f"Authentication failed: {refusal}")
                return False
        if header is None:
            await self.conn.send(challenge)
        else:
            await self._respond(header, {"error_code": 0, "error_message": None, "auth_bytes": challenge, "session_lifetime": 0})
        return True

    async def _fail(self, header: RequestHeaderInfo | None, message: str) -> None:
        """Kafka's answer to a failed login: the error (raw tokens have no way to carry one), then a delayed close."""
        if header is not None:
            failure = {"error_code": ErrorCode.sasl_authentication_failed, "error_message": message, "auth_bytes": b"", "session_lifetime": 0}
            await self._respond(header, failure)
        await trio.sleep(self.failure_delay)


async def report_refusal(
    conn: KafkaConnection,
    listener: ListenerConfig,
    principal: Principal | None,
    mechanism: str | None,
    refusal: str,
    on_refused: OnRefused | None,
    *,
    reason: str = PRIVILEGED_PRINCIPAL,
) -> None:
    """Log and report a connection refused after (or while) authenticating; `reason` is the audit's."""
    log.warning("connection %s from %s:%s refused: %s", conn.connection_id, conn.peer.host, conn.peer.port, refusal)
    if on_refused is not None:
        await on_refused(
            RefusedConnection(
                listener=listener.name,
                security_protocol=listener.security_protocol,
                host=conn.peer.host,
                port=conn.peer.port,
                reason=reason,
                detail=refusal,
                connection_id=conn.connection_id,
                principal=None if principal is None else str(principal),
                mechanism=mechanism,
            )
        )


async def _certificate_login(
    conn: KafkaConnection, listener: ListenerConfig, failure_delay: float, on_refused: OnRefused | None, report: AuthReport
) -> Authenticated | None:
    """SSL listeners: the client certificate's mapped DN (User:ANONYMOUS without one); None = close."""
    try:
        principal = certificate_principal(conn.stream, listener)
    except NoMatchingRule as exc:
        # Kafka: an authentication failure, so the connection closes after the failed-authentication delay.
        report.cause = CAUSE_AUTHENTICATION_FAILED
        await report_refusal(conn, listener, None, SSL_MECHANISM, str(exc), on_refused, reason=SSL_PRINCIPAL_MAPPING)
        await trio.sleep(failure_delay)
        return None
    refusal = privileged_refusal(listener, principal)
    if refusal is not None:
        report.cause = CAUSE_PRIVILEGED_PRINCIPAL
        await report_refusal(conn, listener, principal, SSL_MECHANISM, refusal, on_refused)
        await trio.sleep(failure_delay)
        return None
    return Authenticated(principal, SSL_MECHANISM)


async def authenticate(
    conn: KafkaConnection,
    listener: ListenerConfig,
    transport: TransportSettings,
    answer_api_versions: ApiVersionsAnswer,
    *,
    on_refused: OnRefused | None = None,
    on_login_failed: Callable[[str], None] | None = None,
    report: AuthReport | None = None,
) -> Authenticated | None:
    """The session's principal: ANONYMOUS on PLAINTEXT, the mapped certificate DN on SSL (mechanism "SSL"),
    the SASL login on SASL_PLAINTEXT and SASL_SSL (None = close).

    Frames are capped at `sasl.server.max.receive.size` until the login succeeds.
    A principal in the listener's `privileged_principals` is refused and reported to `on_refused`;
    so is an SSL client whose DN matches no `ssl.principal.mapping.rules` (reason `ssl-principal-mapping`).
    When it returns None, `report` says why (for the audit's connection events).
    """
    report = report if report is not None else AuthReport()
    if listener.security_protocol == "SSL":
        return await _certificate_login(conn, listener, transport.failed_auth_delay, on_refused, report)
    if not listener.uses_sasl:
        refusal = privileged_refusal(listener, ANONYMOUS)
        if refusal is not None:
            report.cause = CAUSE_PRIVILEGED_PRINCIPAL
            await report_refusal(conn, listener, ANONYMOUS, None, refusal, on_refused)
            return None
        return Authenticated(ANONYMOUS, None)
    conn.reader.max_frame_size = transport.sasl_max_receive_size
    # Before the login, each frame must come within connections.preauth.idle.ms: an anonymous peer holds nothing long.
    idle_timeout = conn.idle_timeout
    conn.idle_timeout = min(idle_timeout, transport.preauth_idle_timeout)
    server = SaslServer(
        conn,
        listener,
        answer_api_versions,
        failure_delay=transport.failed_auth_delay,
        on_refused=on_refused,
        on_login_failed=on_login_failed,
        report=report,
    )
    result = await server.run()
    conn.reader.max_frame_size = transport.max_frame_size
    conn.idle_timeout = idle_timeout
    return result


__all__ = ["AuthReport", "Authenticated", "AuthenticationFailed", "LoginFailure", "ProtocolError", "SaslServer", "authenticate", "privileged_refusal", "verify_plain"]
