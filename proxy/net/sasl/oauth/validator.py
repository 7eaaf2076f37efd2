"""OAUTHBEARER on the server side: JWT validation as Kafka's broker validates (KIP-768), and the JWKS it trusts.

Three parts, each usable alone:

- `parse_validation_settings`: Kafka 4.x's keys and defaults for a listener,
  looked up as Kafka looks them up (`listener.name.<l>.oauthbearer.<key>`, then
  `listener.name.<l>.<key>`, then `<key>`), and the URL allow-list;
- `TokenValidator`: pure and synchronous, over the keys a `KeySource` holds
  right now, so a login never waits for the network;
- `JwksCache`: a `KeySource` that a trio task keeps fresh from the
  `sasl.oauthbearer.jwks.endpoint.url` (http, https or file).

What the validator checks, as Kafka's BrokerJwtValidator and jose4j do:

- at most `max_token_bytes` (64 KiB by default), three non-empty sections;
- the header's `alg` is one of RS256/384/512, PS256/384/512, ES256/384/512:
  `none` and every HMAC algorithm are refused before any key is looked at, so a
  public key is never used as an HMAC secret (PyJWT is only ever asked for the
  token's asymmetric algorithm, and only with an RSA or EC key object);
  a header with `crit` is refused (no critical extension is understood);
- the key: the JWKS keys with the token's `kid` (all keys when it has none), of
  the algorithm's type (RSA, or EC on the algorithm's curve), with `use` sig or
  absent and `alg` equal or absent. None: the token is refused at once and a
  refresh of the JWKS is requested (Kafka: at most once a minute per kid, 16
  kids remembered, kids over 1000 characters never);
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

The JWKS cache, as Kafka's RefreshingHttpsJwks: a refresh every
`sasl.oauthbearer.jwks.endpoint.refresh.ms` (1 h), and at once on an unknown
kid; each refresh retries with `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`
(100 ms, doubling) for up to `...retry.backoff.max.ms` (10 s). Each attempt is
bounded (10 s) and size-bounded (1 MiB); an answer that is not a JWK set with at
least one usable signature key counts as a failed attempt, and a failed refresh
keeps the keys the cache had. Expedited refreshes are at least 1 s apart.

The allow-list (Kafka 4.x, `org.apache.kafka.sasl.oauthbearer.allowed.urls`): a
comma-separated list of URLs, each compared with the configured URL exactly
(after trimming); empty by default, so no URL is allowed until it is listed. The
proxy reads it from its own key of that name, which wins when present, else from
`-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=...` in KAFKA_OPTS (the last
one), as a broker's JVM would see it. A URL that is not listed is a
configuration error naming its key: the proxy never contacts it.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import jwt
import trio
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from proxy.backoff import Backoff
from proxy.net.sasl.jaas import KAFKA_OPTS, java_system_properties
from proxy.net.sasl.oauth.exchange import MECHANISM, OAuthBearerServerExchange, ValidatedToken, attempted_user
from proxy.net.sasl.oauth.http import HttpError, fetch, file_url_path
from proxy.properties import ConfigError, Properties, scoped

__all__ = [
    "ALLOWED_ALGORITHMS",
    "ALLOWED_URLS_PROPERTY",
    "CLOCK_SKEW_KEY",
    "EXPECTED_AUDIENCE_KEY",
    "EXPECTED_ISSUER_KEY",
    "JWKS_REFRESH_KEY",
    "JWKS_RETRY_BACKOFF_KEY",
    "JWKS_RETRY_BACKOFF_MAX_KEY",
    "JWKS_URL_KEY",
    "SCOPE_CLAIM_KEY",
    "SERVER_CALLBACK_HANDLER_KEY",
    "SUB_CLAIM_KEY",
    "AllowedUrls",
    "InvalidToken",
    "JwksCache",
    "JwksError",
    "KeySource",
    "OAuthValidation",
    "OAuthValidationSettings",
    "StaticKeys",
    "TokenValidator",
    "VerificationKey",
    "allowed_urls",
    "check_url",
    "oauth_value",
    "parse_jwks",
    "parse_validation_settings",
]

log = logging.getLogger(__name__)

JWKS_URL_KEY = "sasl.oauthbearer.jwks.endpoint.url"
JWKS_REFRESH_KEY = "sasl.oauthbearer.jwks.endpoint.refresh.ms"
JWKS_RETRY_BACKOFF_KEY = "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"
JWKS_RETRY_BACKOFF_MAX_KEY = "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"
EXPECTED_AUDIENCE_KEY = "sasl.oauthbearer.expected.audience"
EXPECTED_ISSUER_KEY = "sasl.oauthbearer.expected.issuer"
SUB_CLAIM_KEY = "sasl.oauthbearer.sub.claim.name"
SCOPE_CLAIM_KEY = "sasl.oauthbearer.scope.claim.name"
CLOCK_SKEW_KEY = "sasl.oauthbearer.clock.skew.seconds"
SERVER_CALLBACK_HANDLER_KEY = "sasl.server.callback.handler.class"
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
"""Kafka 4.x's JVM system property, and the proxy's key of the same name (which wins)."""

VALIDATOR_CALLBACK_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",  # Kafka 3.x's name
)

ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
_EC_CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
_MIN_RSA_BITS = 2048  # jose4j refuses smaller RSA keys
_MAX_CANDIDATE_KEYS = 16
_MAX_JWKS_KEYS = 256

DEFAULT_MAX_TOKEN_BYTES = 64 * 1024
DEFAULT_MAX_JWKS_BYTES = 1 << 20
DEFAULT_FETCH_TIMEOUT = 10.0
MISSING_KID_INTERVAL = 60.0
"""Kafka's MISSING_KEY_ID_CACHE_IN_FLIGHT_MS: an unknown kid asks for a refresh at most once in this many seconds."""
MISSING_KID_ENTRIES = 16
MAX_KID_LENGTH = 1000
MIN_EXPEDITE_INTERVAL = 1.0
"""Seconds between the starts of two refreshes asked for by unknown kids (many new kids cost one refresh a second)."""


