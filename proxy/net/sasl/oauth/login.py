"""The proxy's own OAUTHBEARER login to the controllers: client-credentials tokens, as Kafka's
OAuthBearerLoginCallbackHandler gets them, kept fresh as Kafka's refreshing login keeps them.

Configured as a broker's controller client is configured (proxy/net/sasl/oauth/settings.py reads
each key as `listener.name.<controller listener>.oauthbearer.<key>`, then
`listener.name.<controller listener>.<key>`, then `<key>`)::

    sasl.mechanism.controller.protocol=OAUTHBEARER
    sasl.oauthbearer.token.endpoint.url=https://idp.example.com/realms/kafka/protocol/openid-connect/token
    sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
    listener.name.controller.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \\
        clientId="proxy" clientSecret="proxy-secret" scope="kafka";

A `file:` token endpoint is a file holding the token itself (Kafka's FileJwtRetriever). The
token endpoint URL must be on Kafka 4.x's allow-list (proxy.net.sasl.oauth.settings.allowed_urls).

The request: a POST of `grant_type=client_credentials[&scope=...]` with
`Authorization: Basic base64(clientId:clientSecret)` (each part URL-encoded
first when `sasl.oauthbearer.header.urlencode=true`). Each attempt is bounded by
`sasl.login.connect.timeout.ms` and `sasl.login.read.timeout.ms` (10 s each here;
Kafka waits without limit when they are unset) and the answer by 256 KiB; a
failure is retried with `sasl.login.retry.backoff.ms` (100 ms, doubling) for up to
`sasl.login.retry.backoff.max.ms` (10 s), except for the HTTP statuses Kafka
deems final (400, 401, 403, 404, ...). The token's claims are checked as Kafka's client
checks them (proxy/net/sasl/oauth/claims.py: `exp` and the subject claim required), without
checking the signature: the controller checks it.

Refresh (`OAuthTokenProvider.run`, Kafka's ExpiringCredentialRefreshingLogin):
at `sasl.login.refresh.window.factor` (0.8) plus up to
`sasl.login.refresh.window.jitter` (0.05) of the token's life, but not within
`sasl.login.refresh.buffer.seconds` (300) of its expiry and not sooner than
`sasl.login.refresh.min.period.seconds` (60) from now (both ignored when the
token is too short-lived for them); after a failed refresh, again in 10 s, the
old token still used until it expires.
"""


from __future__ import annotations

import base64
import json
import logging
import random
import ssl
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from proxy.backoff import Backoff, Retries
from proxy.net.sasl.oauth.claims import InvalidToken, checked_claims
from proxy.net.sasl.oauth.exchange import MECHANISM, OAuthBearerClientExchange
from proxy.net.sasl.oauth.http import HttpError, fetch
from proxy.net.sasl.oauth.settings import (
    CONNECT_TIMEOUT_KEY,
    DEFAULT_SCOPE_CLAIM,
    DEFAULT_SUB_CLAIM,
    READ_TIMEOUT_KEY,
    REFRESH_BUFFER_KEY,
    REFRESH_MIN_PERIOD_KEY,
    REFRESH_WINDOW_FACTOR_KEY,
    REFRESH_WINDOW_JITTER_KEY,
    RETRY_BACKOFF_KEY,
    RETRY_BACKOFF_MAX_KEY,
    TOKEN_ENDPOINT_KEY,
    OAuthLoginSettings,
)

__all__ = [
    "UNRETRYABLE_HTTP_CODES",
    "AccessToken",
    "OAuthLoginError",
    "OAuthTokenProvider",
    "next_refresh_ms",
    "parse_access_token",
    "retrieve_token",
]

log = logging.getLogger(__name__)

UNRETRYABLE_HTTP_CODES = frozenset({400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505})
"""Kafka's HttpAccessTokenRetriever does not retry these statuses."""
_SUCCESS = (200, 201)
"""The statuses Kafka's HttpAccessTokenRetriever reads a token from."""

RETRY_AFTER_FAILED_REFRESH = 10.0
"""Kafka's DELAY_SECONDS_BEFORE_NEXT_RETRY_WHEN_RELOGIN_FAILS."""
_MAX_ERROR_TEXT = 300
_MAX_ERROR_CODE_TEXT = 100
_MS = 1000


