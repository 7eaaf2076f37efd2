"""A JWT's claims, checked in one place for both sides of OAUTHBEARER, with one set of bounds.

- The broker side (proxy/net/sasl/oauth/validator.py, a client's token after its signature
  verified), as Kafka's BrokerJwtValidator with jose4j: `exp` and `iat` required; expired
  when now - skew >= exp, not yet valid when now + skew < nbf; `iss`, `sub`, `jti` strings
  when present; `iss` equal to the expected issuer when one is set; `aud` holding one of the
  expected audiences, and no `aud` at all when none is expected (jose4j's default, which
  Kafka keeps).
- The client side (proxy/net/sasl/oauth/login.py, the proxy's own token before it uses it),
  as Kafka's ClientJwtValidator: `exp` required, `iat` optional, nothing against the clock,
  the issuer or the audience (the controller checks those).
- Both: `exp`, `iat` (and on the broker `nbf`) are JSON numbers within `MAX_NUMERIC_DATE`,
  truncated to whole seconds, `exp` and `iat` not negative; the subject claim
  (`sasl.oauthbearer.sub.claim.name`) a string that is not blank, trimmed; the scope claim
  (`sasl.oauthbearer.scope.claim.name`) a string (one scope, as Kafka reads it) or a list of
  them, none blank or repeated.

PyJWT compares the standard claims (exp and nbf against the evaluation time with the skew as
its leeway, iss, aud). It is handed only values this module has already bounded and typed,
because PyJWT takes what jose4j refuses (an integer of any size, an empty `aud` when none is
expected, a null `iss`) and words its refusals its own way; each of its refusals becomes
Kafka's message here, since operators grep logs for those and the tests compare them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt

__all__ = ["MAX_NUMERIC_DATE", "BrokerChecks", "InvalidToken", "TokenClaims", "checked_claims"]

MAX_NUMERIC_DATE = 2**53
"""The bound on the magnitude of `exp`, `iat` and `nbf` (seconds), on both sides: the largest integer a JSON
number carries exactly (I-JSON, RFC 7493), so a float and an integer claim mean the same second; and its
milliseconds (`* 1000`) still fit the signed 64 bits of Kafka's `long` lifetimes and of SaslAuthenticate's
`session_lifetime_ms`, which a larger `exp` would overflow. Any real token is many orders of magnitude below."""

MS_PER_SECOND = 1000
_SHOWN_CHARACTERS = 80
"""How much of a client-chosen value a message repeats: logs stay bounded whatever the token holds."""
_SHOWN_ISSUER = 200

_PYJWT = jwt.PyJWT()
# PyJWT's claim validators are the only part of PyJWT that takes the evaluation time as an argument (its decode
# reads the wall clock), and the broker's time must be the validator's injectable clock, the one Kafka's
# messages name. mypy checks these calls against PyJWT's own annotations, so a rename in PyJWT fails the build.


class InvalidToken(ValueError):
    """The token does not validate; the reason is for the log (a client only learns `invalid_token`)."""


@dataclass(frozen=True)
class BrokerChecks:
    """What only the broker checks, and against what: the evaluation time (whole seconds) and the listener's
    `sasl.oauthbearer.clock.skew.seconds`, `expected.audience` and `expected.issuer`."""

    now: int
    clock_skew_seconds: int
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None


@dataclass(frozen=True)
class TokenClaims:
    """What a token's claims tell either side (Kafka's OAuthBearerToken)."""

    principal_name: str
    expiration: int
    """`exp`, in seconds since the epoch."""
    issued_at: int | None
    """`iat`, in seconds since the epoch, when the token has one."""
    scopes: frozenset[str]

    @property
    def expiry_ms(self) -> int:
        return self.expiration * MS_PER_SECOND

    @property
    def start_ms(self) -> int | None:
        return None if self.issued_at is None else self.issued_at * MS_PER_SECOND


def _number(claims: Mapping[str, Any], name: str) -> int | None:
    """A NumericDate claim as jose4j reads it (a JSON number, truncated to whole seconds), bounded."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or abs(value) >= MAX_NUMERIC_DATE:
        raise InvalidToken(f"Could not extract the '{name}' claim from the access token: not a number")
    return int(value)


