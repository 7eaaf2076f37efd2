"""SASL/OAUTHBEARER (RFC 7628) as Kafka speaks it, without IO: the client's first message, both sides' exchanges.

The client-first message is a GS2 header and key/value pairs separated by %x01::

    n,[a=<authzid>],%x01auth=Bearer <token>%x01[<extension>=<value>%x01...]%x01

parsed with Kafka's own grammar (`OAuthBearerClientInitialResponse`): the
authzid is a SASL name of ASCII characters other than `=` and `,` (or `=2C`,
`=3D`), keys are letters, values printable ASCII, space, tab, CR or LF; `auth`
is required and is `<scheme> <token>` with the scheme `Bearer` in any case and a
token of RFC 6750's b64token characters (`-._~+/`, letters, digits, then `=`s).
A repeated key keeps its last value. Anything else, an empty token included, is
a malformed message.

The server's answers (`OAuthBearerServerExchange`, as `OAuthBearerSaslServer`):

- a good token: an empty challenge; the exchange is complete, the principal is
  `User:<the token's subject>` and the token's expiry bounds the session;
- a token that does not validate (signature, algorithm, expiry, audience,
  issuer, unknown key, undecodable, too large): the challenge
  `{"status":"invalid_token"}` with error 0, and after the client's %x01 the
  failure (SASL_AUTHENTICATION_FAILED, 58, with that JSON as the message);
  any other message instead of the %x01 is read as a new client-first message;
- a malformed message: the failure at once, with Kafka's message that names no
  detail ("Authentication failed during authentication due to invalid
  credentials with SASL mechanism OAUTHBEARER");
- an authzid that is not the token's principal name: the failure at once, with
  Kafka's message naming both.

SASL extensions are accepted and kept (Kafka's validator accepts every one).

The client side (`OAuthBearerClientExchange`, as `OAuthBearerSaslClient`) sends
the first message and answers a server's error challenge with %x01.

The session's lifetime (KIP-368) is no concern of this exchange: it hands back the token's
expiry, and proxy/net/sasl/machine.py `session_lifetime_ms` applies Kafka's rule to it.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from proxy.net.sasl.client import LoginFailed
from proxy.net.sasl.mechanisms import AuthenticationFailed

__all__ = [
    "CONTROL_A",
    "INVALID_TOKEN",
    "MALFORMED_MESSAGE",
    "MECHANISM",
    "ClientFirstMessage",
    "MalformedMessage",
    "OAuthBearerClientExchange",
    "OAuthBearerServerExchange",
    "TokenValidatorLike",
    "ValidatedToken",
    "attempted_user",
    "build_client_first",
    "error_response",
    "parse_client_first",
]

MECHANISM = "OAUTHBEARER"
CONTROL_A = b"\x01"
"""The client's dummy answer to an error challenge (RFC 7628 3.2.3), and the separator of the key/value pairs."""
INVALID_TOKEN = b'{"status":"invalid_token"}'
"""The server's challenge for a token that does not validate (Kafka's `jsonErrorResponse("invalid_token", null, null)`)."""
MALFORMED_MESSAGE = f"Authentication failed during authentication due to invalid credentials with SASL mechanism {MECHANISM}"
"""Kafka's answer to a SaslException: a client-first message that does not parse."""
_MALFORMED_REAUTH = f"Authentication failed during re-authentication due to invalid credentials with SASL mechanism {MECHANISM}"

