"""The upstream's delegation tokens, mirrored for the SCRAM listeners' token logins (`tokenauth=true`).

A Kafka broker learns each token from the metadata log. The proxy asks the read upstream (a broker listener, or
the embedded controller) DescribeDelegationToken for every owner under its own identity, every
`edge.token.refresh.ms`, at once after a token change it forwarded, and as soon as it sees that another process on
its port (`socket.reuse.port`) forwarded one: it stats the file of the shared token generation (proxy/forward/edge_authz.py
`SharedGeneration`) every `GENERATION_WATCH_SECONDS`. So a token created, renewed or expired through any broker is
seen within that period (plus one request's time), one made through this process at once, and one made through
another process on the port within 50 ms plus one request's time. The proxy's principal must be able to describe
every token (a super user, or DESCRIBE_TOKENS on the owners); a token it cannot see cannot log in. When the upstream
cannot answer, or answers an error, no token logs in until it answers again (fail closed: an expiry made meanwhile
must not be missed).
"""

import logging
from collections.abc import Iterable

import trio
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey
from envelope.responses import error_name
from proxy.forward.edge_authz import SharedGeneration
from proxy.forward.reads import NotServed, ReadPath, ReadUnavailable
from proxy.net.sasl.scram_mechanism import ScramServerSide
from proxy.net.sasl.token_cache import TokenCache, TokenInfo
from proxy.net.settings import ListenerConfig

log = logging.getLogger(__name__)

_TOKENS_DISABLED = "delegation tokens disabled on the cluster"

DESCRIBE_VERSION = 3
"""The newest DescribeDelegationToken Kafka 4.3 serves; upstream_call steps down to what the upstream speaks."""

GENERATION_WATCH_SECONDS = 0.05
"""How often the shared token generation is checked while a generation file is shared (without one, nothing is
watched): one stat and one wake-up of the event loop, 20 a second. A wake-up measured about 250 µs of CPU on the
loaded 2-core VM of docs/performance.md (a bare `trio.sleep` loop costs the same there), so about 0.5% of a core
per process; off the request path."""


def token_caches(listeners: Iterable[ListenerConfig]) -> list[TokenCache]:
    """The token cache of every listener that serves SCRAM."""
    servers = {server for listener in listeners for server in listener.sasl_servers.values() if isinstance(server, ScramServerSide)}
    return [server.tokens for server in servers]


class TokenMirror:
    def __init__(self, path: ReadPath, refresh_seconds: float) -> None:
        self.path = path
        self.refresh_seconds = refresh_seconds
        self.caches: list[TokenCache] = []
        self.refreshes = 0
        self._failing: str | None = None
        """Why the last refresh failed; None after a success."""
        self._poked = trio.Event()
        self._refreshing = trio.Lock()
        self._loaded: tuple[int, int, int, int] | None = None
        """The generation the caches were last filled at (read before that refresh began)."""

    @property
    def generation(self) -> SharedGeneration:
        """The token generation shared by the processes on the port (held by the edge authorizer with the ACL one)."""
        return self.path.edge.token_generation

    def poke(self) -> None:
        """A token changed through the proxy: refresh now rather than at the next period, and tell the other processes."""
        self.generation.bump()
        self._poked.set()

    async def refresh(self) -> bool:
        """One snapshot of the upstream's tokens into every cache; False (and every cache emptied) when it failed."""
        try:
            response = await self.path.upstream_call(ApiKey.DESCRIBE_DELEGATION_TOKEN, DESCRIBE_VERSION, {"owners": None})
        except ReadUnavailable as exc:
            return self._failed(str(exc), advise=isinstance(exc, NotServed))
        code = int(response.error_code)
        if code == ErrorCode.delegation_token_auth_disabled:
            # Not a failure of the proxy's: the cluster has no delegation.token.secret.key, so no token exists and a
            # token login is refused as the cluster's brokers refuse it. Said once, at INFO.
            if self._failing != _TOKENS_DISABLED:
                log.info("delegation tokens are disabled on the cluster (%s answered DELEGATION_TOKEN_AUTH_DISABLED, error %d): token logins are refused", self.path.upstream.settings.address, code)
            self._failing = _TOKENS_DISABLED
            for cache in self.caches:
                cache.clear()
            return False
        if code != ErrorCode.none:
            return self._failed(f"DescribeDelegationToken answered {error_name(code)} (error {code})")
        tokens = [
            TokenInfo(
                token_id=str(t.token_id),
                owner=str(t.principal_name),
                hmac=bytes(t.hmac),
                expiry_ms=int(t.expiry_timestamp),
                max_ms=int(t.max_timestamp),
            )
            for t in response.tokens
        ]
        for cache in self.caches:
            cache.replace(tokens)
        if self._failing is not None:
            log.info("delegation tokens: read from the upstream again (%d)", len(tokens))
        self._failing = None
        self.refreshes += 1
        return True

    def _failed(self, why: str, *, advise: bool = True) -> bool:
        # Said once per outage (the first refresh included), not every period; tokens disabled was no outage.
        if self._failing is None or self._failing == _TOKENS_DISABLED:
            log.warning(
                "delegation tokens: cannot read them from %s (%s); token logins fail until it answers%s",
                self.path.upstream.settings.address,
                why,
                " (it must serve DescribeDelegationToken to the proxy: a broker listener in read.bootstrap.servers)" if advise else "",
            )
        self._failing = why
        for cache in self.caches:
            cache.clear()
        return False

    async def current(self) -> None:
        """Before a token login decides: when a token change was forwarded since the caches were filled (through this
        process or, with a shared generation, another one on the port), fill them again first. One stat otherwise.

        Every login awaits this before its exchange (proxy/forward/service.py `_login`, `_reauthenticate`), so it sees
        every change answered before it began, without the watch's 50 ms window."""
        if self.generation.read() != self._loaded:
            await self._refresh(force=False)

    async def run(self, caches: list[TokenCache], *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Refresh every `refresh_seconds`, when poked, or when another process moved the generation, for as long as
        the proxy runs."""
        self.caches = caches
        task_status.started()
        while True:
            self._poked = trio.Event()
            await self._refresh(force=True)
            with trio.move_on_after(self.refresh_seconds):
                await self._changed_since(self._loaded)

    async def _refresh(self, *, force: bool) -> None:
        """One refresh at a time; without `force`, none when another one already covered the current generation."""
        async with self._refreshing:
            # Read before the refresh: a change made while it runs moves the generation again, and is refreshed for.
            seen = self.generation.read()
            if not force and seen == self._loaded:
                return
            # Bounded: a refresh that hangs is abandoned and counts as failed.
            with trio.move_on_after(max(self.path.upstream.settings.request_timeout, 1.0)) as waited:
                await self.refresh()
            if waited.cancelled_caught:
                self._failed("no answer in time")
            self._loaded = seen

    async def _changed_since(self, loaded: tuple[int, int, int, int] | None) -> None:
        """Until this process pokes, or (with a shared generation) another process's change shows in the file."""
        if not self.generation.shared:
            await self._poked.wait()
            return
        while self.generation.read() == loaded:
            with trio.move_on_after(GENERATION_WATCH_SECONDS):
                await self._poked.wait()


__all__ = ["TokenMirror", "token_caches"]
