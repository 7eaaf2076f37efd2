"""The listener's side of SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), sans-IO: ``ScramServer`` is fed
the client's messages and answers them as Kafka's ScramSaslServer does. The primitives it shares with the client
(proxy/net/sasl/scram_client.py) are in proxy/net/sasl/scram.py."""

from __future__ import annotations

import binascii
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from proxy.net.sasl.scram import (
    MIN_ITERATIONS,
    ScramCredential,
    ScramError,
    TokenLogin,
    b64,
    b64decode,
    generic_failure_message,
    hmac_digest,
    is_printable,
    is_value,
    mechanism_hash,
    new_nonce,
    parse_extensions,
    shown,
    unescape_username,
    xor,
)

__all__ = ["ScramServer"]


class _ServerState(Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(frozen=True)
class _ClientFirst:
    gs2_header: str
    authzid: str | None
    username: str
    nonce: str
    bare: str
    extensions: dict[str, str]


class ScramServer:
    """Verifies one client's SCRAM login, driven by the SaslAuthenticate tokens.

    Any failure leaves the server FAILED: a connection gets exactly one attempt,
    as in Kafka's ScramSaslServer.
    """

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], ScramCredential | None],
        *,
        nonce: str | None = None,
        tokens: Callable[[str], TokenLogin | None] | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._tokens = tokens
        self._hash_name = mechanism_hash(mechanism)
        self._lookup = lookup
        if nonce is not None and not is_printable(nonce):
            raise ValueError(f"Invalid server nonce {nonce!r}: must be printable ASCII without ','")
        self._server_nonce = nonce
        self._state = _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE
        self._client_first: _ClientFirst | None = None
        self._server_first: str | None = None
        self._credential: ScramCredential | None = None
        self._username: str | None = None
        self._token: TokenLogin | None = None

    @property
    def complete(self) -> bool:
        return self._state is _ServerState.COMPLETE

    @property
    def username(self) -> str | None:
        """The authenticated user (ScramSaslServer.getAuthorizationID: a token's owner for a token login); None until
        the exchange has succeeded."""
        if not self.complete:
            return None
        return self._token.owner if self._token is not None else self._username

    @property
    def token_authenticated(self) -> bool:
        """Whether the client logged in with a delegation token (`tokenauth=true`)."""
        return self.complete and self._token is not None

    @property
    def token_expiry_ms(self) -> int | None:
        """The token's expiry time for a token login (ScramSaslServer's CREDENTIAL.LIFETIME.MS); None otherwise."""
        return self._token.expiry_ms if self.complete and self._token is not None else None

    def evaluate(self, token: bytes) -> bytes:
        """Answer the next client token: client-first gives server-first, client-final gives server-final."""
        try:
            if self._state is _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE:
                return self._on_client_first(token)
            if self._state is _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE:
                return self._on_client_final(token)
            reason = f"Unexpected challenge in Sasl server state {self._state.value}"
            raise ScramError(reason)
        except ScramError:
            self._fail()
            raise

    def _fail(self) -> None:
        self._state = _ServerState.FAILED
        self._credential = None
        self._client_first = None
        self._server_first = None
        self._username = None
        self._token = None

    def _reject(self, reason: str) -> ScramError:
        return ScramError(generic_failure_message(self.mechanism), reason)

    def _on_client_first(self, token: bytes) -> bytes:
        first = self._parse_client_first(token)
        login: TokenLogin | None = None
        if first.extensions.get("tokenauth", "").lower() == "true":
            # Kafka's ScramSaslServer: the user name is the token id, the owner becomes the authorization id.
            if self._tokens is None:
                raise self._reject("Delegation token authentication (tokenauth=true) is not served on this listener")
            login = self._tokens(first.username)
            if login is None:
                raise self._reject(f"Token Authentication failed: Invalid tokenId : {shown(first.username)}")
            credential: ScramCredential | None = login.credential
        else:
            try:
                credential = self._lookup(first.username)
            except Exception as exc:
                raise self._reject(f"Authentication failed: Credentials could not be obtained ({type(exc).__name__})") from exc
        if credential is None:
            raise self._reject("Authentication failed: Invalid user credentials")
        if first.authzid is not None and first.authzid != first.username:
            # Kafka raises SaslAuthenticationException here, so this text does reach the client.
            raise ScramError("Authentication failed: Client requested an authorization id that is different from username")
        if credential.iterations < MIN_ITERATIONS:
            raise self._reject(f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS} for {self.mechanism}")
        server_nonce = self._server_nonce if self._server_nonce is not None else new_nonce()
        server_first = f"r={first.nonce}{server_nonce},s={b64(credential.salt)},i={credential.iterations}"
        self._client_first = first
        self._server_first = server_first
        self._credential = credential
        self._token = login
        self._state = _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE
        return server_first.encode("ascii")

    def _parse_client_first(self, token: bytes) -> _ClientFirst:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._reject("Invalid SCRAM client first message format: not UTF-8") from None

        def malformed(detail: str) -> ScramError:
            return self._reject(f"Invalid SCRAM client first message format ({detail}): {shown(message)}")

        parts = message.split(",")
        if len(parts) < 4:
            raise malformed("too few attributes")
        cbind_flag, authzid_attr = parts[0], parts[1]
        if cbind_flag.startswith("p="):
            raise malformed("channel binding is not supported")
        if cbind_flag not in ("n", "y"):
            raise malformed("gs2 header must start with 'n' or 'y'")
        authzid: str | None = None
        if authzid_attr:
            if not authzid_attr.startswith("a=") or len(authzid_attr) == 2:
                raise malformed("bad authorization id")
            try:
                authzid = unescape_username(authzid_attr[2:])
            except ValueError:
                raise malformed("bad escape in authorization id") from None
        name_attr, nonce_attr = parts[2], parts[3]
        if name_attr.startswith("m="):
            raise malformed("mandatory extension 'm' is not supported")
        if not name_attr.startswith("n=") or not is_value(name_attr[2:]):
            raise malformed("missing user name")
        try:
            username = unescape_username(name_attr[2:])
        except ValueError:
            raise malformed("bad escape in user name") from None
        if not nonce_attr.startswith("r=") or not is_printable(nonce_attr[2:]):
            raise malformed("missing or invalid nonce")
        extensions = parse_extensions(parts[4:])
        if extensions is None:
            raise malformed("invalid extension")
        return _ClientFirst(
            gs2_header=f"{cbind_flag},{authzid_attr},",
            authzid=authzid,
            username=username,
            nonce=nonce_attr[2:],
            bare=",".join(parts[2:]),
            extensions=extensions,
        )

    def _on_client_final(self, token: bytes) -> bytes:
        first, server_first, credential = self._client_first, self._server_first, self._credential
        assert first is not None and server_first is not None and credential is not None
        try:
            message = token.decode("ascii")
        except UnicodeDecodeError:
            raise self._reject("Invalid SCRAM client final message format: not ASCII") from None

        def malformed(detail: str) -> ScramError:
            return self._reject(f"Invalid SCRAM client final message format ({detail}): {shown(message)}")

        parts = message.split(",")
        if len(parts) < 3:
            raise malformed("too few attributes")
        channel_attr, nonce_attr, proof_attr = parts[0], parts[1], parts[-1]
        if not channel_attr.startswith("c="):
            raise malformed("missing channel binding")
        if not nonce_attr.startswith("r="):
            raise malformed("missing nonce")
        if not proof_attr.startswith("p="):
            raise malformed("proof must be the last attribute")
        if parse_extensions(parts[2:-1]) is None:
            raise malformed("invalid extension")
        try:
            # Kafka 4.3.1's ScramSaslServer reads the channel binding (it must be base64) but does not compare it with
            # the client-first's gs2 header: a login whose proof is right is accepted whatever `c=` holds (the proof
            # covers it, and neither side binds channels), so the proxy accepts it too
            # (tests/interop/test_hostile_sasl_kafka.py).
            b64decode(channel_attr[2:])
            proof = b64decode(proof_attr[2:])
        except (binascii.Error, ValueError):
            raise malformed("invalid base64") from None
        expected_nonce = server_first[2 : server_first.index(",")]
        if not hmac.compare_digest(nonce_attr[2:].encode("ascii"), expected_nonce.encode("ascii")):
            raise self._reject("Invalid client nonce in the final client message.")
        digest_size = hashlib.new(self._hash_name).digest_size
        if len(proof) != digest_size:
            # Kafka xors the proof with the client signature, and arrays of different lengths raise an
            # IllegalArgumentException, not a SaslException: no answer, the connection closes at once.
            detail = f"Invalid SCRAM client final message format (proof must be {digest_size} bytes): {shown(message)}"
            raise ScramError(generic_failure_message(self.mechanism), detail, answered=False)
        without_proof = ",".join(parts[:-1])
        auth_message = f"{first.bare},{server_first},{without_proof}".encode()
        client_signature = hmac_digest(self._hash_name, credential.stored_key, auth_message)
        client_key = xor(client_signature, proof)
        if not hmac.compare_digest(hashlib.new(self._hash_name, client_key).digest(), credential.stored_key):
            raise self._reject("Invalid client credentials")
        server_signature = hmac_digest(self._hash_name, credential.server_key, auth_message)
        self._username = first.username
        self._credential = None
        self._state = _ServerState.COMPLETE
        return f"v={b64(server_signature)}".encode("ascii")