# Kafka's OAuthBearerClientInitialResponse, on bytes: every character the grammar allows is ASCII, so a byte
# at or above 0x80 (or a UTF-8 sequence Java would decode to U+FFFD) fails the match either way.
_SASLNAME = rb"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KEY = rb"[A-Za-z]+"
_VALUE = rb"[\x21-\x7e \t\r\n]+"
_KVPAIRS = rb"(?:" + _KEY + rb"=" + _VALUE + rb"\x01)*"
_CLIENT_FIRST = re.compile(rb"n,(?:a=(?P<authzid>" + _SASLNAME + rb"))?,\x01(?P<kvpairs>" + _KVPAIRS + rb")\x01")
_AUTH = re.compile(rb"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_EXTENSION_KEY = re.compile(_KEY)
_EXTENSION_VALUE = re.compile(_VALUE)
AUTH_KEY = "auth"

# An unauthenticated peer chooses it: keep audit records and logs bounded.
_MAX_USER_LENGTH = 256


class MalformedMessage(ValueError):
    """A client-first message outside Kafka's grammar; the message says where (for the log, not the client)."""


@dataclass(frozen=True)
class ClientFirstMessage:
    token: str = field(repr=False)
    authorization_id: str = ""
    extensions: Mapping[str, str] = field(default_factory=dict)


def parse_client_first(data: bytes) -> ClientFirstMessage:
    """Kafka's parse of an OAUTHBEARER client-first message, or MalformedMessage."""
    match = _CLIENT_FIRST.fullmatch(data)
    if match is None:
        raise MalformedMessage("Invalid OAUTHBEARER client first message")
    authzid = match.group("authzid") or b""
    pairs: dict[str, str] = {}
    for element in match.group("kvpairs").split(CONTROL_A):
        if element:
            key, _, value = element.partition(b"=")
            pairs[key.decode("ascii")] = value.decode("ascii")
    auth = pairs.pop(AUTH_KEY, None)
    if auth is None:
        raise MalformedMessage("Invalid OAUTHBEARER client first message: 'auth' not specified")
    auth_match = _AUTH.fullmatch(auth.encode("ascii"))
    if auth_match is None:
        raise MalformedMessage("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if auth_match.group("scheme").lower() != b"bearer":
        raise MalformedMessage("Invalid scheme in OAUTHBEARER client first message")
    return ClientFirstMessage(auth_match.group("token").decode("ascii"), authzid.decode("ascii"), pairs)


def build_client_first(token: str, authorization_id: str = "", extensions: Mapping[str, str] | None = None) -> bytes:
    """The client-first message Kafka's client sends (`OAuthBearerClientInitialResponse.toBytes`).
    ValueError for an extension name or value outside the grammar, or the reserved name `auth`."""
    extensions = dict(extensions or {})
    for name, value in extensions.items():
        if name == AUTH_KEY or not _EXTENSION_KEY.fullmatch(name.encode("utf-8", "replace")):
            raise ValueError(f"Extension name {name} is invalid")
        if not _EXTENSION_VALUE.fullmatch(value.encode("utf-8", "replace")):
            raise ValueError(f"Extension value for extension {name} is invalid")
    authzid = f"a={authorization_id}" if authorization_id else ""
    rendered = "\x01".join(f"{name}={value}" for name, value in extensions.items())
    if rendered:
        rendered = "\x01" + rendered
    return f"n,{authzid},\x01auth=Bearer {token}{rendered}\x01\x01".encode()


def error_response(status: str, scope: str | None = None, openid_configuration: str | None = None) -> bytes:
    """Kafka's `jsonErrorResponse`: the server's error challenge, formatted exactly as Kafka formats it."""
    text = f'{{"status":"{status}"'
    if scope is not None:
        text += f', "scope":"{scope}"'
    if openid_configuration is not None:
        text += f', "openid-configuration":"{openid_configuration}"'
    return (text + "}").encode()


# --------------------------------------------------------------------------- the server


@dataclass(frozen=True)
class ValidatedToken:
    """What a token that validated tells the server (Kafka's OAuthBearerToken)."""

    principal_name: str
    lifetime_ms: int
    """The token's expiry (`exp`), in milliseconds since the epoch."""
    scopes: frozenset[str] = frozenset()
    start_time_ms: int | None = None
    """`iat`, in milliseconds since the epoch, when the token has one."""


class TokenValidatorLike(Protocol):
    """proxy.net.sasl.oauth.validator.TokenValidator, or anything that decides a token the same way."""

    def validate(self, token: str) -> ValidatedToken:
        """The token's principal and lifetime; any exception means `invalid_token` (its text goes only to the log)."""
        ...


class OAuthBearerServerExchange:
    """The server side of one OAUTHBEARER login, as `proxy.net.sasl.mechanisms.ServerExchange` (complete, user,
    evaluate); `evaluate` raises `AuthenticationFailed` for Kafka's SASL_AUTHENTICATION_FAILED answers.

    After completion: `user` is the principal name (`User:<user>`), `token` what the validator
    returned, `credential_expiry_ms` the token's expiry for `session_lifetime_ms`, and
    `extensions` the client's SASL extensions. `failure_reason` keeps why the last token was
    refused (for the log; the client only ever sees `{"status":"invalid_token"}`)."""

    def __init__(self, validator: TokenValidatorLike, *, reauthentication: bool = False) -> None:
        self._validator = validator
        self._reauthentication = reauthentication
        self._error: bytes | None = None
        self.token: ValidatedToken | None = None
        self.extensions: Mapping[str, str] = {}
        self.failure_reason: str | None = None
        self.attempted_user: str | None = None

    @property
    def complete(self) -> bool:
        return self.token is not None

    @property
    def user(self) -> str | None:
        return None if self.token is None else self.token.principal_name

    @property
    def token_authenticated(self) -> bool:
        return False

    @property
    def credential_expiry_ms(self) -> int | None:
        return None if self.token is None else self.token.lifetime_ms

    @property
    def authentication_id(self) -> str | None:
        return None  # the principal's name is the one the credential proved

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed(self._malformed(), "OAUTHBEARER takes a single client message")
        if token == CONTROL_A and self._error is not None:
            # RFC 7628 3.2.3: the client acknowledged our error; the login fails with it.
            raise AuthenticationFailed(self._error.decode(), self.failure_reason or "invalid token")
        self._error = None
        try:
            message = parse_client_first(token)
        except MalformedMessage as exc:
            raise AuthenticationFailed(self._malformed(), str(exc)) from None
        self.attempted_user = message.authorization_id[:_MAX_USER_LENGTH] or _unverified_subject(message.token)
        try:
            validated = self._validator.validate(message.token)
        except Exception as exc:  # any refusal of the token is Kafka's invalid_token; the reason stays in the log
            self.failure_reason = str(exc) or type(exc).__name__
            self._error = INVALID_TOKEN
            return INVALID_TOKEN
        if message.authorization_id and message.authorization_id != validated.principal_name:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id "
                f"({message.authorization_id}) that is different from the token's principal name ({validated.principal_name})"
            )
        self.token = validated
        self.extensions = dict(message.extensions)
        self.failure_reason = None
        return b""

    def _malformed(self) -> str:
        return _MALFORMED_REAUTH if self._reauthentication else MALFORMED_MESSAGE


def _unverified_subject(token: str, claim: str = "sub") -> str | None:
    """The subject a token claims, read without checking it: only for the audit of a failed login."""
    parts = token.split(".")
    if len(parts) != 3 or len(parts[1]) > 64 * 1024:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, RecursionError):
        return None
    value = payload.get(claim) if isinstance(payload, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:_MAX_USER_LENGTH]