class InvalidToken(ValueError):
    """The token does not validate; the reason is for the log (the client only learns `invalid_token`)."""


class JwksError(ValueError):
    """A JWKS answer that is not a JWK set with a usable signature key."""


# --------------------------------------------------------------------------- settings


def _raw(props: Properties | Mapping[str, str]) -> Mapping[str, str]:
    if isinstance(props, Properties):
        return props.raw
    return {key.strip(): value.strip() for key, value in props.items()}


def oauth_value(props: Properties | Mapping[str, str], listener: str | None, key: str) -> tuple[str, str | None]:
    """Kafka's lookup of an OAUTHBEARER setting for a listener: `listener.name.<l>.oauthbearer.<key>`, then
    `listener.name.<l>.<key>`, then `<key>` (a bare `oauthbearer.<key>` is ignored, as Kafka ignores it).
    Returns the key that was read (the last one tried when none is set) and its value."""
    return scoped(_raw(props), key, listener=listener, mechanism="OAUTHBEARER")


def _int(props: Properties | Mapping[str, str], listener: str | None, key: str, default: int, minimum: int) -> int:
    name, text = oauth_value(props, listener, key)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(name, text, "expected an integer") from None
    if value < minimum:
        raise ConfigError(name, text, f"must be at least {minimum}")
    return value


@dataclass(frozen=True)
class AllowedUrls:
    """Kafka 4.x's allow-list of OAUTHBEARER endpoint URLs, and where it was read (for messages)."""

    urls: frozenset[str]
    source: str

    def allows(self, url: str) -> bool:
        return url in self.urls


def allowed_urls(props: Properties | Mapping[str, str], environ: Mapping[str, str]) -> AllowedUrls:
    """The proxy key `org.apache.kafka.sasl.oauthbearer.allowed.urls` when present (even empty), else the `-D` of
    that name in KAFKA_OPTS (the last one), else Kafka 4.x's default: nothing allowed."""
    raw = _raw(props)
    if ALLOWED_URLS_PROPERTY in raw:
        text, source = raw[ALLOWED_URLS_PROPERTY], f"the key {ALLOWED_URLS_PROPERTY}"
    else:
        system = java_system_properties(environ)
        if ALLOWED_URLS_PROPERTY not in system:
            return AllowedUrls(frozenset(), f"neither the key {ALLOWED_URLS_PROPERTY} nor -D{ALLOWED_URLS_PROPERTY} in {KAFKA_OPTS} is set")
        text, source = system[ALLOWED_URLS_PROPERTY], f"-D{ALLOWED_URLS_PROPERTY} in {KAFKA_OPTS}"
    return AllowedUrls(frozenset(item.strip() for item in text.split(",")), source)


