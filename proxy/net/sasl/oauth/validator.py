"""OAUTHBEARER on the server side: a client's JWT validated as Kafka's BrokerJwtValidator and jose4j validate it
(KIP-768), over the keys a `KeySource` holds right now (proxy/net/sasl/oauth/jwks.py), so a login never waits for
the network.

What the validator checks:

- at most `max_token_bytes` (64 KiB by default), three non-empty sections;
- the header's `alg` is one of RS256/384/512, PS256/384/512, ES256/384/512:
  `none` and every HMAC algorithm are refused before any key is looked at, so a
  public key is never used as an HMAC secret (PyJWT is only ever asked for the
  token's asymmetric algorithm, and only with an RSA or EC key object);
  a header with `crit` is refused (no critical extension is understood);
- the key (proxy/net/sasl/oauth/jwks.py). None: the token is refused at once and a
  refresh of the JWKS is requested;
- the signature (PyJWT with cryptography);
- `exp` required and `iat` required, numbers; expired when now - skew >= exp,
  not yet valid when now + skew < nbf (`sasl.oauthbearer.clock.skew.seconds`,
  30); exp and iat not negative;
- `aud`: with `sasl.oauthbearer.expected.audience` set it must hold one of those;
  without it, a token that has an `aud` is refused (jose4j's default, which
  Kafka keeps); `iss` must equal `sasl.oauthbearer.expected.issuer` when set;
  `sub`, `iss`, `jti` must be strings when present (jose4j's defaults);
- the subject (`sasl.oauthbearer.sub.claim.name`, `sub`): a string, not blank;
  the principal is `User:<it, trimmed>`;
- the scope (`sasl.oauthbearer.scope.claim.name`, `scope`): a string is one scope
  (as Kafka reads it), a list each; no blank or repeated scope.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import jwt

from proxy.net.sasl.oauth.exchange import ValidatedToken
from proxy.net.sasl.oauth.jwks import ALLOWED_ALGORITHMS, MAX_KID_LENGTH, KeySource, strict_json
from proxy.net.sasl.oauth.settings import OAuthValidationSettings

__all__ = ["InvalidToken", "TokenValidator"]

_MAX_CANDIDATE_KEYS = 16
"""Keys a signature is tried against: a JWKS of many keys without kids cannot make one token cost hundreds."""
_SHOWN_KID = 80


class InvalidToken(ValueError):
    """The token does not validate; the reason is for the log (the client only learns `invalid_token`)."""


def _number(claims: Mapping[str, Any], name: str) -> int | None:
    """A NumericDate claim as jose4j reads it (a JSON number, truncated to whole seconds); InvalidToken otherwise."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or abs(value) >= 2**63:
        raise InvalidToken(f"Could not extract the '{name}' claim from the access token: not a number")
    return int(value)


