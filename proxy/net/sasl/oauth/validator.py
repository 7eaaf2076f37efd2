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
- the claims (proxy/net/sasl/oauth/claims.py, the broker's checks: exp, iat, nbf with
  `sasl.oauthbearer.clock.skew.seconds`, iss, aud, the subject and the scope); the
  principal is `User:<the subject claim, trimmed>`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import jwt

from proxy.net.sasl.oauth.claims import BrokerChecks, InvalidToken, checked_claims
from proxy.net.sasl.oauth.exchange import ValidatedToken
from proxy.net.sasl.oauth.jwks import ALLOWED_ALGORITHMS, MAX_KID_LENGTH, KeySource, strict_json
from proxy.net.sasl.oauth.settings import OAuthValidationSettings

__all__ = ["InvalidToken", "TokenValidator"]

_MAX_CANDIDATE_KEYS = 16
"""Keys a signature is tried against: a JWKS of many keys without kids cannot make one token cost hundreds."""
_SHOWN_KID = 80


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
        broker = BrokerChecks(int(self._clock()), settings.clock_skew_seconds, settings.expected_audience, settings.expected_issuer)
        checked = checked_claims(claims, sub_claim_name=settings.sub_claim_name, scope_claim_name=settings.scope_claim_name, broker=broker)
        return ValidatedToken(checked.principal_name, checked.expiry_ms, checked.scopes, checked.start_ms)
