"""The server side of a SASL login as a state machine without IO, in the style of h11.

Feed it each frame the client sends before the login completes; it returns what
to do, in order: reply with these bytes, answer this ApiVersions yourself, the
login failed (audit it before the reply that follows), the connection is refused,
the client is logged in, or close. It never calls anyone: the proxy's session and
the embedded controller drive it (proxy/net/login.py runs the IO).

SaslHandshake v0-1 and SaslAuthenticate v0-2, with the mechanisms of proxy/net/sasl/registry.py,
and Kafka's rules before the login: one valid ApiVersions before SaslHandshake,
nothing else before the login completes (ILLEGAL_SASL_STATE closes the connection).

A re-authentication (KIP-368) is the same machine started with the session's login
(`reauthenticating`) and fed the SaslHandshake that began it: Kafka's rules then add that
the mechanism and the principal may not change. A completed login says how long its
session lasts (`session_lifetime_ms`), as Kafka's SaslServerAuthenticator computes it.
"""

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey, api_name
from envelope.build import build_entity
from envelope.codec import decode_body, encode_response, response_schema
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import Principal
from proxy.net.refusals import (
    CAUSE_AUTHENTICATION_FAILED,
    CAUSE_PRIVILEGED_PRINCIPAL,
    CAUSE_PROTOCOL_ERROR,
    PRIVILEGED_PRINCIPAL,
    PROTOCOL_ERROR,
)
from proxy.net.sasl.mechanisms import AuthenticationFailed, ServerExchange, ServerMechanism

# An unauthenticated peer chooses it: keep records and logs bounded.
_MAX_USER_LENGTH = 256


class SaslListener(Protocol):
    """What the login needs of a listener (proxy/net/settings.py `ListenerConfig`)."""

    @property
    def name(self) -> str: ...

    @property
    def sasl_mechanisms(self) -> tuple[str, ...]: ...

    @property
    def sasl_servers(self) -> Mapping[str, ServerMechanism]: ...

    @property
    def privileged_principals(self) -> frozenset[str]: ...

    @property
    def max_reauth_ms(self) -> Mapping[str, int]: ...


@dataclass(frozen=True)
class SessionLogin:
    """The login a re-authentication must keep: Kafka refuses another mechanism or another principal."""

    mechanism: str
    principal: Principal


@dataclass(frozen=True)
class LoginFailure:
    """A failed SASL login, for the audit: the mechanism, the user the client tried (None if unreadable), Kafka's answer."""

    mechanism: str
    user: str | None
    message: str
    error_code: int
    reason: str | None = None
    """Why, for the log only (the client gets `message`); None when the message says it all."""


# -- events -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """Send these bytes (a whole response, or a raw SaslHandshake v0 token) to the client."""

    data: bytes


@dataclass(frozen=True)
class ApiVersionsRequest:
    """Not a SASL frame: the caller answers this ApiVersions and tells `api_versions_answered` whether it was valid."""

    header: RequestHeaderInfo
    frame: bytes


@dataclass(frozen=True)
class LoginFailed:
    failure: LoginFailure


@dataclass(frozen=True)
class Refused:
    """The connection is refused as a whole (audited as a connection-level `refused`)."""

    reason: str
    detail: str
    principal: Principal | None
    mechanism: str | None


@dataclass(frozen=True)
class LoggedIn:
    principal: Principal
    mechanism: str
    session_lifetime_ms: int | None = None
    """How long the session lasts before it must re-authenticate (KIP-368); None: it does not expire."""
    authentication_id: str | None = None
    """The name the credential proved when it is not the principal's (GSSAPI: the Kerberos name)."""


@dataclass(frozen=True)
class Close:
    """Close the connection; `delayed` after connection.failed.authentication.delay.ms, as Kafka does after a failed login."""

    cause: str
    delayed: bool = False


Event = Reply | ApiVersionsRequest | LoginFailed | Refused | LoggedIn | Close


def session_lifetime_ms(max_reauth_ms: int, credential_expiry_ms: int | None, now_ms: int) -> int | None:
    """A session's lifetime as Kafka computes it: `connections.max.reauth.ms`, capped by the credential's expiry (a
    token's, a ticket's), never negative; None when neither is set, so the session never expires."""
    if credential_expiry_ms is None:
        return max_reauth_ms if max_reauth_ms > 0 else None
    left = max(0, credential_expiry_ms - now_ms)
    return min(left, max_reauth_ms) if max_reauth_ms > 0 else left


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def attempted_user(server: ServerMechanism, mechanism: str, first_token: bytes | None) -> str | None:
    """The user name a client tried to log in as, read from its first SASL token (bounded); None when it cannot be told."""
    user = server.attempted_user(mechanism, first_token) if first_token else None
    return user[:_MAX_USER_LENGTH] if user else None


