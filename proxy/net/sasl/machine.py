"""The server side of a SASL login as a state machine without IO, in the style of h11.

Feed it each frame the client sends before the login completes; it returns what
to do, in order: reply with these bytes, answer this ApiVersions yourself, the
login failed (audit it before the reply that follows), the connection is refused,
the client is logged in, or close. It never calls anyone: the proxy's session and
the embedded controller drive it (proxy/net/login.py runs the IO).

SaslHandshake v0-1 and SaslAuthenticate v0-2, with the mechanisms of proxy/net/sasl/registry.py,
and Kafka's rules before the login: one valid ApiVersions before SaslHandshake,
nothing else before the login completes (ILLEGAL_SASL_STATE closes the connection).
`TRANSITIONS` lists every legal step, one row per (state, API key); a frame without a row takes
the one refusal path.

A re-authentication (KIP-368) is the same machine started with the session's login
(`reauthenticating`) and fed the SaslHandshake that began it: Kafka's rules then add that
the mechanism and the principal may not change. A completed login says how long its
session lasts (`session_lifetime_ms`), as Kafka's SaslServerAuthenticator computes it.
"""

import enum
import random
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


# Kafka's SaslClientAuthenticator re-authenticates at a random point in this share of the session's lifetime.
REAUTHENTICATION_WINDOW = (0.85, 0.95)


def session_lifetime_ms(max_reauth_ms: int, credential_expiry_ms: int | None, now_ms: int) -> int | None:
    """A session's lifetime as Kafka computes it: `connections.max.reauth.ms`, capped by the credential's expiry (a
    token's, a ticket's), never negative; None when neither is set, so the session never expires."""
    if credential_expiry_ms is None:
        return max_reauth_ms if max_reauth_ms > 0 else None
    left = max(0, credential_expiry_ms - now_ms)
    return min(left, max_reauth_ms) if max_reauth_ms > 0 else left


def reauthentication_delay(session_lifetime: float, uniform: Callable[[float, float], float] = random.uniform) -> float | None:
    """When a client logs in again after a login given this session lifetime (in any unit: the delay is in the same),
    as Kafka's SaslClientAuthenticator decides it; None for 0, which means the session does not expire."""
    if session_lifetime <= 0:
        return None
    return session_lifetime * uniform(*REAUTHENTICATION_WINDOW)


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


class LoginState(enum.Enum):
    """Where a login stands, as Kafka's SaslServerAuthenticator tracks it; what each state accepts is `TRANSITIONS`."""

    START = "before SaslHandshake: one valid ApiVersions may come first"
    HANDSHAKE = "ApiVersions answered, or a re-authentication begun: only SaslHandshake"
    AUTHENTICATE = "SaslHandshake v1+ accepted: tokens in SaslAuthenticate requests"
    RAW_TOKENS = "SaslHandshake v0 accepted: tokens as bare frames, without a Kafka header"
    MECHANISM_CHANGED = "a re-authentication asked for another mechanism: Kafka said yes, and fails whatever comes next"
    DONE = "the login is over: logged in, failed or refused"


class Unread(enum.Enum):
    """The trigger of a state whose frames carry no Kafka header, so the machine reads none."""

    FRAME = "a frame, header unread"


Trigger = int | Unread
"""A frame's API key (an ApiKey, or a number no transition lists), or Unread.FRAME."""
Handler = Callable[["SaslMachine", bytes, RequestHeaderInfo | None], tuple[LoginState, list[Event]]]


@dataclass(frozen=True)
class Transition:
    """One legal step: the handler that answers the frame, and every state it may lead to (a failure ends in DONE)."""

    handler: Handler
    next_states: frozenset[LoginState]


