"""The JWKS an OAUTHBEARER listener trusts: its keys parsed as jose4j uses them, and kept fresh as Kafka's
RefreshingHttpsJwks keeps them.

The key for a token: the JWKS keys with the token's `kid` (all keys when it has none),
of the algorithm's type (RSA, or EC on the algorithm's curve), with `use` sig or absent
and `alg` equal or absent; RSA keys of 2048 bits or more, EC keys on P-256/384/521.
Keys the validator cannot use are skipped, as jose4j skips them.

The cache (`JwksCache`): a refresh every `sasl.oauthbearer.jwks.endpoint.refresh.ms`
(1 h), and at once on an unknown kid (Kafka: at most once a minute per kid, 16 kids
remembered, kids over 1000 characters never); each refresh retries with
`sasl.oauthbearer.jwks.endpoint.retry.backoff.ms` (100 ms, doubling: the one
`proxy.backoff.Backoff`) for up to `...retry.backoff.max.ms` (10 s). Each attempt is
bounded (10 s) and size-bounded (1 MiB); an answer that is not a JWK set with at least
one usable signature key counts as a failed attempt, and a failed refresh keeps the
keys the cache had. Expedited refreshes are at least 1 s apart.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from proxy.backoff import Backoff, Retries
from proxy.net.sasl.oauth.http import DEFAULT_TIMEOUT, HttpError, fetch
from proxy.net.sasl.oauth.settings import DEFAULT_MAX_JWKS_BYTES, OAuthValidationSettings

__all__ = [
    "ALLOWED_ALGORITHMS",
    "MAX_KID_LENGTH",
    "JwksCache",
    "JwksError",
    "KeySource",
    "StaticKeys",
    "VerificationKey",
    "parse_jwks",
    "strict_json",
]

log = logging.getLogger(__name__)

ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
_EC_CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
_MIN_RSA_BITS = 2048  # jose4j refuses smaller RSA keys
_MAX_JWKS_KEYS = 256
"""Keys read from one JWK set: a hostile or broken endpoint cannot make every refresh parse millions."""

MISSING_KID_INTERVAL = 60.0
"""Kafka's MISSING_KEY_ID_CACHE_IN_FLIGHT_MS: an unknown kid asks for a refresh at most once in this many seconds."""
MISSING_KID_ENTRIES = 16
MAX_KID_LENGTH = 1000
MIN_EXPEDITE_INTERVAL = 1.0
"""Seconds between the starts of two refreshes asked for by unknown kids (many new kids cost one refresh a second)."""
DEFAULT_REFRESH_INTERVAL = 3600.0
DEFAULT_RETRY_BACKOFF = 0.1
DEFAULT_RETRY_BACKOFF_MAX = 10.0
_MS = 1000
_KIDS_LOGGED = 8


class JwksError(ValueError):
    """A JWKS answer that is not a JWK set with a usable signature key."""


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


def strict_json(data: bytes | str) -> Any:
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
        document = strict_json(data)
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
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
        retry_backoff: float = DEFAULT_RETRY_BACKOFF,
        retry_backoff_max: float = DEFAULT_RETRY_BACKOFF_MAX,
        fetch_timeout: float = DEFAULT_TIMEOUT,
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
            refresh_interval=settings.jwks_refresh_ms / _MS,
            retry_backoff=settings.jwks_retry_backoff_ms / _MS,
            retry_backoff_max=settings.jwks_retry_backoff_max_ms / _MS,
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
            retries = Retries(Backoff.doubling(self.retry_backoff), self.retry_backoff_max, self._clock)
            while True:
                try:
                    keys = await self._attempt()
                except (HttpError, JwksError) as exc:
                    self.last_error = str(exc)
                    wait = retries.failed()
                    if wait is None:
                        break
                    log.debug("JWKS %s: attempt %d failed (%s); next in %.3f s", self.url, retries.failures, exc, wait)
                    await trio.sleep(wait)
                    continue
                for key in keys:
                    if key.kid is not None:
                        self._missing.pop(key.kid, None)
                self._keys = keys
                self.loaded = True
                self.refreshes += 1
                self.last_error = None
                log.info("JWKS %s: %d keys (%s)", self.url, len(keys), ", ".join(str(key.kid) for key in keys[:_KIDS_LOGGED]))
                return True
            self.failed_refreshes += 1
            log.warning("JWKS %s: refresh failed after %d attempts, keeping %d keys: %s", self.url, retries.failures, len(self._keys), self.last_error)
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