def privileged_refusal(listener: SaslListener, principal: Principal) -> str | None:
    """Why `principal` may not use this listener (KIP-590: privileged principals only act through the internal path)."""
    if str(principal) not in listener.privileged_principals:
        return None
    return f"principal {principal} is in privileged.principals and may not use listener {listener.name}"


def _respond(header: RequestHeaderInfo, values: dict[str, object]) -> Reply:
    body = build_entity(response_schema(header.api_key, header.api_version), values)
    return Reply(encode_response(body, correlation_id=header.correlation_id))


def illegal_sasl_state(header: RequestHeaderInfo) -> bytes:
    """Kafka's answer (KafkaApis) to a SaslHandshake or SaslAuthenticate after the login that begins no
    re-authentication: ILLEGAL_SASL_STATE, and the connection goes on."""
    if header.api_key == ApiKey.SASL_HANDSHAKE:
        return _respond(header, {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}).data
    message = "SaslAuthenticate request received after successful authentication"
    return _respond(header, {"error_code": ErrorCode.illegal_sasl_state, "error_message": message, "auth_bytes": b"", "session_lifetime": 0}).data


class SaslMachine:
    def __init__(
        self, listener: SaslListener, *, reauthenticating: SessionLogin | None = None, wall_clock_ms: Callable[[], int] = _wall_clock_ms
    ) -> None:
        self.listener = listener
        self.mechanism: str | None = None
        self.done = False
        self.reauthenticating = reauthenticating
        self._wall_clock_ms = wall_clock_ms
        self._exchange: ServerExchange | None = None
        self._raw_tokens = False  # SaslHandshake v0: tokens follow as bare frames, without a Kafka header
        # A re-authentication begins with its SaslHandshake: no ApiVersions first.
        self._versions_answered = reauthenticating is not None
        self._first_token: bytes | None = None
        self._bad_mechanism: str | None = None
        """Kafka answers a re-authentication's change of mechanism with success, then fails on the next frame."""

    def api_versions_answered(self, valid: bool) -> None:
        """The caller answered an ApiVersionsRequest; an invalid one (INVALID_REQUEST, UNSUPPORTED_VERSION) may be asked again."""
        self._versions_answered = self._versions_answered or valid

    def receive(self, frame: bytes) -> list[Event]:
        """What to do about one frame. Raises ProtocolError for bytes Kafka closes the connection for."""
        if self.done:
            raise RuntimeError("the login is over")
        if self._bad_mechanism is not None:
            failure = LoginFailure(self.mechanism or "", None, self._bad_mechanism, ErrorCode.sasl_authentication_failed)
            return self._end(LoginFailed(failure), Close(CAUSE_AUTHENTICATION_FAILED, delayed=True))
        if self._exchange is not None and self._raw_tokens:
            return self._step(None, frame)
        header = peek_request_header(frame)
        if header.api_key == ApiKey.API_VERSIONS and self._exchange is None and not self._versions_answered:
            return [ApiVersionsRequest(header, frame)]
        if header.api_key == ApiKey.SASL_HANDSHAKE and self._exchange is None:
            return self._handshake(header, frame)
        if header.api_key != ApiKey.SASL_AUTHENTICATE or self._exchange is None or self._raw_tokens:
            detail = f"{api_name(header.api_key)} v{header.api_version} before SASL authentication completed (ILLEGAL_SASL_STATE)"
            # a re-authenticating connection had logged in: the refusal names its principal, as after any login
            principal = self.reauthenticating.principal if self.reauthenticating is not None else None
            return self._end(Refused(PROTOCOL_ERROR, detail, principal, self.mechanism), Close(CAUSE_PROTOCOL_ERROR))
        body = decode_body(header.api_key, header.api_version, frame, header.header_size)
        return self._step(header, bytes(body.auth_bytes))

    def _end(self, *events: Event) -> list[Event]:
        self.done = True
        return list(events)

    def _handshake(self, header: RequestHeaderInfo, frame: bytes) -> list[Event]:
        body = decode_body(header.api_key, header.api_version, frame, header.header_size)
        requested = str(body.mechanism).upper()
        enabled = list(self.listener.sasl_mechanisms)
        if requested not in self.listener.sasl_mechanisms:
            code = ErrorCode.unsupported_sasl_mechanism
            failure = LoginFailure(requested, None, f"Unsupported SASL mechanism {requested}", code)
            return self._end(LoginFailed(failure), _respond(header, {"error_code": code, "mechanisms": enabled}), Close(CAUSE_AUTHENTICATION_FAILED))
        self.mechanism = requested
        self._raw_tokens = header.api_version == 0
        previous = self.reauthenticating
        if previous is not None and previous.mechanism != requested:
            self._bad_mechanism = (
                f"SASL mechanism '{requested}' requested by client is not supported for re-authentication of mechanism '{previous.mechanism}'"
            )
        else:
            self._exchange = self.listener.sasl_servers[requested].exchange(requested)
        return [_respond(header, {"error_code": ErrorCode.none, "mechanisms": enabled})]

    def _step(self, header: RequestHeaderInfo | None, token: bytes) -> list[Event]:
        """One token of the exchange; `header` is None for a raw (v0) token."""
        exchange, mechanism = self._exchange, self.mechanism
        assert exchange is not None and mechanism is not None
        if exchange.complete:
            # Nothing may follow a completed exchange; there is no valid answer, so close.
            return self._end(Close(CAUSE_PROTOCOL_ERROR))
        if self._first_token is None:
            self._first_token = token  # names the user, for the audit of a failed login
        try:
            challenge = exchange.evaluate(token)
            done = exchange.complete and exchange.user is not None
            principal = Principal("User", exchange.user, token_authenticated=exchange.token_authenticated) if done and exchange.user is not None else None
            previous = self.reauthenticating
            if principal is not None and previous is not None and (principal.type, principal.name) != (previous.principal.type, previous.principal.name):
                raise AuthenticationFailed(
                    "Cannot change principals during re-authentication from "
                    f"{previous.principal.type}.{previous.principal.name}: {principal.type}.{principal.name}"
                )
        except AuthenticationFailed as exc:
            message = self._worded(str(exc))
            reason = exc.reason if exc.reason != str(exc) else None
            failure = LoginFailure(mechanism, self._attempted_user(mechanism), message, ErrorCode.sasl_authentication_failed, reason)
            if not exc.answered:
                # Kafka's SaslServerAuthenticator: an exception other than a SaslException from the SaslServer is
                # rethrown unanswered, and the Selector closes the connection at once (no failed-login delay).
                return self._end(LoginFailed(failure), Close(CAUSE_AUTHENTICATION_FAILED))
            return self._end(LoginFailed(failure), *self._failed(header, message), Close(CAUSE_AUTHENTICATION_FAILED, delayed=True))
        lifetime = None
        if principal is not None:
            lifetime = session_lifetime_ms(self.listener.max_reauth_ms.get(mechanism, 0), exchange.credential_expiry_ms, self._wall_clock_ms())
        # error_message "": SaslAuthenticateResponseData's default, which Kafka leaves on every successful step
        values = {"error_code": ErrorCode.none, "error_message": "", "auth_bytes": challenge, "session_lifetime": lifetime or 0}
        reply = Reply(challenge) if header is None else _respond(header, values)
        if principal is None:
            return [reply]
        refusal = None if self.reauthenticating is not None else privileged_refusal(self.listener, principal)
        if refusal is not None:
            refused = Refused(PRIVILEGED_PRINCIPAL, refusal, principal, mechanism)
            return self._end(refused, *self._failed(header, f"Authentication failed: {refusal}"), Close(CAUSE_PRIVILEGED_PRINCIPAL, delayed=True))
        return self._end(reply, LoggedIn(principal, mechanism, lifetime, exchange.authentication_id))

    def _worded(self, message: str) -> str:
        """Kafka's messages name the step they failed in; a re-authentication's say so."""
        if self.reauthenticating is None:
            return message
        return message.replace("during authentication", "during re-authentication", 1)

    def _attempted_user(self, mechanism: str) -> str | None:
        return attempted_user(self.listener.sasl_servers[mechanism], mechanism, self._first_token)

    @staticmethod
    def _failed(header: RequestHeaderInfo | None, message: str) -> list[Event]:
        """Kafka's answer to a failed login; raw tokens have no way to carry one."""
        if header is None:
            return []
        values = {"error_code": ErrorCode.sasl_authentication_failed, "error_message": message, "auth_bytes": b"", "session_lifetime": 0}
        return [_respond(header, values)]
