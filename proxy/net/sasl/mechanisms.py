"""Server side of each SASL mechanism as a token-in, token-out exchange (no I/O).

`SaslServer` drives one exchange per connection with SaslAuthenticate frames
(or SaslHandshake v0's raw tokens); every mechanism answers the same way.
"""

import hmac
from typing import Protocol

from proxy.net.sasl.scram import MECHANISMS as SCRAM_MECHANISMS
from proxy.net.sasl.scram import ScramError, ScramServer, unescape_username
from proxy.net.settings import ListenerConfig


class AuthenticationFailed(Exception):
    """`str(exc)` goes to the client as SaslAuthenticate's error_message; `reason` only to the log."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason if reason is not None else message


class ServerExchange(Protocol):
    @property
    def complete(self) -> bool: ...

    @property
    def user(self) -> str | None: ...

    def evaluate(self, token: bytes) -> bytes:
        """The challenge (or final answer) for `token`; AuthenticationFailed ends the exchange."""
        ...


def verify_plain(token: bytes, users: dict[str, str]) -> str:
    """The authenticated user name of a PLAIN token, or AuthenticationFailed."""
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
    try:
        authzid, user, password = (part.decode("utf-8") for part in parts)
    except UnicodeDecodeError:
        raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
    if not user:
        raise AuthenticationFailed("Authentication failed: username not specified")
    if authzid and authzid != user:
        raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is different from username")
    expected = users.get(user)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise AuthenticationFailed("Authentication failed: Invalid username or password")
    return user


class PlainExchange:
    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.user: str | None = None

    @property
    def complete(self) -> bool:
        return self.user is not None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("Authentication failed: PLAIN takes a single token")
        self.user = verify_plain(token, self._users)
        return b""


class ScramExchange:
    def __init__(self, server: ScramServer) -> None:
        self._server = server

    @property
    def complete(self) -> bool:
        return self._server.complete

    @property
    def user(self) -> str | None:
        return self._server.username

    def evaluate(self, token: bytes) -> bytes:
        try:
            return self._server.evaluate(token)
        except ScramError as exc:
            raise AuthenticationFailed(exc.error_message, exc.reason) from None


def server_exchange(mechanism: str, listener: ListenerConfig) -> ServerExchange:
    """A fresh exchange for a mechanism the listener enables (the handshake has checked that)."""
    if mechanism == "PLAIN":
        return PlainExchange(listener.plain_users)
    if mechanism in SCRAM_MECHANISMS and listener.scram is not None:
        return ScramExchange(ScramServer(mechanism, listener.scram.lookup(mechanism)))
    raise ValueError(f"listener {listener.name} cannot serve SASL mechanism {mechanism}")


# An unauthenticated peer chooses it: keep records and logs bounded.
_MAX_USER_LENGTH = 256


def attempted_user(mechanism: str, token: bytes | None) -> str | None:
    """The user name a client tried to log in as, read from its first SASL token; None when it cannot be told."""
    if not token:
        return None
    user: str | None = None
    if mechanism == "PLAIN":
        parts = token.split(b"\x00")
        if len(parts) == 3:
            user = parts[1].decode("utf-8", "replace")
    elif mechanism in SCRAM_MECHANISMS:
        # client-first: gs2 header (2 attributes), then n=<saslname>,r=<nonce>
        attributes = token.decode("utf-8", "replace").split(",")
        if len(attributes) >= 3 and attributes[2].startswith("n="):
            try:
                user = unescape_username(attributes[2][2:])
            except ValueError:
                user = attributes[2][2:]
    if not user:
        return None
    return user[:_MAX_USER_LENGTH]
