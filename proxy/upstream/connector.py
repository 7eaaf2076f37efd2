"""Opening connections to controller nodes, for discovery and for sending alike.

Both need the same things of a new connection, so they are done once, here: it waits out its node's
reconnect backoff (proxy/upstream/backoff.py), every failure is logged, counted and pushes that
backoff further, and every connection asks ApiVersions, whose ranges count only when it goes to the
active controller. What happens is reported on the pool's events channel.
"""

import logging
from enum import Enum

import trio

from apiversions import VersionRange
from envelope.errors import ProtocolError
from proxy.backoff import Backoff
from proxy.net.addresses import ControllerAddress
from proxy.upstream.backoff import ReconnectBackoff
from proxy.upstream.link import Link, LinkBroken, UpstreamAuthenticationError
from proxy.upstream.settings import UpstreamSettings

# The upstream's log lines keep the logger name they had when one module did all of this: operators
# filter on it, and docs/deploy.md shows it.
LOGGER = "proxy.upstream.pool"
log = logging.getLogger(LOGGER)


class UpstreamEvent(Enum):
    """What the pool reports on its events channel."""

    APIVERSIONS = "apiversions"  # a connection was opened and asked ApiVersions
    RECONNECT = "reconnect"  # a connection was lost, or the active controller changed
    VERSIONS_CHANGED = "versions-changed"  # the active controller's ranges differ from the previous ones
    CONNECTED = "connected"  # a connection attempt succeeded (TCP, TLS, ApiVersions, login), discovery ones included
    CONNECT_FAILED = "connect-failed"  # a connection attempt failed
    RETRY = "retry"  # a request is sent again, after its backoff, because its connection was lost or could not be had
    REAUTHENTICATED = "reauthenticated"  # a connection logged in again before its session expired (KIP-368)


class Connector:
    def __init__(self, settings: UpstreamSettings, backoff: Backoff, events: trio.MemorySendChannel[UpstreamEvent] | None) -> None:
        """`events`, when given, receives an UpstreamEvent for each connection, loss and change of versions
        (sending waits for room in it: a bounded channel, read by the service)."""
        self.settings = settings
        self.reconnect_backoff = ReconnectBackoff(backoff)
        self.controller_ranges: dict[int, VersionRange] | None = None
        self.connects = 0
        """Connection attempts that succeeded (discovery ones included)."""
        self.connect_failures = 0
        self._events = events

    async def report(self, event: UpstreamEvent) -> None:
        if self._events is not None:
            await self._events.send(event)

    async def connect(self, server: ControllerAddress) -> Link | None:
        """A new link to `server` once its reconnect backoff allows; None (logged, counted) when it fails."""
        ready_at = self.reconnect_backoff.ready_at(server.address)
        if ready_at > trio.current_time():
            log.debug("controller %s: waiting %.0f ms before connecting again", server, (ready_at - trio.current_time()) * 1000)
            await trio.sleep_until(ready_at)
        started = trio.current_time()
        try:
            link = await Link.open(self.settings, server)
        except (LinkBroken, ProtocolError, UpstreamAuthenticationError) as exc:
            # A refused login is the operator's to fix, not a failover: said louder.
            level = logging.ERROR if isinstance(exc, UpstreamAuthenticationError) else logging.WARNING
            log.log(level, "controller %s unreachable: %s", server, exc)
            self.connect_failures += 1
            self.failed(server, since=started)
            await self.report(UpstreamEvent.CONNECT_FAILED)
            return None
        self.connects += 1
        try:
            await self.report(UpstreamEvent.CONNECTED)
        except BaseException:
            with trio.CancelScope(shield=True):
                await link.aclose()
            raise
        return link

    async def probe(self, server: ControllerAddress) -> Link | None:
        """A new link to `server` that is not (yet) known to go to the active controller."""
        link = await self.connect(server)
        if link is not None:
            await self.opened(link, active=False)
        return link

    def failed(self, server: ControllerAddress, *, since: float) -> None:
        """A connection to `server` begun at `since` failed or was lost: the node's next connection waits."""
        delay = self.reconnect_backoff.failed(server.address, trio.current_time(), since=since)
        log.debug(
            "controller %s: %d consecutive connection failures, next connection in %.0f ms",
            server,
            self.reconnect_backoff.failures(server.address),
            delay * 1000,
        )

    async def opened(self, link: Link, *, active: bool) -> None:
        """Every connection asks ApiVersions; the ranges that count are those of the newest connection to the
        active controller (a discovery answer from another node says nothing of what the active one speaks)."""
        previous = self.controller_ranges
        if active and previous != link.ranges:
            # Kept when equal: what clients are told is computed again only when it changes (service.advertised).
            self.controller_ranges = link.ranges
        await self.report(UpstreamEvent.APIVERSIONS)
        if active and previous is not None and previous != link.ranges:
            await self.report(UpstreamEvent.VERSIONS_CHANGED)


__all__ = ["LOGGER", "Connector", "UpstreamEvent"]
