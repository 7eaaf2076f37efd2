"""The server side of a SASL login as a state machine without IO, in the style of h11.

Feed it each frame the client sends before the login completes; it returns what
to do, in order: reply with these bytes, answer this ApiVersions yourself, the
login failed (audit it before the reply that follows), the connection is refused,
the client is logged in, or close. It never calls anyone: the proxy's session and
the embedded controller drive it (proxy/net/login.py runs the IO).

SaslHandshake v0-1 and SaslAuthenticate v0-2, with the mechanisms of proxy/net/sasl/registry.py,
and Kafka's rules before the login: one valid ApiVersions before SaslHandshake,
nothing else before the login completes (ILLEGAL_SASL_STATE closes the connection).
"""

from collections.abc import Mapping
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


@dataclass(frozen=True)
class LoginFailure:
    """A failed SASL login, for the audit: the mechanism, the user the client tried (None if unreadable), Kafka's answer."""

    mechanism: str
    user: str | None
    message: str
    error_code: int


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


@dataclass(frozen=True)
class Close:
    """Close the connection; `delayed` after connection.failed.authentication.delay.ms, as Kafka does after a failed login."""

    cause: str
    delayed: bool = False


Event = Reply | ApiVersionsRequest | LoginFailed | Refused | LoggedIn | Close


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


class SaslMachine:
    def __init__(self, listener: SaslListener) -> None:
        self.listener = listener
        self.mechanism: str | None = None
        self.done = False
        self._exchange: ServerExchange | None = None
        self._raw_tokens = False  # SaslHandshake v0: tokens follow as bare frames, without a Kafka header
        self._versions_answered = False
        self._first_token: bytes | None = None

    def api_versions_answered(self, valid: bool) -> None:
        """The caller answered an ApiVersionsRequest; an invalid one (INVALID_REQUEST, UNSUPPORTED_VERSION) may be asked again."""
        self._versions_answered = self._versions_answered or valid

    def receive(self, frame: bytes) -> list[Event]:
        """What to do about one frame. Raises ProtocolError for bytes Kafka closes the connection for."""
        if self.done:
            raise RuntimeError("the login is over")
        if self._exchange is not None and self._raw_tokens:
            return self._step(None, frame)
        header = peek_request_header(frame)
        if header.api_key == ApiKey.API_VERSIONS and self._exchange is None and not self._versions_answered:
            return [ApiVersionsRequest(header, frame)]
        if header.api_key == ApiKey.SASL_HANDSHAKE and self._exchange is None:
            return self._handshake(header, frame)
        if header.api_key != ApiKey.SASL_AUTHENTICATE or self._exchange is None or self._raw_tokens:
            detail = f"{api_name(header.api_key)} v{header.api_version} before SASL authentication completed (ILLEGAL_SASL_STATE)"
            return self._end(Refused(PROTOCOL_ERROR, detail, None, self.mechanism), Close(CAUSE_PROTOCOL_ERROR))
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
        self._exchange = self.listener.sasl_servers[requested].exchange(requested)
        self._raw_tokens = header.api_version == 0
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
        except AuthenticationFailed as exc:
            failure = LoginFailure(mechanism, self._attempted_user(mechanism), str(exc), ErrorCode.sasl_authentication_failed)
            return self._end(LoginFailed(failure), *self._failed(header, str(exc)), Close(CAUSE_AUTHENTICATION_FAILED, delayed=True))
        # error_message "": SaslAuthenticateResponseData's default, which Kafka leaves on every successful step
        reply = Reply(challenge) if header is None else _respond(header, {"error_code": ErrorCode.none, "error_message": "", "auth_bytes": challenge, "session_lifetime": 0})
        if not (exchange.complete and exchange.user is not None):
            return [reply]
        principal = Principal("User", exchange.user, token_authenticated=exchange.token_authenticated)
        refusal = privileged_refusal(self.listener, principal)
        if refusal is not None:
            refused = Refused(PRIVILEGED_PRINCIPAL, refusal, principal, mechanism)
            return self._end(refused, *self._failed(header, f"Authentication failed: {refusal}"), Close(CAUSE_PRIVILEGED_PRINCIPAL, delayed=True))
        return self._end(reply, LoggedIn(principal, mechanism))

    def _attempted_user(self, mechanism: str) -> str | None:
        return attempted_user(self.listener.sasl_servers[mechanism], mechanism, self._first_token)

    @staticmethod
    def _failed(header: RequestHeaderInfo | None, message: str) -> list[Event]:
        """Kafka's answer to a failed login; raw tokens have no way to carry one."""
        if header is None:
            return []
        values = {"error_code": ErrorCode.sasl_authentication_failed, "error_message": message, "auth_bytes": b"", "session_lifetime": 0}
        return [_respond(header, values)]