class OAuthLoginError(Exception):
    """No token: the endpoint could not be reached, refused the client, or answered something that is not a token."""


# --------------------------------------------------------------------------- the token


@dataclass(frozen=True)
class AccessToken:
    """A token from the endpoint, with what Kafka's client reads from it (without checking its signature)."""

    value: str = field(repr=False)
    principal_name: str
    expiry_ms: int
    start_ms: int | None = None
    """`iat` in milliseconds, when the token has one (the start of its life for the refresh schedule)."""
    scopes: frozenset[str] = frozenset()


def parse_access_token(value: str, *, sub_claim_name: str = DEFAULT_SUB_CLAIM, scope_claim_name: str = DEFAULT_SCOPE_CLAIM) -> AccessToken:
    """Kafka's client-side token check (ClientJwtValidator): three sections, a JSON payload, then the claims as
    proxy/net/sasl/oauth/claims.py checks them for a client. The signature is not checked here: the controller checks it."""
    sections = value.split(".")
    if len(sections) != 3 or not sections[0] or not sections[1]:
        raise OAuthLoginError("Malformed JWT provided; expected three sections (header, payload, and signature)")
    try:
        payload = json.loads(base64.urlsafe_b64decode(sections[1] + "=" * (-len(sections[1]) % 4)))
    except (ValueError, RecursionError) as exc:
        raise OAuthLoginError(f"Malformed JWT provided: the payload cannot be read ({type(exc).__name__})") from None
    if not isinstance(payload, dict):
        raise OAuthLoginError("Malformed JWT provided: the payload is not a JSON object")
    try:
        claims = checked_claims(payload, sub_claim_name=sub_claim_name, scope_claim_name=scope_claim_name)
    except InvalidToken as exc:
        raise OAuthLoginError(str(exc)) from None
    return AccessToken(value, claims.principal_name, claims.expiry_ms, claims.start_ms, claims.scopes)


def _authorization(settings: OAuthLoginSettings) -> str:
    client_id, secret = (settings.client_id or "").strip(), (settings.client_secret or "").strip()
    if settings.header_urlencode:
        client_id, secret = urllib.parse.quote_plus(client_id), urllib.parse.quote_plus(secret)
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode("ascii")


def _request_body(scope: str | None) -> bytes:
    body = "grant_type=client_credentials"
    if scope and scope.strip():
        body += "&scope=" + urllib.parse.quote_plus(scope.strip())
    return body.encode("ascii")


def _error_text(body: bytes) -> str:
    """RFC 6749 5.2's error and description, bounded (they carry nothing secret), or the start of the body."""
    try:
        document: Any = json.loads(body)
    except (ValueError, RecursionError):
        document = None
    if isinstance(document, dict) and "error" in document:
        return f"{{{str(document.get('error'))[:_MAX_ERROR_CODE_TEXT]} - {str(document.get('error_description'))[:_MAX_ERROR_TEXT]}}}"
    text = body[:_MAX_ERROR_TEXT].decode("utf-8", "replace").strip()
    return f"{{{text}}}" if text else "{}"


def _access_token_of(body: bytes) -> str:
    try:
        document: Any = json.loads(body)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise OAuthLoginError("the token endpoint's answer is not JSON") from None
    token = document.get("access_token") if isinstance(document, dict) else None
    if not isinstance(token, str) or not token.strip():
        raise OAuthLoginError("The token endpoint response did not contain an access_token value")
    return token.strip()


class _Final(Exception):
    """An answer not worth retrying."""


async def _attempt(settings: OAuthLoginSettings, ssl_context: ssl.SSLContext | None) -> str:
    headers = [
        ("Authorization", _authorization(settings)),
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Cache-Control", "no-cache"),
        ("Accept", "application/json"),
    ]
    response = await fetch(
        settings.token_endpoint_url,
        method="POST",
        headers=headers,
        body=_request_body(settings.scope),
        max_bytes=settings.max_response_bytes,
        connect_timeout=settings.connect_timeout_ms / _MS,
        read_timeout=settings.read_timeout_ms / _MS,
        ssl_context=ssl_context,
    )
    if response.status in _SUCCESS:
        if not response.body:
            raise OAuthLoginError(f"The token endpoint response was unexpectedly empty despite response code {response.status}")
        return _access_token_of(response.body)
    message = f"the token endpoint answered HTTP {response.status} {_error_text(response.body)}"
    if response.status in UNRETRYABLE_HTTP_CODES:
        raise _Final(message)
    raise OAuthLoginError(message)


