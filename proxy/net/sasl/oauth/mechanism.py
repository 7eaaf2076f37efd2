"""SASL/OAUTHBEARER (RFC 7628, KIP-768): its settings, its server side and its client side.

- Server side: a listener's tokens are validated as Kafka's BrokerJwtValidator validates them
  (proxy/net/sasl/oauth/validator.py), against the JWKS at
  `listener.name.<l>.oauthbearer.sasl.oauthbearer.jwks.endpoint.url`. Listeners whose
  validation settings are identical share one JWKS cache; its refresh task runs once, started
  with the first of those listeners. As in Kafka, the listener needs a JAAS login with
  OAuthBearerLoginModule (the property `listener.name.<l>.oauthbearer.sasl.jaas.config`, or the
  JAAS file's `<l>.KafkaServer` / `KafkaServer` entry); its options are not read.
- Client side: the proxy's own login to the controllers with the client-credentials grant
  (proxy/net/sasl/oauth/login.py). The token is fetched on the first login and refreshed
  when it has expired; the principal the controller sees is the token's subject.

Re-authentication (KIP-368) is not done yet: a session lasts as long as its connection.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Mapping

import trio

from proxy.net.sasl.mechanisms import ServerMechanism, jaas_file, jaas_login
from proxy.net.sasl.oauth.exchange import MECHANISM, OAuthBearerServerExchange, attempted_user
from proxy.net.sasl.oauth.jwks import ALLOWED_ALGORITHMS, JwksCache
from proxy.net.sasl.oauth.login import OAuthTokenProvider
from proxy.net.sasl.oauth.settings import (
    CLOCK_SKEW_KEY,
    EXPECTED_AUDIENCE_KEY,
    EXPECTED_ISSUER_KEY,
    JWKS_REFRESH_KEY,
    JWKS_RETRY_BACKOFF_KEY,
    JWKS_RETRY_BACKOFF_MAX_KEY,
    JWKS_URL_KEY,
    SCOPE_CLAIM_KEY,
    SUB_CLAIM_KEY,
    OAuthValidationSettings,
    parse_oauth_login_settings,
    parse_validation_settings,
)
from proxy.net.sasl.oauth.validator import TokenValidator
from proxy.properties import Properties

NAME = MECHANISM


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


class SharedJwks:
    """One JWKS cache for the listeners whose validation settings are identical; `run` refreshes it once however many
    listeners start it (the first one runs the cache, the others wait for its first refresh)."""

    def __init__(self, cache: JwksCache) -> None:
        self.cache = cache
        self._running = False
        self._started = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        if self._running:
            await self._started.wait()
            task_status.started()
            await trio.sleep_forever()
        self._running = True
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.cache.run)
                self._started.set()
                task_status.started()
        finally:
            self._running = False
            self._started = trio.Event()


_SHARED: weakref.WeakKeyDictionary[Properties, dict[OAuthValidationSettings, SharedJwks]] = weakref.WeakKeyDictionary()
"""Per configuration (a Properties), the JWKS caches of its OAUTHBEARER listeners by their settings."""


class OAuthBearerServer(OAuthValidation):
    """A listener's OAUTHBEARER server side (OAuthValidation) whose JWKS cache may be shared with other listeners."""

    def __init__(self, settings: OAuthValidationSettings, shared: SharedJwks, login_source: str) -> None:
        super().__init__(settings, cache=shared.cache)
        self.shared = shared
        self.login_source = login_source

    def effective(self) -> dict[str, object]:
        return {**super().effective(), "oauthbearer.jaas.login": self.login_source}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.shared.run(task_status=task_status)


class OAuthBearer:
    names = (NAME,)

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        """Where KAFKA_OPTS is read (the JAAS file, the URL allow-list); None: the process environment."""

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    def server(self, props: Properties, listener: str, enabled: tuple[str, ...]) -> OAuthBearerServer:
        login = jaas_login(props, listener, NAME, role="server", environ=self.environ)
        settings = parse_validation_settings(props, listener, self.environ)
        caches = _SHARED.setdefault(props, {})
        shared = caches.get(settings)
        if shared is None:
            shared = caches[settings] = SharedJwks(JwksCache.from_settings(settings))
        return OAuthBearerServer(settings, shared, login.source)

    def client(self, props: Properties, listener: str, mechanism: str) -> OAuthTokenProvider:
        parsed, key = jaas_file(props, self.environ)
        return OAuthTokenProvider(parse_oauth_login_settings(props, listener, self.environ, jaas_file=parsed, file_key=key))


OAUTHBEARER = OAuthBearer()

_CHECK_SERVER: type[ServerMechanism] = OAuthBearerServer  # the registry's contract, checked by mypy

__all__ = ["OAUTHBEARER", "OAuthBearer", "OAuthBearerServer", "OAuthValidation", "SharedJwks"]