def check_url(key: str, url: str, allowed: AllowedUrls) -> str:
    """Kafka's `validateUrl`: a well-formed http, https or file URL that the allow-list names exactly; ConfigError
    naming the key otherwise."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ConfigError(key, url, f"the URL is malformed: {exc}") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise ConfigError(key, url, "the URL is malformed: no protocol")
    if scheme not in ("http", "https", "file"):
        raise ConfigError(key, url, f'the URL contains an invalid protocol ({parts.scheme}); only "http", "https", and "file" protocol are supported')
    if scheme == "file":
        try:
            file_url_path(url)
        except ValueError as exc:
            raise ConfigError(key, url, f"the URL is malformed: {exc}") from None
    elif not parts.hostname:
        raise ConfigError(key, url, "the URL is malformed: no host")
    if not allowed.allows(url):
        raise ConfigError(
            key,
            url,
            f"{url} is not allowed. Update system property '{ALLOWED_URLS_PROPERTY}' to allow {url} "
            f"(Kafka 4.x contacts only the URLs listed there; the proxy reads {allowed.source})",
        )
    return url


@dataclass(frozen=True)
class OAuthValidationSettings:
    """One listener's OAUTHBEARER validation, with Kafka 4.3's defaults."""

    jwks_endpoint_url: str
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    sub_claim_name: str = "sub"
    scope_claim_name: str = "scope"
    clock_skew_seconds: int = 30
    jwks_refresh_ms: int = 3_600_000
    jwks_retry_backoff_ms: int = 100
    jwks_retry_backoff_max_ms: int = 10_000
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES
    max_jwks_bytes: int = DEFAULT_MAX_JWKS_BYTES
    jwks_fetch_timeout: float = DEFAULT_FETCH_TIMEOUT
    jwks_url_key: str = field(default=JWKS_URL_KEY, compare=False)
    """The key the URL was read from, for messages."""


def parse_validation_settings(
    props: Properties | Mapping[str, str], listener: str | None, environ: Mapping[str, str] | None = None
) -> OAuthValidationSettings:
    """A listener's OAUTHBEARER validation settings, or ConfigError naming key, value and reason.

    `environ` is where KAFKA_OPTS is read for the allow-list (pass os.environ; None reads nothing)."""
    handler_key, handler = oauth_value(props, listener, SERVER_CALLBACK_HANDLER_KEY)
    if handler and handler not in VALIDATOR_CALLBACK_HANDLERS:
        raise ConfigError(handler_key, handler, f"the proxy validates OAUTHBEARER tokens only as {VALIDATOR_CALLBACK_HANDLERS[0]} does")
    url_key, url = oauth_value(props, listener, JWKS_URL_KEY)
    if not url:
        raise ConfigError(
            url_key,
            url,
            f"listener {listener} enables OAUTHBEARER, which needs a JWKS to validate tokens with (Kafka's unsecured validator, "
            "which checks no signature, is not offered)",
        )
    check_url(url_key, url, allowed_urls(props, environ or {}))
    _, audience_text = oauth_value(props, listener, EXPECTED_AUDIENCE_KEY)
    audience = tuple(dict.fromkeys(item.strip() for item in (audience_text or "").split(",") if item.strip()))
    _, issuer = oauth_value(props, listener, EXPECTED_ISSUER_KEY)
    claims: dict[str, str] = {}
    for key, default in ((SUB_CLAIM_KEY, "sub"), (SCOPE_CLAIM_KEY, "scope")):
        name, value = oauth_value(props, listener, key)
        if value is not None and not value.strip():
            raise ConfigError(name, value, "The value of the OAuth claim name must be non-null, non-empty, and non-whitespace")
        claims[key] = value.strip() if value is not None else default
    backoff = _int(props, listener, JWKS_RETRY_BACKOFF_KEY, 100, 0)
    backoff_max = _int(props, listener, JWKS_RETRY_BACKOFF_MAX_KEY, 10_000, 0)
    if backoff_max < backoff:
        name, text = oauth_value(props, listener, JWKS_RETRY_BACKOFF_MAX_KEY)
        raise ConfigError(name, text, f"must not be less than {JWKS_RETRY_BACKOFF_KEY} ({backoff})")
    return OAuthValidationSettings(
        jwks_endpoint_url=url,
        expected_audience=audience,
        expected_issuer=issuer or None,
        sub_claim_name=claims[SUB_CLAIM_KEY],
        scope_claim_name=claims[SCOPE_CLAIM_KEY],
        clock_skew_seconds=_int(props, listener, CLOCK_SKEW_KEY, 30, 0),
        jwks_refresh_ms=_int(props, listener, JWKS_REFRESH_KEY, 3_600_000, 1),
        jwks_retry_backoff_ms=backoff,
        jwks_retry_backoff_max_ms=backoff_max,
        jwks_url_key=url_key,
    )


# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class VerificationKey:
    """One public key of the JWKS, as the validator uses it."""

    kid: str | None
    kty: str  # "RSA" or "EC"
    key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey = field(repr=False, compare=False)
    alg: str | None = None
    curve: str | None = None  # cryptography's curve name for EC keys (secp256r1, ...)

    def fits(self, algorithm: str) -> bool:
        """Whether this key may verify a signature made with `algorithm`."""
        if self.alg is not None and self.alg != algorithm:
            return False
        if algorithm.startswith(("RS", "PS")):
            return self.kty == "RSA"
        return self.kty == "EC" and _EC_CURVES.get(algorithm) == self.curve


_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(data: bytes | str) -> Any:
    """json.loads without NaN/Infinity; ValueError (deep nesting included) for anything that is not JSON."""
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _key_of(entry: Mapping[str, Any]) -> VerificationKey | None:
    """One JWK as a verification key; None for a key the validator cannot use (encryption, symmetric, unknown type,
    an algorithm outside the allow-list, RSA under 2048 bits, a curve other than P-256/384/521, broken members)."""
    kty, use, alg, kid = entry.get("kty"), entry.get("use"), entry.get("alg"), entry.get("kid")
    if use not in (None, "sig") or kty not in ("RSA", "EC") or (kid is not None and not isinstance(kid, str)):
        return None
    if alg is not None and alg not in ALLOWED_ALGORITHMS:
        return None
    public = {name: value for name, value in entry.items() if name not in _PRIVATE_MEMBERS}
    try:
        if kty == "RSA":
            key = RSAAlgorithm.from_jwk(public)
            if not isinstance(key, rsa.RSAPublicKey) or key.key_size < _MIN_RSA_BITS:
                return None
            return VerificationKey(kid, "RSA", key, alg)
        key_ec = ECAlgorithm.from_jwk(public)
        if not isinstance(key_ec, ec.EllipticCurvePublicKey) or key_ec.curve.name not in _EC_CURVES.values():
            return None
        return VerificationKey(kid, "EC", key_ec, alg, key_ec.curve.name)
    except Exception:  # a member of the wrong type or encoding: this key is unusable, the others may not be
        return None


def parse_jwks(data: bytes) -> tuple[VerificationKey, ...]:
    """The usable signature keys of a JWK set (RFC 7517), skipping keys the validator cannot use, as jose4j skips
    them; JwksError when the document is not a JWK set or holds no usable key."""
    try:
        document = _loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise JwksError(f"not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksError('not a JWK set (no "keys" list)')
    keys = tuple(key for key in (_key_of(entry) for entry in document["keys"][:_MAX_JWKS_KEYS] if isinstance(entry, dict)) if key is not None)
    if not keys:
        raise JwksError(f"no usable signature key among its {len(document['keys'])} keys (RSA of 2048+ bits or EC P-256/384/521, use sig)")
    return keys


class KeySource(Protocol):
    """Where the validator finds keys: what is there now, and a way to ask for fresher ones without waiting."""

    @property
    def keys(self) -> tuple[VerificationKey, ...]: ...

    @property
    def location(self) -> str: ...

    def request_refresh(self, kid: str) -> bool:
        """Ask for a refresh because `kid` is unknown; True when one was scheduled. Never blocks."""
        ...


class StaticKeys:
    """A fixed key set (tests, fuzzing); records the kids a refresh was asked for."""

    def __init__(self, keys: Sequence[VerificationKey], location: str = "static keys") -> None:
        self._keys = tuple(keys)
        self._location = location
        self.requested: list[str] = []

    @property
    def keys(self) -> tuple[VerificationKey, ...]:
        return self._keys

    @property
    def location(self) -> str:
        return self._location

    def request_refresh(self, kid: str) -> bool:
        self.requested.append(kid)
        return False


# --------------------------------------------------------------------------- the validator


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
            claims = _loads(payload)
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
            shown = "no kid" if kid is None else f"kid {kid[:80]!r}"
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


# --------------------------------------------------------------------------- the JWKS cache


class JwksCache:
    """The JWKS of one endpoint, kept fresh by `run` (a trio task): a `KeySource` for `TokenValidator`.

    Until the first successful refresh it holds no keys, so every token is refused (and asks
    for a refresh). `request_refresh` is synchronous and rate-limited as Kafka's
    `maybeExpediteRefresh`; the refresh itself happens in `run`'s task, so a slow or hung
    endpoint never delays a login: logins use the keys already there."""

    def __init__(
        self,
        url: str,
        *,
        refresh_interval: float = 3600.0,
        retry_backoff: float = 0.1,
        retry_backoff_max: float = 10.0,
        fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_JWKS_BYTES,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self.url = url
        self.refresh_interval = refresh_interval
        self.retry_backoff = retry_backoff
        self.retry_backoff_max = retry_backoff_max
        self.fetch_timeout = fetch_timeout
        self.max_bytes = max_bytes
        self._ssl_context = ssl_context
        self._clock = clock
        self._keys: tuple[VerificationKey, ...] = ()
        self._missing: OrderedDict[str, float] = OrderedDict()
        self._wake = trio.Event()
        self._refreshing = False
        self.loaded = False
        """True once a refresh has succeeded."""
        self.refreshes = 0
        """Refreshes that succeeded."""
        self.failed_refreshes = 0
        self.last_error: str | None = None

    @classmethod
    def from_settings(cls, settings: OAuthValidationSettings, *, ssl_context: ssl.SSLContext | None = None) -> JwksCache:
        return cls(
            settings.jwks_endpoint_url,
            refresh_interval=settings.jwks_refresh_ms / 1000,
            retry_backoff=settings.jwks_retry_backoff_ms / 1000,
            retry_backoff_max=settings.jwks_retry_backoff_max_ms / 1000,
            fetch_timeout=settings.jwks_fetch_timeout,
            max_bytes=settings.max_jwks_bytes,
            ssl_context=ssl_context,
        )

    @property
    def keys(self) -> tuple[VerificationKey, ...]:
        return self._keys

    @property
    def location(self) -> str:
        return self.url

    @property
    def refreshing(self) -> bool:
        return self._refreshing

    def request_refresh(self, kid: str) -> bool:
        if len(kid) > MAX_KID_LENGTH:
            log.warning("JWKS %s: a key id of %d characters is too long to look up", self.url, len(kid))
            return False
        now = self._clock()
        next_check = self._missing.get(kid)
        if next_check is not None and next_check > now:
            self._missing.move_to_end(kid)
            return False
        self._missing[kid] = now + MISSING_KID_INTERVAL
        self._missing.move_to_end(kid)
        while len(self._missing) > MISSING_KID_ENTRIES:
            self._missing.popitem(last=False)
        self._wake.set()
        return True

    async def _attempt(self) -> tuple[VerificationKey, ...]:
        response = await fetch(
            self.url, max_bytes=self.max_bytes, connect_timeout=self.fetch_timeout, read_timeout=self.fetch_timeout, ssl_context=self._ssl_context
        )
        if response.status != 200:
            raise HttpError(f"{self.url}: HTTP {response.status}")
        return parse_jwks(response.body)

    async def refresh(self) -> bool:
        """One refresh with Kafka's retries (backoff doubling from `retry_backoff`, for at most `retry_backoff_max`);
        True when the keys were replaced. A failure keeps the keys there were."""
        self._refreshing = True
        try:
            end = self._clock() + self.retry_backoff_max
            attempt = 0
            while True:
                attempt += 1
                try:
                    keys = await self._attempt()
                except (HttpError, JwksError) as exc:
                    self.last_error = str(exc)
                    wait = min(Backoff.doubling(self.retry_backoff).delay(attempt), end - self._clock())
                    if wait <= 0:
                        break
                    log.debug("JWKS %s: attempt %d failed (%s); next in %.3f s", self.url, attempt, exc, wait)
                    await trio.sleep(wait)
                    continue
                for key in keys:
                    if key.kid is not None:
                        self._missing.pop(key.kid, None)
                self._keys = keys
                self.loaded = True
                self.refreshes += 1
                self.last_error = None
                log.info("JWKS %s: %d keys (%s)", self.url, len(keys), ", ".join(str(key.kid) for key in keys[:8]))
                return True
            self.failed_refreshes += 1
            log.warning("JWKS %s: refresh failed after %d attempts, keeping %d keys: %s", self.url, attempt, len(self._keys), self.last_error)
            return False
        finally:
            self._refreshing = False

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Refresh now, report started (whether or not the keys could be read: see `loaded`), then on schedule and
        whenever an unknown kid asks; runs until cancelled."""
        self._wake = trio.Event()
        await self.refresh()
        task_status.started()
        next_scheduled = self._clock() + self.refresh_interval
        last_start = -math.inf
        while True:
            with trio.move_on_at(next_scheduled):
                await self._wake.wait()
            if self._wake.is_set():
                self._wake = trio.Event()
                await trio.sleep_until(max(self._clock(), last_start + MIN_EXPEDITE_INTERVAL))
            else:
                next_scheduled += self.refresh_interval  # at a fixed rate, as Kafka's scheduleAtFixedRate
            last_start = self._clock()
            await self.refresh()
            if next_scheduled <= self._clock():
                next_scheduled = self._clock() + self.refresh_interval