async def retrieve_token(
    settings: OAuthLoginSettings, *, ssl_context: ssl.SSLContext | None = None, clock: Callable[[], float] = trio.current_time
) -> AccessToken:
    """One token from the endpoint (or the file), with Kafka's retries, checked as Kafka's client checks it;
    OAuthLoginError when there is none."""
    url = settings.token_endpoint_url
    if urllib.parse.urlsplit(url).scheme.lower() == "file":
        try:
            data = await fetch(url, max_bytes=settings.max_response_bytes, read_timeout=settings.read_timeout_ms / _MS)
        except HttpError as exc:
            raise OAuthLoginError(str(exc)) from None
        value = data.body.decode("utf-8", "replace").strip()
        return parse_access_token(value, sub_claim_name=settings.sub_claim_name, scope_claim_name=settings.scope_claim_name)
    retries = Retries(Backoff.doubling(settings.retry_backoff_ms / _MS), settings.retry_backoff_max_ms / _MS, clock)
    while True:
        try:
            value = await _attempt(settings, ssl_context)
            return parse_access_token(value, sub_claim_name=settings.sub_claim_name, scope_claim_name=settings.scope_claim_name)
        except _Final as exc:
            raise OAuthLoginError(f"{exc}; will not attempt further retries") from None
        except (HttpError, OAuthLoginError) as exc:
            wait = retries.failed()
            if wait is None:
                raise OAuthLoginError(f"no token from {settings.token_endpoint_url} after {retries.failures} attempts: {exc}") from None
            log.debug("token endpoint %s: attempt %d failed (%s); next in %.3f s", url, retries.failures, exc, wait)
            await trio.sleep(wait)


def next_refresh_ms(now_ms: int, token: AccessToken, settings: OAuthLoginSettings, rng: random.Random | None = None) -> int:
    """When to fetch the next token, as Kafka's ExpiringCredentialRefreshingLogin.refreshMs decides it."""
    expiry = token.expiry_ms
    if now_ms > expiry:
        return now_ms + int(RETRY_AFTER_FAILED_REFRESH * _MS)
    start = token.start_ms if token.start_ms is not None else now_ms
    fraction = settings.refresh_window_factor + settings.refresh_window_jitter * (rng or random).random()
    min_period_ms = settings.refresh_min_period_seconds * _MS
    buffer_ms = settings.refresh_buffer_seconds * _MS
    if now_ms + min_period_ms + buffer_ms > expiry:
        return now_ms + int((expiry - now_ms) * fraction)
    proposed = start + int((expiry - start) * fraction)
    if proposed > expiry - buffer_ms:
        return expiry - buffer_ms
    if proposed < now_ms + min_period_ms:
        return now_ms + min_period_ms
    return proposed


# --------------------------------------------------------------------------- the provider


