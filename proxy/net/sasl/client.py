"""Client side of the proxy's own SASL login: the tokens to send, mechanism by mechanism (no I/O)."""

from typing import Protocol

from proxy.net.sasl.scram import MECHANISMS as SCRAM_MECHANISMS
from proxy.net.sasl.scram import ScramError
from proxy.net.sasl.scram_client import ScramClient

CLIENT_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)


class LoginFailed(Exception):
    pass


class ClientExchange(Protocol):
    def initial(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None:
        """The next token for the server's `challenge`, or None when the login is complete."""
        ...


class PlainClient:
    def __init__(self, username: str, password: str) -> None:
        self._token = b"\x00" + username.encode() + b"\x00" + password.encode()

    def initial(self) -> bytes:
        return self._token

    def respond(self, challenge: bytes) -> bytes | None:
        return None


class ScramLogin:
    """Also checks the server's final signature, so a controller that does not hold our keys is not trusted."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self._client = ScramClient(mechanism, username, password)
        self._sent_final = False

    def initial(self) -> bytes:
        return self._client.first()

    def respond(self, challenge: bytes) -> bytes | None:
        try:
            if not self._sent_final:
                self._sent_final = True
                return self._client.final(challenge)
            self._client.verify(challenge)
        except ScramError as exc:
            raise LoginFailed(str(exc)) from None
        return None


def client_exchange(mechanism: str, username: str, password: str) -> ClientExchange:
    if mechanism == "PLAIN":
        return PlainClient(username, password)
    if mechanism in SCRAM_MECHANISMS:
        return ScramLogin(mechanism, username, password)
    raise ValueError(f"unsupported SASL mechanism {mechanism} (supported: {', '.join(CLIENT_MECHANISMS)})")
