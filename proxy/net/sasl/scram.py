"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), sans-IO: what both sides share.

Both ends are plain state machines fed with tokens: ``ScramServer``
(proxy/net/sasl/scram_server.py) serves the listener, ``ScramClient``
(proxy/net/sasl/scram_client.py) the proxy's own login to the controller, both on the
primitives here (credentials, username escaping, message syntax), and both can be
tested without sockets.

Passwords are used as their UTF-8 bytes without SASLprep, exactly as Kafka's
``ScramFormatter.normalize`` does, so credentials created here and by
``kafka-configs.sh`` agree for every password.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MIN_ITERATIONS",
    "ScramCredential",
    "ScramError",
    "TokenLogin",
    "b64",
    "b64decode",
    "escape_username",
    "generic_failure_message",
    "hmac_digest",
    "is_printable",
    "is_value",
    "make_credential",
    "mechanism_hash",
    "new_nonce",
    "parse_extensions",
    "salted_password",
    "shown",
    "unescape_username",
    "xor",
]

MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's ScramMechanism accepts credentials in this range only.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384

_NONCE_BYTES = 32
_MAX_SHOWN = 120


@dataclass(frozen=True)
class ScramCredential:
    """What the server keeps per user and mechanism: enough to verify, not to log in."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class ScramError(Exception):
    """A failed SCRAM exchange.

    ``str(error)`` / ``error_message`` is what Kafka would put in SaslAuthenticate's
    ``error_message``: for most failures Kafka deliberately sends only the generic
    "Authentication failed during authentication due to invalid credentials with
    SASL mechanism ..." so that an unknown user and a wrong password look alike.
    ``reason`` keeps the precise cause (Kafka's internal exception text) for logs.
    ``answered`` is False where Kafka fails with an unexpected exception instead, which
    it does not answer: the connection closes at once (AuthenticationFailed.answered).
    """

    def __init__(self, error_message: str, reason: str | None = None, *, answered: bool = True) -> None:
        super().__init__(error_message)
        self.error_message = error_message
        self.reason = reason if reason is not None else error_message
        self.answered = answered


def generic_failure_message(mechanism: str) -> str:
    """Kafka's wire text for a SaslException: names nothing but the mechanism."""
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


def mechanism_hash(mechanism: str) -> str:
    try:
        return MECHANISMS[mechanism]
    except KeyError:
        raise ValueError(f"Unsupported SCRAM mechanism {mechanism!r}; supported: {', '.join(MECHANISMS)}") from None


def _check_iterations(iterations: int) -> None:
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"Invalid SCRAM iterations {iterations!r}: must be an integer between {MIN_ITERATIONS} and {MAX_ITERATIONS}")


def hmac_digest(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def make_credential(mechanism: str, password: str, *, iterations: int = MIN_ITERATIONS, salt: bytes | None = None) -> ScramCredential:
    """Derive the stored form of a password so the plain text never needs to be kept."""
    hash_name = mechanism_hash(mechanism)
    _check_iterations(iterations)
    if salt is None:
        salt = secrets.token_bytes(32)
    elif not salt:
        raise ValueError("SCRAM salt must not be empty")
    salted = salted_password(hash_name, password, salt, iterations)
    client_key = hmac_digest(hash_name, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(hash_name, client_key).digest(),
        server_key=hmac_digest(hash_name, salted, b"Server Key"),
        iterations=iterations,
    )


def escape_username(username: str) -> str:
    """RFC 5802 saslname: ',' and '=' would otherwise break the attribute syntax."""
    return username.replace("=", "=3D").replace(",", "=2C")


def unescape_username(sasl_name: str) -> str:
    """Inverse of `escape_username`; any other '=' sequence is a protocol error (ValueError)."""
    out: list[str] = []
    i = 0
    while i < len(sasl_name):
        char = sasl_name[i]
        if char == "=":
            escape = sasl_name[i : i + 3]
            if escape == "=2C":
                out.append(",")
            elif escape == "=3D":
                out.append("=")
            else:
                raise ValueError(f"Invalid username: {shown(sasl_name)}")
            i += 3
        else:
            out.append(char)
            i += 1
    return "".join(out)


def shown(text: str) -> str:
    """Peer-supplied text for a log line: quoted (no log injection) and bounded."""
    shown = repr(text[:_MAX_SHOWN])
    return shown + "..." if len(text) > _MAX_SHOWN else shown


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Strict standard base64 (RFC 5802 uses it, not the URL-safe alphabet)."""
    return base64.b64decode(text.encode("ascii"), validate=True)


def is_printable(text: str) -> bool:
    """RFC 5802 `printable`: what a nonce may contain."""
    return bool(text) and all("\x21" <= char <= "\x7e" and char != "," for char in text)


def is_value(text: str) -> bool:
    """RFC 5802 `value`: any UTF-8 except NUL and ','."""
    return bool(text) and "\x00" not in text and "," not in text


def parse_extensions(parts: list[str]) -> dict[str, str] | None:
    """`attr=value` pairs after the mandatory attributes; None when one is malformed."""
    extensions: dict[str, str] = {}
    for part in parts:
        name, sep, value = part.partition("=")
        if not sep or not name.isascii() or not name.isalpha() or not is_value(value):
            return None
        extensions[name] = value
    return extensions


def new_nonce() -> str:
    # token_urlsafe only uses [A-Za-z0-9_-]: printable and never ','.
    return secrets.token_urlsafe(_NONCE_BYTES)


@dataclass(frozen=True)
class TokenLogin:
    """A delegation token a `tokenauth=true` login names: its SCRAM credential, owner and expiry."""

    credential: ScramCredential
    owner: str
    expiry_ms: int