def attempted_user(first_token: bytes | None) -> str | None:
    """Who a client tried to log in as, from its first OAUTHBEARER message (the authzid, else the token's
    unverified `sub`), for the audit of a failed login; None when it cannot be told."""
    if not first_token:
        return None
    try:
        message = parse_client_first(first_token)
    except MalformedMessage:
        return None
    return message.authorization_id[:_MAX_USER_LENGTH] or _unverified_subject(message.token)


# --------------------------------------------------------------------------- the client


class OAuthBearerClientExchange:
    """The client side (`proxy.net.sasl.client.ClientExchange`): the first message with the token, then either
    an empty answer (logged in) or an error challenge, which is answered with %x01 so that the server sends its
    failure (SASL_AUTHENTICATION_FAILED). `server_error` keeps the server's JSON error."""

    def __init__(self, token: str, *, authorization_id: str = "", extensions: Mapping[str, str] | None = None) -> None:
        self._first = build_client_first(token, authorization_id, extensions)
        self._acknowledged = False
        self.server_error: str | None = None

    def initial(self) -> bytes:
        return self._first

    def respond(self, challenge: bytes) -> bytes | None:
        if self._acknowledged:
            raise LoginFailed(f"the server answered our %x01 without failing the login (its error: {self.server_error})")
        if not challenge:
            return None
        self.server_error = challenge[:1024].decode("utf-8", "replace")
        self._acknowledged = True
        return CONTROL_A