class OAuthTokenProvider:
    """The proxy's current token for its controller links.

    `run` (a trio task) fetches one at once, reports started (see `current`/`last_error`), and
    refreshes it on Kafka's schedule; `token()` gives the current one, fetching it when there is
    none or it expired (concurrent callers share one fetch); `wait_for_refresh(generation)`
    returns when a newer token than `generation` is there, which is when the wiring re-authenticates
    its links; `client_exchange()` is the SASL exchange for a link's (re-)authentication."""

    def __init__(
        self,
        settings: OAuthLoginSettings,
        *,
        ssl_context: ssl.SSLContext | None = None,
        wall_clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self._ssl_context = ssl_context
        self._wall_clock = wall_clock
        self._rng = rng or random.Random()
        self._lock = trio.Lock()
        self._changed = trio.Event()
        self.current: AccessToken | None = None
        self.generation = 0
        """How many tokens have been fetched; grows by one with each."""
        self.last_error: str | None = None
        self._refresh_at_ms: int | None = None
        """When `token()` fetches a new one although the current one is still valid (Kafka's refresh schedule)."""

    def _now_ms(self) -> int:
        return int(self._wall_clock() * _MS)

    async def token(self) -> AccessToken:
        """The current token; a new one when there is none or it has expired, and also when Kafka's refresh time
        has passed (so links opened without `run` in a nursery still get a fresh token; the old one is kept while
        it is valid if that refresh fails)."""
        current = self.current
        now = self._now_ms()
        if current is not None and current.expiry_ms > now:
            if self._refresh_at_ms is None or now < self._refresh_at_ms:
                return current
            try:
                return await self.refresh()
            except OAuthLoginError:
                self._refresh_at_ms = now + int(RETRY_AFTER_FAILED_REFRESH * _MS)
                return current
        return await self.refresh()

    async def refresh(self) -> AccessToken:
        """Fetch a new token now (or share one being fetched); OAuthLoginError when there is none."""
        generation = self.generation
        async with self._lock:
            if self.generation != generation and self.current is not None:
                return self.current  # fetched while we waited
            try:
                token = await retrieve_token(self.settings, ssl_context=self._ssl_context)
            except OAuthLoginError as exc:
                self.last_error = str(exc)
                raise
            self.current = token
            self._refresh_at_ms = next_refresh_ms(self._now_ms(), token, self.settings, self._rng)
            self.generation += 1
            self.last_error = None
            self._changed.set()
            self._changed = trio.Event()
            lifetime = (token.expiry_ms - self._now_ms()) / _MS
            log.info("OAUTHBEARER token for %s (principal %s) valid for %.0f s", self.settings.token_endpoint_url, token.principal_name, lifetime)
            return token

    async def wait_for_refresh(self, generation: int) -> AccessToken:
        """The first token newer than `generation` (pass `self.generation` of the token in use)."""
        while self.generation <= generation or self.current is None:
            await self._changed.wait()
        return self.current

    async def client_exchange(self) -> OAuthBearerClientExchange:
        """A SASL exchange with the current token (fetched first if needed): `proxy.net.sasl.client.ClientExchange`."""
        token = await self.token()
        return OAuthBearerClientExchange(token.value, extensions=self.settings.extensions)

    # the registry's client side of a mechanism (mechanism, user, effective, exchange)

    @property
    def mechanism(self) -> str:
        return MECHANISM

    @property
    def user(self) -> str | None:
        """The principal name the controller will derive (the token's subject); None until a token was fetched."""
        return None if self.current is None else self.current.principal_name

    def effective(self) -> dict[str, object]:
        settings = self.settings
        return {
            "sasl.mechanism.controller.protocol": MECHANISM,
            TOKEN_ENDPOINT_KEY: settings.token_endpoint_url,
            "clientId": settings.client_id,
            "clientSecret": None if settings.client_secret is None else "[hidden]",
            "scope": settings.scope,
            "extensions": sorted(settings.extensions),
            REFRESH_WINDOW_FACTOR_KEY: settings.refresh_window_factor,
            REFRESH_WINDOW_JITTER_KEY: settings.refresh_window_jitter,
            REFRESH_MIN_PERIOD_KEY: settings.refresh_min_period_seconds,
            REFRESH_BUFFER_KEY: settings.refresh_buffer_seconds,
            RETRY_BACKOFF_KEY: settings.retry_backoff_ms,
            RETRY_BACKOFF_MAX_KEY: settings.retry_backoff_max_ms,
            CONNECT_TIMEOUT_KEY: settings.connect_timeout_ms,
            READ_TIMEOUT_KEY: settings.read_timeout_ms,
        }

    async def exchange(self, server_host: str) -> OAuthBearerClientExchange:
        return await self.client_exchange()

    def _delay(self, failed: bool) -> float:
        current = self.current
        now = self._now_ms()
        if failed or current is None or current.expiry_ms <= now:
            return RETRY_AFTER_FAILED_REFRESH
        return max(0.0, (next_refresh_ms(now, current, self.settings, self._rng) - now) / _MS)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        failed = False
        try:
            await self.refresh()
        except OAuthLoginError as exc:
            failed = True
            log.warning("OAUTHBEARER login: %s", exc)
        task_status.started()
        while True:
            await trio.sleep(self._delay(failed))
            try:
                await self.refresh()
                failed = False
            except OAuthLoginError as exc:
                failed = True
                log.warning("OAUTHBEARER login: refresh failed, trying again in %.0f s: %s", RETRY_AFTER_FAILED_REFRESH, exc)