def _string_claim(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidToken(f"Could not extract the '{name}' claim from the access token: not a string")
    return value


def _blank_claim(name: str) -> InvalidToken:
    return InvalidToken(f"The value of the OAuth claim {name} must be non-null, non-empty, and non-whitespace")


def _check_time(expiration: int, not_before: int | None, broker: BrokerChecks) -> None:
    now, skew = broker.now, broker.clock_skew_seconds
    try:
        _PYJWT._validate_exp({"exp": expiration}, now, skew)
    except jwt.ExpiredSignatureError:
        raise InvalidToken(
            f"The JWT is no longer valid - the evaluation time {now} is on or after the Expiration Time (exp={expiration}) claim value (allowing {skew} seconds of skew)"
        ) from None
    if not_before is None:
        return
    try:
        _PYJWT._validate_nbf({"nbf": not_before}, now, skew)
    except jwt.ImmatureSignatureError:
        raise InvalidToken(
            f"The JWT is not yet valid as the evaluation time {now} is before the Not Before (nbf={not_before}) claim time (allowing {skew} seconds of skew)"
        ) from None


def _check_issuer(issuer: str | None, expected: str | None) -> None:
    if expected is None:
        return
    if issuer is None:  # absent or null: PyJWT would compare a null with the expected issuer
        raise InvalidToken("No Issuer (iss) claim present.")
    try:
        _PYJWT._validate_iss({"iss": issuer}, expected)
    except jwt.InvalidIssuerError:
        raise InvalidToken(f"Issuer (iss) claim value ({issuer[:_SHOWN_ISSUER]}) doesn't match expected value of {expected}") from None


def _check_audience(audience: Any, expected: tuple[str, ...]) -> None:
    if audience is None:
        if expected:
            raise InvalidToken("No Audience (aud) claim present.")
        return
    values = [audience] if isinstance(audience, str) else audience
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise InvalidToken("Could not extract the 'aud' claim from the access token: not a string or a list of strings")
    if not expected:  # PyJWT would let an empty aud through; jose4j refuses any aud then
        raise InvalidToken("Audience (aud) claim present in the JWT but no expected audience value(s) were provided (set sasl.oauthbearer.expected.audience)")
    try:
        _PYJWT._validate_aud({"aud": values}, list(expected))
    except jwt.InvalidTokenError:  # no match, or an empty list
        raise InvalidToken(f"Audience (aud) claim doesn't contain an acceptable identifier (expected one of {list(expected)})") from None


def _scopes(raw: Any, name: str) -> frozenset[str]:
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    scopes: set[str] = set()
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise _blank_claim(name)
        scope = item.strip()
        if scope in scopes:
            raise InvalidToken(f"{name} value must not contain duplicates - {scope[:_SHOWN_CHARACTERS]} already present")
        scopes.add(scope)
    return frozenset(scopes)


def checked_claims(claims: Mapping[str, Any], *, sub_claim_name: str, scope_claim_name: str, broker: BrokerChecks | None = None) -> TokenClaims:
    """A token's claims as Kafka checks them: on the broker with `broker` (its time, issuer and audience), as
    Kafka's client checks its own token without. InvalidToken with Kafka's message otherwise."""
    expiration = _number(claims, "exp")
    issued_at = _number(claims, "iat")
    not_before = _number(claims, "nbf") if broker is not None else None  # Kafka's client does not read nbf
    if expiration is None:
        # the two validators' own words for the same fact
        raise InvalidToken("No Expiration Time (exp) claim present." if broker is not None else "exp value must be non-null")
    if broker is not None:
        if issued_at is None:
            raise InvalidToken("No Issued At (iat) claim present.")
        _check_time(expiration, not_before, broker)
    if expiration < 0:
        raise InvalidToken(f'exp value must be non-negative; value given was "{expiration}"')
    if issued_at is not None and issued_at < 0:
        raise InvalidToken(f'iat value must be null or non-negative; value given was "{issued_at}"')
    if broker is not None:
        issuer = _string_claim(claims, "iss")
        _string_claim(claims, "sub")
        _string_claim(claims, "jti")
        _check_issuer(issuer, broker.expected_issuer)
        _check_audience(claims.get("aud"), broker.expected_audience)
    subject = claims.get(sub_claim_name)
    if not isinstance(subject, str) or not subject.strip():
        raise _blank_claim(sub_claim_name)
    return TokenClaims(subject.strip(), expiration, issued_at, _scopes(claims.get(scope_claim_name), scope_claim_name))