# --------------------------------------------------------------------------- one listener's OAUTHBEARER, assembled


class OAuthValidation:
    """A listener's OAUTHBEARER server side: the settings, the JWKS cache (run `run` in a nursery) and the validator.

    Shaped as the registry's server side of a mechanism: `exchange(mechanism)` gives a fresh
    `ServerExchange` per login (`reauthentication=True` words a malformed message as Kafka does
    during a re-authentication), `attempted_user` reads who a failed login claimed to be,
    `effective` is what check-config shows, and `run` keeps the keys fresh (started once the
    first refresh has been tried: see `cache.loaded`)."""

    def __init__(self, settings: OAuthValidationSettings, *, cache: JwksCache | None = None, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.cache = cache if cache is not None else JwksCache.from_settings(settings)
        self.validator = TokenValidator(settings, self.cache, clock=clock)

    @classmethod
    def from_properties(cls, props: Properties | Mapping[str, str], listener: str, environ: Mapping[str, str] | None = None) -> OAuthValidation:
        return cls(parse_validation_settings(props, listener, environ))

    def exchange(self, mechanism: str = MECHANISM, *, reauthentication: bool = False) -> OAuthBearerServerExchange:
        return OAuthBearerServerExchange(self.validator, reauthentication=reauthentication)

    def attempted_user(self, mechanism: str, first_token: bytes) -> str | None:
        return attempted_user(first_token)

    def effective(self) -> dict[str, object]:
        settings = self.settings
        return {
            JWKS_URL_KEY: settings.jwks_endpoint_url,
            EXPECTED_AUDIENCE_KEY: list(settings.expected_audience),
            EXPECTED_ISSUER_KEY: settings.expected_issuer,
            SUB_CLAIM_KEY: settings.sub_claim_name,
            SCOPE_CLAIM_KEY: settings.scope_claim_name,
            CLOCK_SKEW_KEY: settings.clock_skew_seconds,
            JWKS_REFRESH_KEY: settings.jwks_refresh_ms,
            JWKS_RETRY_BACKOFF_KEY: settings.jwks_retry_backoff_ms,
            JWKS_RETRY_BACKOFF_MAX_KEY: settings.jwks_retry_backoff_max_ms,
            "oauthbearer.algorithms": list(ALLOWED_ALGORITHMS),
        }

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.cache.run(task_status=task_status)