def _string_claim(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidToken(f"Could not extract the '{name}' claim from the access token: not a string")
    return value


_JWS = jwt.PyJWS(algorithms=list(ALLOWED_ALGORITHMS))  # HMAC and none are not even registered


class TokenValidator:
    """Kafka's broker-side JWT validation over the keys of a `KeySource`. `validate` is synchronous and never waits:
    an unknown key asks the source for a refresh and fails at once."""

    def __init__(self, settings: OAuthValidationSettings, keys: KeySource, *, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.key_source = keys
        self._clock = clock

    def validate(self, token: str) -> ValidatedToken:
        settings = self.settings
        size = len(token)
        if size > settings.max_token_bytes:
            raise InvalidToken(f"the token is {size} bytes, more than the {settings.max_token_bytes} allowed")
        sections = token.split(".")
        if len(sections) != 3 or not all(sections):
            raise InvalidToken("Malformed JWT provided; expected three sections (header, payload, and signature)")
        try:
            header = _JWS.get_unverified_header(token)
        except Exception as exc:  # undecodable base64 or JSON, or a header PyJWT refuses
            raise InvalidToken(f"the JWT header cannot be read: {exc}") from None
        algorithm = header.get("alg")
        if algorithm not in ALLOWED_ALGORITHMS:
            raise InvalidToken(f"the JWT's algorithm {str(algorithm)[:32]!r} is not allowed (allowed: {', '.join(ALLOWED_ALGORITHMS)})")
        assert isinstance(algorithm, str)
        if "crit" in header:
            raise InvalidToken("the JWT header has critical parameters, which are not supported")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the JWT header's kid is not a string")
        payload = self._verified_payload(token, algorithm, kid)
        try:
            claims = strict_json(payload)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidToken(f"the JWT payload is not JSON: {exc}") from None
        if not isinstance(claims, dict):
            raise InvalidToken("the JWT payload is not a JSON object")
        return self._checked(claims)

    def _verified_payload(self, token: str, algorithm: str, kid: str | None) -> bytes:
        source = self.key_source
        candidates = [key for key in source.keys if key.fits(algorithm) and (kid is None or key.kid == kid)]
        if not candidates:
            wanted = "" if kid is None else kid
            requested = len(wanted) <= MAX_KID_LENGTH and source.request_refresh(wanted)
            shown = "no kid" if kid is None else f"kid {kid[:_SHOWN_KID]!r}"
            raise InvalidToken(
                f"Unable to find a suitable verification key for a {algorithm} JWS with {shown} in the JWKS from {source.location}"
                + ("; a refresh of the JWKS was started" if requested else "")
            )
        failure = "the signature does not verify"
        for key in candidates[:_MAX_CANDIDATE_KEYS]:
            try:
                decoded = _JWS.decode_complete(token, key=key.key, algorithms=[algorithm])
            except jwt.InvalidSignatureError:
                continue
            except Exception as exc:  # whatever else PyJWT refuses: the token does not validate
                failure = f"the JWS cannot be verified: {exc}"
                continue
            payload = decoded["payload"]
            assert isinstance(payload, bytes)
            return payload
        raise InvalidToken(failure)

    def _checked(self, claims: Mapping[str, Any]) -> ValidatedToken:
        settings = self.settings
        now = int(self._clock())
        skew = settings.clock_skew_seconds
        expiration = _number(claims, "exp")
        issued_at = _number(claims, "iat")
        not_before = _number(claims, "nbf")
        if expiration is None:
            raise InvalidToken("No Expiration Time (exp) claim present.")
        if issued_at is None:
            raise InvalidToken("No Issued At (iat) claim present.")
        if now - skew >= expiration:
            raise InvalidToken(f"The JWT is no longer valid - the evaluation time {now} is on or after the Expiration Time (exp={expiration}) claim value (allowing {skew} seconds of skew)")
        if not_before is not None and now + skew < not_before:
            raise InvalidToken(f"The JWT is not yet valid as the evaluation time {now} is before the Not Before (nbf={not_before}) claim time (allowing {skew} seconds of skew)")
        if expiration < 0:
            raise InvalidToken(f'exp value must be non-negative; value given was "{expiration}"')
        if issued_at < 0:
            raise InvalidToken(f'iat value must be null or non-negative; value given was "{issued_at}"')
        issuer = _string_claim(claims, "iss")
        _string_claim(claims, "sub")
        _string_claim(claims, "jti")
        if settings.expected_issuer is not None:
            if issuer is None:
                raise InvalidToken("No Issuer (iss) claim present.")
            if issuer != settings.expected_issuer:
                raise InvalidToken(f"Issuer (iss) claim value ({issuer[:200]}) doesn't match expected value of {settings.expected_issuer}")
        self._check_audience(claims.get("aud"))
        subject = claims.get(settings.sub_claim_name)
        if not isinstance(subject, str):
            raise InvalidToken(f"The value of the OAuth claim {settings.sub_claim_name} must be non-null, non-empty, and non-whitespace")
        if not subject.strip():
            raise InvalidToken(f"The value of the OAuth claim {settings.sub_claim_name} must be non-null, non-empty, and non-whitespace")
        scopes = self._scopes(claims.get(settings.scope_claim_name))
        return ValidatedToken(subject.strip(), expiration * 1000, scopes, issued_at * 1000)

    def _check_audience(self, audience: Any) -> None:
        if audience is None:
            if self.settings.expected_audience:
                raise InvalidToken("No Audience (aud) claim present.")
            return
        values = [audience] if isinstance(audience, str) else audience
        if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
            raise InvalidToken("Could not extract the 'aud' claim from the access token: not a string or a list of strings")
        if not any(value in self.settings.expected_audience for value in values):
            if not self.settings.expected_audience:
                raise InvalidToken("Audience (aud) claim present in the JWT but no expected audience value(s) were provided (set sasl.oauthbearer.expected.audience)")
            raise InvalidToken(f"Audience (aud) claim doesn't contain an acceptable identifier (expected one of {list(self.settings.expected_audience)})")

    def _scopes(self, raw: Any) -> frozenset[str]:
        name = self.settings.scope_claim_name
        items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        scopes: set[str] = set()
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise InvalidToken(f"The value of the OAuth claim {name} must be non-null, non-empty, and non-whitespace")
            scope = item.strip()
            if scope in scopes:
                raise InvalidToken(f"{name} value must not contain duplicates - {scope[:80]} already present")
            scopes.add(scope)
        return frozenset(scopes)

