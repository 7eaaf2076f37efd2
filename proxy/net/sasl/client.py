"""The client side's contract of every mechanism: the proxy's own login to the controller, token by token (no I/O).

Each mechanism module implements it (proxy/net/sasl/plain.py, scram_mechanism.py); the proxy's
link to the controller (proxy/upstream/link.py) drives it with SaslAuthenticate frames.
"""

from typing import Protocol


class LoginFailed(Exception):
    """The server's answer does not hold (a SCRAM server that does not know our keys, say)."""


class ClientExchange(Protocol):
    def initial(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None:
        """The next token for the server's `challenge`, or None when the login is complete; LoginFailed when it cannot go on."""
        ...


__all__ = ["ClientExchange", "LoginFailed"]
