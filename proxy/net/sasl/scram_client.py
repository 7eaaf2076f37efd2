"""The client side of SCRAM (RFC 5802, RFC 7677), sans-IO: the proxy's own login to the controller.

It shares the primitives of proxy/net/sasl/scram.py with the server side (proxy/net/sasl/scram_server.py)."""

import binascii
import hashlib
import hmac
from collections.abc import Mapping
from enum import Enum

from proxy.net.sasl.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramError,
    b64,
    b64decode,
    escape_username,
    hmac_digest,
    is_printable,
    mechanism_hash,
    new_nonce,
    parse_extensions,
    salted_password,
    shown,
    xor,
)

__all__ = ["ScramClient"]


class _ClientState(Enum):
    SEND_CLIENT_FIRST_MESSAGE = "SEND_CLIENT_FIRST_MESSAGE"
    RECEIVE_SERVER_FIRST_MESSAGE = "RECEIVE_SERVER_FIRST_MESSAGE"
    RECEIVE_SERVER_FINAL_MESSAGE = "RECEIVE_SERVER_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramClient:
    """The proxy's login to the controller; also proves the server knows our keys."""

    def __init__(
        self, mechanism: str, username: str, password: str, *, nonce: str | None = None, extensions: Mapping[str, str] | None = None
    ) -> None:
        self.mechanism = mechanism
        self._hash_name = mechanism_hash(mechanism)
        if not username:
            raise ValueError("SCRAM user name must not be empty")
        if nonce is not None and not is_printable(nonce):
            raise ValueError(f"Invalid client nonce {nonce!r}: must be printable ASCII without ','")
        self.username = username
        self._extensions = dict(extensions or {})
        """Sent after the nonce, as Kafka's ScramExtensions (`tokenauth=true` for a delegation token login)."""
        self._password = password
        self._nonce = nonce if nonce is not None else new_nonce()
        self._state = _ClientState.SEND_CLIENT_FIRST_MESSAGE
        self._bare = ""
        self._auth_message = b""
        self._salted_password = b""

    @property
    def complete(self) -> bool:
        """True once the server has proven it holds this user's ServerKey."""
        return self._state is _ClientState.COMPLETE

    def _expect(self, state: _ClientState) -> None:
        if self._state is not state:
            raise self._failed(f"Unexpected challenge in Sasl client state {self._state.value}")

    def _failed(self, message: str) -> ScramError:
        self._state = _ClientState.FAILED
        self._password = ""
        self._salted_password = b""
        return ScramError(message)

    def first(self) -> bytes:
        """The client-first message (gs2 header 'n,,': no channel binding, no authzid)."""
        self._expect(_ClientState.SEND_CLIENT_FIRST_MESSAGE)
        extensions = "".join(f",{name}={value}" for name, value in self._extensions.items())
        self._bare = f"n={escape_username(self.username)},r={self._nonce}{extensions}"
        self._state = _ClientState.RECEIVE_SERVER_FIRST_MESSAGE
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        """The client-final message carrying our proof, after checking the server's parameters."""
        self._expect(_ClientState.RECEIVE_SERVER_FIRST_MESSAGE)
        try:
            message = server_first.decode("ascii")
        except UnicodeDecodeError:
            raise self._failed("Invalid SCRAM server first message format: not ASCII") from None
        parts = message.split(",")
        if (
            len(parts) < 3
            or not parts[0].startswith("r=")
            or not is_printable(parts[0][2:])
            or not parts[1].startswith("s=")
            or not parts[2].startswith("i=")
            or parse_extensions(parts[3:]) is None
        ):
            raise self._failed(f"Invalid SCRAM server first message format: {shown(message)}")
        nonce, salt_text, iterations_text = parts[0][2:], parts[1][2:], parts[2][2:]
        try:
            salt = b64decode(salt_text)
        except (binascii.Error, ValueError):
            raise self._failed(f"Invalid SCRAM server first message format: invalid salt {shown(salt_text)}") from None
        if not salt or not iterations_text.isascii() or not iterations_text.isdigit():
            raise self._failed(f"Invalid SCRAM server first message format: {shown(message)}")
        iterations = int(iterations_text)
        if not nonce.startswith(self._nonce):
            raise self._failed("Invalid server nonce: does not start with client nonce")
        if len(nonce) == len(self._nonce):
            raise self._failed("Invalid server nonce: the server added no nonce of its own")
        if iterations < MIN_ITERATIONS:
            raise self._failed(f"Requested iterations {iterations} is less than the minimum {MIN_ITERATIONS} for {self.mechanism}")
        if iterations > MAX_ITERATIONS:
            raise self._failed(f"Requested iterations {iterations} is more than the maximum {MAX_ITERATIONS} for {self.mechanism}")
        self._salted_password = salted_password(self._hash_name, self._password, salt, iterations)
        self._password = ""
        without_proof = f"c={b64(b'n,,')},r={nonce}"
        self._auth_message = f"{self._bare},{message},{without_proof}".encode()
        client_key = hmac_digest(self._hash_name, self._salted_password, b"Client Key")
        stored_key = hashlib.new(self._hash_name, client_key).digest()
        proof = xor(client_key, hmac_digest(self._hash_name, stored_key, self._auth_message))
        self._state = _ClientState.RECEIVE_SERVER_FINAL_MESSAGE
        return f"{without_proof},p={b64(proof)}".encode("ascii")

    def verify(self, server_final: bytes) -> None:
        """Accept the server-final message only if the server signature proves the server's key."""
        self._expect(_ClientState.RECEIVE_SERVER_FINAL_MESSAGE)
        try:
            message = server_final.decode("utf-8")
        except UnicodeDecodeError:
            raise self._failed("Invalid SCRAM server final message format: not UTF-8") from None
        parts = message.split(",")
        if parts[0].startswith("e=") and len(parts[0]) > 2:
            raise self._failed(f"Sasl authentication using {self.mechanism} failed with error: {shown(parts[0][2:])}")
        if not parts[0].startswith("v=") or parse_extensions(parts[1:]) is None:
            raise self._failed(f"Invalid SCRAM server final message format: {shown(message)}")
        try:
            signature = b64decode(parts[0][2:])
        except (binascii.Error, ValueError):
            raise self._failed(f"Invalid SCRAM server final message format: {shown(message)}") from None
        server_key = hmac_digest(self._hash_name, self._salted_password, b"Server Key")
        expected = hmac_digest(self._hash_name, server_key, self._auth_message)
        if not hmac.compare_digest(signature, expected):
            raise self._failed("Invalid server signature in server final message")
        self._salted_password = b""
        self._state = _ClientState.COMPLETE