class SaslMachine:
    def __init__(
        self, listener: SaslListener, *, reauthenticating: SessionLogin | None = None, wall_clock_ms: Callable[[], int] = _wall_clock_ms
    ) -> None:
        self.listener = listener
        self.mechanism: str | None = None
        self.reauthenticating = reauthenticating
        self._wall_clock_ms = wall_clock_ms
        # A re-authentication begins with its SaslHandshake: no ApiVersions first.
        self.state = LoginState.START if reauthenticating is None else LoginState.HANDSHAKE
        self._exchange: ServerExchange | None = None
        self._first_token: bytes | None = None
        self._changed_mechanism_message: str | None = None

    @property
    def done(self) -> bool:
        return self.state is LoginState.DONE

    def api_versions_answered(self, valid: bool) -> None:
        """The caller answered an ApiVersionsRequest; an invalid one (INVALID_REQUEST, UNSUPPORTED_VERSION) may be asked
        again. The one step the caller's answer takes rather than a frame."""
        if valid and self.state is LoginState.START:
            self.state = LoginState.HANDSHAKE

    def receive(self, frame: bytes) -> list[Event]:
        """What to do about one frame. Raises ProtocolError for bytes Kafka closes the connection for."""
        if self.done:
            raise RuntimeError("the login is over")
        unread = TRANSITIONS.get((self.state, Unread.FRAME))
        if unread is not None:
            return self._take(unread, frame, None)
        header = peek_request_header(frame)
        transition = TRANSITIONS.get((self.state, header.api_key))
        if transition is None:
            self.state, events = self._illegal_state(header)
            return events
        return self._take(transition, frame, header)

    def _take(self, transition: Transition, frame: bytes, header: RequestHeaderInfo | None) -> list[Event]:
        state, events = transition.handler(self, frame, header)
        if state not in transition.next_states:
            raise AssertionError(f"{self.state.name} led to {state.name}, which its transition does not list")
        self.state = state
        return events

    # -- the handlers of TRANSITIONS ---------------------------------------------------------

    def _api_versions(self, frame: bytes, header: RequestHeaderInfo | None) -> tuple[LoginState, list[Event]]:
        """The caller answers it (the ApiVersions rule is not the login's); `api_versions_answered` says how it went."""
        return self.state, [ApiVersionsRequest(_read(header), frame)]

    def _handshake(self, frame: bytes, header: RequestHeaderInfo | None) -> tuple[LoginState, list[Event]]:
        header = _read(header)
        body = decode_body(header.api_key, header.api_version, frame, header.header_size)
        requested = str(body.mechanism).upper()
        enabled = list(self.listener.sasl_mechanisms)
        if requested not in self.listener.sasl_mechanisms:
            code = ErrorCode.unsupported_sasl_mechanism
            failure = LoginFailure(requested, None, f"Unsupported SASL mechanism {requested}", code)
            return LoginState.DONE, [LoginFailed(failure), _respond(header, {"error_code": code, "mechanisms": enabled}), Close(CAUSE_AUTHENTICATION_FAILED)]
        self.mechanism = requested
        accepted: list[Event] = [_respond(header, {"error_code": ErrorCode.none, "mechanisms": enabled})]
        previous = self.reauthenticating
        if previous is not None and previous.mechanism != requested:
            self._changed_mechanism_message = (
                f"SASL mechanism '{requested}' requested by client is not supported for re-authentication of mechanism '{previous.mechanism}'"
            )
            return LoginState.MECHANISM_CHANGED, accepted
        self._exchange = self.listener.sasl_servers[requested].exchange(requested)
        return (LoginState.RAW_TOKENS if header.api_version == _RAW_TOKENS_HANDSHAKE_VERSION else LoginState.AUTHENTICATE), accepted

    def _authenticate(self, frame: bytes, header: RequestHeaderInfo | None) -> tuple[LoginState, list[Event]]:
        header = _read(header)
        body = decode_body(header.api_key, header.api_version, frame, header.header_size)
        return self._step(header, bytes(body.auth_bytes))

    def _raw_token(self, frame: bytes, header: RequestHeaderInfo | None) -> tuple[LoginState, list[Event]]:
        return self._step(None, frame)

    def _mechanism_changed(self, frame: bytes, header: RequestHeaderInfo | None) -> tuple[LoginState, list[Event]]:
        message = self._changed_mechanism_message or ""
        failure = LoginFailure(self.mechanism or "", None, message, ErrorCode.sasl_authentication_failed)
        return LoginState.DONE, [LoginFailed(failure), Close(CAUSE_AUTHENTICATION_FAILED, delayed=True)]

    def _illegal_state(self, header: RequestHeaderInfo) -> tuple[LoginState, list[Event]]:
        """The one refusal of every frame TRANSITIONS has no row for: Kafka's ILLEGAL_SASL_STATE, which closes."""
        detail = f"{api_name(header.api_key)} v{header.api_version} before SASL authentication completed (ILLEGAL_SASL_STATE)"
        # a re-authenticating connection had logged in: the refusal names its principal, as after any login
        principal = self.reauthenticating.principal if self.reauthenticating is not None else None
        return LoginState.DONE, [Refused(PROTOCOL_ERROR, detail, principal, self.mechanism), Close(CAUSE_PROTOCOL_ERROR)]

    # -- one token of the exchange -----------------------------------------------------------

    def _step(self, header: RequestHeaderInfo | None, token: bytes) -> tuple[LoginState, list[Event]]:
        """One token of the exchange; `header` is None for a raw (v0) token. More tokens to come keep the state."""
        exchange, mechanism = self._exchange, self.mechanism
        assert exchange is not None and mechanism is not None  # set by the handshake that led to this state
        if exchange.complete:
            # Nothing may follow a completed exchange; there is no valid answer, so close.
            return LoginState.DONE, [Close(CAUSE_PROTOCOL_ERROR)]
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
                return LoginState.DONE, [LoginFailed(failure), Close(CAUSE_AUTHENTICATION_FAILED)]
            return LoginState.DONE, [LoginFailed(failure), *self._failed(header, message), Close(CAUSE_AUTHENTICATION_FAILED, delayed=True)]
        lifetime = None
        if principal is not None:
            lifetime = session_lifetime_ms(self.listener.max_reauth_ms.get(mechanism, 0), exchange.credential_expiry_ms, self._wall_clock_ms())
        # error_message "": SaslAuthenticateResponseData's default, which Kafka leaves on every successful step
        values = {"error_code": ErrorCode.none, "error_message": "", "auth_bytes": challenge, "session_lifetime": lifetime or 0}
        reply = Reply(challenge) if header is None else _respond(header, values)
        if principal is None:
            return self.state, [reply]
        refusal = None if self.reauthenticating is not None else privileged_refusal(self.listener, principal)
        if refusal is not None:
            refused = Refused(PRIVILEGED_PRINCIPAL, refusal, principal, mechanism)
            return LoginState.DONE, [refused, *self._failed(header, f"Authentication failed: {refusal}"), Close(CAUSE_PRIVILEGED_PRINCIPAL, delayed=True)]
        return LoginState.DONE, [reply, LoggedIn(principal, mechanism, lifetime, exchange.authentication_id)]

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


