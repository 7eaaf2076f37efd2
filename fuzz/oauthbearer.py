"""OAUTHBEARER under the fuzzer: family `oauthbearer` of `python -m fuzz.run` (registered in fuzz.targets).

Three targets, each fed realistic input broken on purpose:

- `oauthbearer client-first`: RFC 7628 client-first messages (GS2 header, authzid,
  `auth=Bearer <token>`, extensions) through the server's exchange with a real
  validator, exactly as a login reads them;
- `oauthbearer token`: JWTs signed with RSA and EC keys, their headers and claims
  made hostile (alg none, HMAC, odd kids, crit, claims of every type, deep nesting),
  through the validator alone;
- `oauthbearer jwks`: JWK sets (RSA, EC, symmetric, encryption keys, broken members)
  through the JWKS parser.

A target either accepts the input or refuses it (reported to the runner as a
ProtocolError): a malformed message, `invalid_token`, a JWKS without a usable key.
Any other exception is a finding, and so is a parsed client-first message that does
not build back to one that parses the same, or a token that validates although it
was signed with another algorithm than an allowed one.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from envelope.errors import ProtocolError
from fuzz.generate import FIXED, Generated, Site
from fuzz.target import Target
from proxy.net.sasl.mechanisms import AuthenticationFailed
from proxy.net.sasl.oauth.exchange import INVALID_TOKEN, MalformedMessage, OAuthBearerServerExchange, build_client_first, parse_client_first
from proxy.net.sasl.oauth.jwks import ALLOWED_ALGORITHMS, JwksError, StaticKeys, parse_jwks
from proxy.net.sasl.oauth.settings import OAuthValidationSettings
from proxy.net.sasl.oauth.validator import InvalidToken, TokenValidator

_NOW = 1_800_000_000
_AUDIENCE = "kafka-cluster"
_ISSUER = "https://idp.example.com/realms/kafka"
_HOSTILE = (
    b"\x01", b"\x00", b"=", b",", b" ", b"\t", b"\r\n", b".", b"..", b"==", b"=2C", b"=3D", b"a=", b"n,,", b"auth=",
    b"Bearer ", b"\xff", b"\xc3\xa9", b"\x7f", b"~", b"+", b"/", b"!", b'"', b"{", b"}", b"[", b"]", b"\\u0000", b"null",
)  # fmt: skip


@dataclass(frozen=True)
class _Keys:
    signing: tuple[tuple[str, str, Any], ...]  # kid, algorithm, private key
    jwks: bytes


@cache
def _keys() -> _Keys:
    """Made once per worker process: an RSA key (RS*/PS*) and an EC key per curve, and their JWKS."""
    rng_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signing: list[tuple[str, str, Any]] = [("rsa", alg, rng_rsa) for alg in ("RS256", "RS384", "RS512", "PS256", "PS512")]
    curves = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}
    for alg, curve in curves.items():
        signing.append((f"ec-{alg}", alg, ec.generate_private_key(curve)))
    entries = [json.loads(RSAAlgorithm.to_jwk(rng_rsa.public_key())) | {"kid": "rsa", "use": "sig"}]
    for kid, alg, key in signing[5:]:
        entries.append(json.loads(ECAlgorithm.to_jwk(key.public_key())) | {"kid": kid, "alg": alg})
    return _Keys(tuple(signing), json.dumps({"keys": entries}).encode())


@cache
def _validator() -> TokenValidator:
    settings = OAuthValidationSettings("http://fuzz/jwks", expected_audience=(_AUDIENCE,), expected_issuer=_ISSUER)
    return TokenValidator(settings, StaticKeys(parse_jwks(_keys().jwks)), clock=lambda: _NOW)


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _claims(rng: random.Random) -> dict[str, Any]:
    claims: dict[str, Any] = {"sub": "alice", "iss": _ISSUER, "aud": _AUDIENCE, "iat": _NOW - 10, "exp": _NOW + 300, "scope": "profile email"}
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        name = rng.choice(("sub", "iss", "aud", "iat", "exp", "nbf", "scope", "jti"))
        claims[name] = rng.choice(
            (None, "", " ", "x" * rng.randrange(1, 300), 0, -1, _NOW, _NOW + 10**9, 1e300, True, [], ["a", "a"], [_AUDIENCE, 5], {"a": 1}, [[[]]], "\u0000")
        )
    return claims


def _forged_header(rng: random.Random, kid: str, alg: str) -> dict[str, Any] | None:
    """Sometimes a header other than the one the token was signed with (its signature then no longer fits)."""
    if rng.random() >= 0.3:
        return None
    header: dict[str, Any] = {"kid": kid, "alg": alg, "typ": "JWT"}
    header[rng.choice(("alg", "kid", "crit", "b64", "typ"))] = rng.choice(("none", "HS256", "RS256", "ES256", "", None, 7, ["exp"], False, "x" * 1100))
    return header


def _token(rng: random.Random) -> bytes:
    kid, alg, key = rng.choice(_keys().signing)
    claims = _claims(rng)
    if rng.random() < 0.15:
        nested = "[" * rng.choice((10, 1000, 100_000)) + "]" * rng.choice((10, 1000, 100_000))
        return b".".join((_b64(json.dumps({"kid": kid, "alg": alg}).encode()), _b64(nested.encode()), _b64(b"sig")))
    token = jwt.PyJWS().encode(json.dumps(claims).encode(), key, algorithm=alg, headers={"kid": kid})
    head, payload, signature = token.split(".")
    forged = _forged_header(rng, kid, alg)
    if forged is not None:
        head = _b64(json.dumps(forged).encode()).decode()
    if rng.random() < 0.1:
        signature = signature[: rng.randrange(len(signature) + 1)]
    return f"{head}.{payload}.{signature}".encode()


def _client_first(rng: random.Random) -> bytes:
    token = _token(rng).decode("ascii", "replace")
    authzid = rng.choice(("", "", "alice", "mallory", "a=2Cb"))
    extensions = rng.choice(({}, {}, {"traceId": "abc 1"}, {"logicalCluster": "lkc-1", "x": "y"}))
    return build_client_first(token, authzid, extensions)


def _jwks(rng: random.Random) -> bytes:
    document = json.loads(_keys().jwks)
    entries: list[Any] = document["keys"]
    for _ in range(rng.choice((0, 1, 2, 3))):
        roll = rng.random()
        objects = [entry for entry in entries if isinstance(entry, dict)]
        if roll < 0.3 and objects:
            entry = dict(rng.choice(objects))
            entry[rng.choice(("kty", "n", "e", "x", "y", "crv", "use", "alg", "kid", "d"))] = rng.choice(
                ("RSA", "EC", "oct", "OKP", "enc", "RSA-OAEP", "HS256", "P-256", "secp256k1", "", 5, None, [], "AQAB", "!!!", "A" * 3000)
            )
            entries.append(entry)
        elif roll < 0.5:
            entries.append(rng.choice(({"kty": "oct", "k": "c2VjcmV0"}, "x", 5, None, [], {"kty": "RSA"})))
        elif roll < 0.6:
            document["keys"] = rng.choice(({}, "x", None, []))
    return json.dumps(document).encode()


def _break(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        position = rng.randrange(len(data) + 1)
        roll = rng.random()
        if roll < 0.5:
            data = data[:position] + rng.choice(_HOSTILE) + data[position:]
        elif roll < 0.7:
            data = data[:position] + data[position + rng.randrange(1, 8) :]
        elif roll < 0.85:
            end = min(len(data), position + rng.randrange(1, 40))
            data = data[:position] + data[position:end] * rng.choice((2, 3, 50)) + data[end:]
        else:
            data = data[:position]
    return data


def decode_client_first(data: bytes) -> None:
    """What a login does with the first SaslAuthenticate token of OAUTHBEARER."""
    refusal: MalformedMessage | None = None
    try:
        message = parse_client_first(data)
    except MalformedMessage as exc:
        refusal = exc
    else:
        rebuilt = build_client_first(message.token, message.authorization_id, message.extensions)
        if parse_client_first(rebuilt) != message:
            raise AssertionError("a parsed client-first message does not build back to the same message")
    exchange = OAuthBearerServerExchange(_validator())
    try:
        challenge = exchange.evaluate(data)
    except AuthenticationFailed as exc:
        raise ProtocolError(str(exc)) from None
    if refusal is not None:
        raise AssertionError(f"the exchange accepted a message the parser refuses: {refusal}")
    if challenge == INVALID_TOKEN:
        reason = exchange.failure_reason
        try:
            exchange.evaluate(b"\x01")  # RFC 7628: the client's %x01 ends the login with the error
        except AuthenticationFailed as exc:
            if str(exc) != INVALID_TOKEN.decode():
                raise AssertionError(f"the failure after %x01 says {exc}") from None
            raise ProtocolError(f"invalid_token: {reason}") from None
        raise AssertionError("%x01 after invalid_token did not end the login")
    if challenge != b"" or not exchange.complete or not exchange.user:
        raise AssertionError(f"an accepted token gave {challenge!r} for {exchange.user!r}")


def decode_token(data: bytes) -> None:
    """The validator alone, on any text a client could put after `Bearer `."""
    try:
        validated = _validator().validate(data.decode("utf-8", "replace"))
    except InvalidToken as exc:
        raise ProtocolError(str(exc)) from None
    header = jwt.get_unverified_header(data)
    if header.get("alg") not in ALLOWED_ALGORITHMS or not validated.principal_name.strip():
        raise AssertionError(f"a token with alg {header.get('alg')!r} validated as {validated.principal_name!r}")


def decode_jwks(data: bytes) -> None:
    try:
        keys = parse_jwks(data)
    except JwksError as exc:
        raise ProtocolError(str(exc)) from None
    for key in keys:
        if key.kty not in ("RSA", "EC") or not any(key.fits(alg) for alg in ALLOWED_ALGORITHMS):
            raise AssertionError(f"the JWKS parser kept a key no allowed algorithm can use: {key}")


@dataclass(frozen=True, slots=True)
class BytesTarget(Target):
    """A target whose valid input is generated bytes rather than a Kafka message body."""

    make: Callable[[random.Random], bytes] = _client_first

    def valid(self, rng: random.Random) -> tuple[bytes, Generated]:
        data = _break(self.make(rng), rng)
        # Spans the runner's mutator may overwrite with 0xff, 0x80, 0x7f or 0x02.
        sites = [Site(FIXED, start, min(len(data), start + rng.choice((1, 2))), False) for start in rng.sample(range(len(data)), min(3, len(data)))]
        return b"", Generated(bytearray(data), sites)


def targets() -> list[Target]:
    return [
        BytesTarget("oauthbearer client-first", bytes, b"", decode_client_first, _client_first),
        BytesTarget("oauthbearer token", bytes, b"", decode_token, _token),
        BytesTarget("oauthbearer jwks", bytes, b"", decode_jwks, _jwks),
    ]