# SaslHandshake v0 sends the tokens that follow as bare frames; v1 wraps them in SaslAuthenticate.
_RAW_TOKENS_HANDSHAKE_VERSION = 0


def _read(header: RequestHeaderInfo | None) -> RequestHeaderInfo:
    """The header of a frame looked up by its API key (TRANSITIONS reads one for every trigger but Unread.FRAME)."""
    assert header is not None
    return header


_HANDSHAKE_LEADS_TO = frozenset({LoginState.AUTHENTICATE, LoginState.RAW_TOKENS, LoginState.DONE})
_TOKEN_LEADS_TO = frozenset({LoginState.DONE})  # plus the state itself while the exchange wants more tokens

TRANSITIONS: Mapping[tuple[LoginState, Trigger], Transition] = {
    (LoginState.START, ApiKey.API_VERSIONS): Transition(SaslMachine._api_versions, frozenset({LoginState.START})),
    (LoginState.START, ApiKey.SASL_HANDSHAKE): Transition(SaslMachine._handshake, _HANDSHAKE_LEADS_TO),
    # only a re-authentication, which begins here, may ask for another mechanism
    (LoginState.HANDSHAKE, ApiKey.SASL_HANDSHAKE): Transition(SaslMachine._handshake, _HANDSHAKE_LEADS_TO | {LoginState.MECHANISM_CHANGED}),
    (LoginState.AUTHENTICATE, ApiKey.SASL_AUTHENTICATE): Transition(SaslMachine._authenticate, _TOKEN_LEADS_TO | {LoginState.AUTHENTICATE}),
    (LoginState.RAW_TOKENS, Unread.FRAME): Transition(SaslMachine._raw_token, _TOKEN_LEADS_TO | {LoginState.RAW_TOKENS}),
    (LoginState.MECHANISM_CHANGED, Unread.FRAME): Transition(SaslMachine._mechanism_changed, frozenset({LoginState.DONE})),
}
"""Every legal step of a login: (state, the frame's API key, or Unread.FRAME where no header is read) -> the handler and
the states it may lead to. Any frame without a row is refused the one way Kafka refuses it (`_illegal_state`)."""
