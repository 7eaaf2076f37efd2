"""The pool of connections to the active controller, and the discovery that keeps it pointed there.

As Kafka's NodeToControllerChannelManager: the active controller is looked up, not assumed; a
request that meets a lost connection or NOT_CONTROLLER is sent again to the new active controller
until its total deadline; each attempt is bounded by `request.timeout.ms`. Unlike Kafka's single
forwarding connection, `controller.connections` connections each carry one request at a time,
and at most `controller.queue.max.requests` requests wait for one.

Backoff, as Kafka's NetworkClient (`reconnect.backoff.ms` to `reconnect.backoff.max.ms`, see
proxy/upstream/backoff.py), on two counts: per node, every new connection to a controller whose
connections failed waits; per request, a request whose connection was lost is re-sent after a
wait that grows with its own failures. Kafka resets its per-node backoff as soon as a connection
is ready, so a controller that drops the connection on one request is reconnected to about every
50 ms for a minute; here neither count is reset by a connection alone.
"""

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import trio

from apiversions import VersionRange
from envelope.errors import ProtocolError
from proxy.net.addresses import ControllerAddress
from proxy.upstream.backoff import Backoff, ReconnectBackoff, Uniform
from proxy.upstream.cluster_identity import ClusterIdentity
from proxy.upstream.discovery import DESCRIBE_CLUSTER_OPERATION, DESCRIBE_QUORUM_OPERATION, Answer, DiscoveryError, ask, shared_endpoints
from proxy.upstream.link import Link, LinkBroken, UpstreamAuthenticationError, UpstreamUnavailable
from proxy.upstream.settings import UpstreamSettings

log = logging.getLogger(__name__)

NO_CONTROLLER = -1


class QueueFull(UpstreamUnavailable):
    """`controller.queue.max.requests` requests already wait: answered at once with a retriable error."""


class UpstreamEvent(Enum):
    """What the pool reports on its events channel."""

    APIVERSIONS = "apiversions"  # a connection was opened and asked ApiVersions
    RECONNECT = "reconnect"  # a connection was lost, or the active controller changed
    VERSIONS_CHANGED = "versions-changed"  # the active controller's ranges differ from the previous ones
    CONNECTED = "connected"  # a connection attempt succeeded (TCP, TLS, ApiVersions, login), discovery ones included
    CONNECT_FAILED = "connect-failed"  # a connection attempt failed
    RETRY = "retry"  # a request is sent again, after its backoff, because its connection was lost or could not be had
    REAUTHENTICATED = "reauthenticated"  # a connection logged in again before its session expired (KIP-368)


@dataclass(frozen=True, slots=True)
class Delivery:
    response: bytes
    server: ControllerAddress
    """The node that answered."""
    attempts: tuple[ControllerAddress, ...]
    """Every node the request was sent to, the answering one last."""
    queued: float
    """Seconds spent waiting for a connection."""
    remote: float
    """Seconds from sending the answered attempt to its answer."""


class ControllerPool:
    def __init__(
        self,
        settings: UpstreamSettings,
        *,
        events: trio.MemorySendChannel[UpstreamEvent] | None = None,
        identity: ClusterIdentity | None = None,
        uniform: Uniform = random.uniform,
    ) -> None:
        """`events`, when given, receives an UpstreamEvent for each connection, loss and change of versions
        (the pool waits for room in it: a bounded channel, read by the service). `identity`: the cluster id
        the nodes must report, shared with the other pools of the proxy. `uniform` draws the backoff's jitter."""
        self.settings = settings
        self.backoff = Backoff(settings.backoff_initial, settings.backoff_max, uniform=uniform)
        self.reconnect_backoff = ReconnectBackoff(self.backoff)
        self.identity = identity if identity is not None else ClusterIdentity()
        self.controller_ranges: dict[int, VersionRange] | None = None
        self.active: ControllerAddress | None = None
        self.endpoints: tuple[ControllerAddress, ...] = ()
        self.waiting = 0
        self.in_flight = 0
        self.reconnects = 0
        self.connects = 0
        """Connection attempts that succeeded (discovery ones included)."""
        self.connect_failures = 0
        self.retries = 0
        """Requests sent again after a lost connection or a failed connect (NOT_CONTROLLER is the forwarder's)."""
        self.backing_off = 0
        """Requests waiting out their backoff before their next attempt."""
        self._events = events
        self._known = trio.Event()
        self._look_again = trio.Event()
        self._reachable = False
        self._slots = trio.Semaphore(settings.connections)
        self._idle: list[Link] = []
        self._skip: set[ControllerAddress] = set()

    # -- what the rest of the proxy reads -------------------------------------------------

    @property
    def connected(self) -> bool:
        """An active controller is known and its last connection attempt succeeded."""
        return self.active is not None and self._reachable

    @property
    def active_id(self) -> int:
        if self.active is None or self.active.node_id is None:
            return NO_CONTROLLER
        return self.active.node_id

    @property
    def queue_length(self) -> int:
        """Waiting (for a connection or for their next attempt) and in flight, as Kafka's ForwardingManager QueueLength."""
        return self.waiting + self.backing_off + self.in_flight

    # -- sending ---------------------------------------------------------------------------

    async def send(self, build: Callable[[int], bytes], *, deadline: float) -> Delivery:
        """The answer frame to `build(correlation_id)` from the active controller; QueueFull at once when too many wait.

        A request whose connection is lost or cannot be had is sent again, to the controller found then, after a
        wait that grows with its own consecutive failures (`reconnect.backoff.ms` doubling to
        `reconnect.backoff.max.ms`, with jitter): a request that breaks every connection it is sent on is re-sent
        no faster than that. It waits without a connection slot, so other requests go on meanwhile. When the
        next attempt would come after `deadline`, UpstreamUnavailable.
        """
        attempts: list[ControllerAddress] = []
        queued = 0.0
        failures = 0
        while True:
            queued += await self._take_slot(deadline, admitted=failures > 0)
            self.in_flight += 1
            try:
                delivery = await self._attempt(build, deadline, attempts, queued)
            finally:
                self.in_flight -= 1
                self._slots.release()
            if delivery is not None:
                return delivery
            failures += 1
            await self._back_off(failures, deadline, attempts)

    async def _take_slot(self, deadline: float, *, admitted: bool) -> float:
        """A connection slot; the seconds waited for it. A request already `admitted` (a retry) is never refused as QueueFull."""
        try:
            self._slots.acquire_nowait()
        except trio.WouldBlock:
            return await self._queue(deadline, admitted=admitted)
        return 0.0

    async def _queue(self, deadline: float, *, admitted: bool = False) -> float:
        """Wait for a free connection (first come, first served); the seconds waited."""
        if not admitted and self.waiting >= self.settings.max_queued:
            raise QueueFull(f"{self.waiting} requests already wait for a controller connection (controller.queue.max.requests)")
        self.waiting += 1
        arrived = trio.current_time()
        try:
            with trio.move_on_at(deadline) as waiting:
                await self._slots.acquire()
        finally:
            self.waiting -= 1
        if waiting.cancelled_caught:
            raise UpstreamUnavailable("no controller connection became free in time")
        return trio.current_time() - arrived

    async def _back_off(self, failures: int, deadline: float, attempts: list[ControllerAddress]) -> None:
        """The wait before a request's next attempt, after `failures` consecutive failed ones."""
        delay = self.backoff.delay(failures)
        if trio.current_time() + delay >= deadline:
            raise UpstreamUnavailable(
                f"no answer from the controller in time ({len(attempts)} attempts, {failures} lost or not connected; "
                f"the next would come after the deadline)"
            )
        self.retries += 1
        await self._report(UpstreamEvent.RETRY)
        self.backing_off += 1
        try:
            await trio.sleep(delay)
        finally:
            self.backing_off -= 1

    async def request(self, build: Callable[[int], bytes], *, timeout: float | None = None) -> bytes:
        """`send` for the proxy's own reads: one answer frame within `timeout` (default `request.timeout.ms`)."""
        deadline = trio.current_time() + (timeout if timeout is not None else self.settings.request_timeout)
        return (await self.send(build, deadline=deadline)).response

    def not_controller(self, server: ControllerAddress) -> None:
        """`server` answered NOT_CONTROLLER: forget it as the active controller and look again."""
        self._forget(server, "answered NOT_CONTROLLER")

    async def _attempt(
        self, build: Callable[[int], bytes], deadline: float, attempts: list[ControllerAddress], queued: float
    ) -> Delivery | None:
        """One attempt on a connection to the active controller; None when the connection could not be had or was lost."""
        server = await self._wait_active(deadline)
        link = await self._idle_link(server) or await self._open(server, deadline)
        if link is None:
            return None
        attempts.append(server)
        sent = trio.current_time()
        reauthentications = link.reauthentications
        try:
            response = await link.exchange(build, deadline=min(deadline, sent + self.settings.request_timeout))
        except LinkBroken as exc:
            self._connection_failed(server, since=link.opened_at)
            self._forget(server, f"connection lost: {exc}")
            await self._report(UpstreamEvent.RECONNECT)
            return None
        if link.reauthentications != reauthentications:
            await self._report(UpstreamEvent.REAUTHENTICATED)
        if server.address in self.reconnect_backoff.failing:
            self.reconnect_backoff.succeeded(server.address)
        self._idle.append(link)
        return Delivery(response, server, tuple(attempts), queued, trio.current_time() - sent)

    async def _wait_active(self, deadline: float) -> ControllerAddress:
        while self.active is None:
            with trio.move_on_at(deadline):
                await self._known.wait()
            if self.active is None and trio.current_time() >= deadline:
                raise UpstreamUnavailable(f"no active controller known ({self.settings.servers_key}={self.settings.address})")
        return self.active

    async def _idle_link(self, server: ControllerAddress) -> Link | None:
        while self._idle:
            link = self._idle.pop()
            if link.server == server and not link.broken:
                return link
            await link.aclose()  # to a controller that is no longer active
        return None

    async def _open(self, server: ControllerAddress, deadline: float) -> Link | None:
        """A new link to `server`, or None (the server is forgotten) when it cannot be had."""
        with trio.move_on_at(deadline):
            link = await self._connect(server)
            if link is None:
                self._forget(server, "unreachable")
                return None
            try:
                await self._opened(link, active=True)
            except BaseException:
                with trio.CancelScope(shield=True):
                    await link.aclose()
                raise
            self._reachable = True
            return link
        raise UpstreamUnavailable(f"no connection to controller {server} in time")

    async def _connect(self, server: ControllerAddress) -> Link | None:
        """A new link to `server` once its reconnect backoff allows; None (logged, counted) when it fails."""
        ready_at = self.reconnect_backoff.ready_at(server.address)
        if ready_at > trio.current_time():
            log.debug("controller %s: waiting %.0f ms before connecting again", server, (ready_at - trio.current_time()) * 1000)
            await trio.sleep_until(ready_at)
        started = trio.current_time()
        try:
            link = await Link.open(self.settings, server)
        except (LinkBroken, ProtocolError, UpstreamAuthenticationError) as exc:
            level = logging.ERROR if isinstance(exc, UpstreamAuthenticationError) else logging.WARNING
            log.log(level, "controller %s unreachable: %s", server, exc)
            self.connect_failures += 1
            self._connection_failed(server, since=started)
            await self._report(UpstreamEvent.CONNECT_FAILED)
            return None
        self.connects += 1
        try:
            await self._report(UpstreamEvent.CONNECTED)
        except BaseException:
            with trio.CancelScope(shield=True):
                await link.aclose()
            raise
        return link

    def _connection_failed(self, server: ControllerAddress, *, since: float) -> None:
        """A connection to `server` begun at `since` failed or was lost: the node's next connection waits."""
        delay = self.reconnect_backoff.failed(server.address, trio.current_time(), since=since)
        log.debug(
            "controller %s: %d consecutive connection failures, next connection in %.0f ms",
            server,
            self.reconnect_backoff.failures(server.address),
            delay * 1000,
        )

    async def _opened(self, link: Link, *, active: bool) -> None:
        """Every connection asks ApiVersions; the ranges that count are those of the newest connection to the
        active controller (a discovery answer from another node says nothing of what the active one speaks)."""
        previous = self.controller_ranges
        if active and previous != link.ranges:
            # Kept when equal: what clients are told is computed again only when it changes (service.advertised).
            self.controller_ranges = link.ranges
        await self._report(UpstreamEvent.APIVERSIONS)
        if active and previous is not None and previous != link.ranges:
            await self._report(UpstreamEvent.VERSIONS_CHANGED)

    def _forget(self, server: ControllerAddress, why: str) -> None:
        if self.active != server:
            return
        log.warning("controller %s %s: looking for the active controller again", server, why)
        self.active = None
        self._reachable = False
        self._known = trio.Event()
        self._skip.add(server)
        self._look_again.set()
        self.reconnects += 1

    async def _report(self, event: UpstreamEvent) -> None:
        if self._events is not None:
            await self._events.send(event)

    # -- discovery -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Find the active controller, then look again on NOT_CONTROLLER, a lost connection, or every
        `controller.discovery.interval.ms`; report started after the first round."""
        failed_rounds = 0
        started = False
        try:
            while True:
                self._look_again = trio.Event()
                watched = await self._discover()
                if not started:
                    task_status.started()
                    started = True
                if watched is not None:
                    failed_rounds = 0
                    await self._watch(watched)
                else:
                    # Each node's own backoff paces its connects; this also paces rounds that reached nodes
                    # which know no leader yet (an election), which are not connection failures.
                    failed_rounds += 1
                    await trio.sleep(self.backoff.delay(failed_rounds))
        finally:
            idle, self._idle = self._idle, []
            with trio.CancelScope(shield=True):
                for link in idle:
                    await link.aclose()

    async def _watch(self, link: Link) -> None:
        """Until it is time to look again: the discovery connection to the active controller is kept open and
        read, so that a controller that goes away is noticed at once, not at the next request. A connection
        that lasts the whole interval clears the node's reconnect backoff, as an answered request does."""
        lasted = False
        try:
            async with trio.open_nursery() as nursery:

                async def next_look() -> None:
                    nonlocal lasted
                    with trio.move_on_after(self.settings.discovery_interval) as interval:
                        await self._look_again.wait()
                    lasted = interval.cancelled_caught
                    nursery.cancel_scope.cancel()

                nursery.start_soon(next_look)
                why = await link.wait_closed()
                nursery.cancel_scope.cancel()
                self._connection_failed(link.server, since=link.opened_at)
                if self.active == link.server:
                    self._forget(link.server, why)
                    await self._report(UpstreamEvent.RECONNECT)
        finally:
            with trio.CancelScope(shield=True):
                await link.aclose()
        if lasted:
            self.reconnect_backoff.succeeded(link.server.address)

    def _candidates(self) -> list[ControllerAddress]:
        """The endpoints learned last, then the configured addresses; those that just failed go last."""
        ordered: list[ControllerAddress] = []
        for server in (*self.endpoints, *self.settings.servers):
            if all(server.address != seen.address for seen in ordered):
                ordered.append(server)
        fresh = [server for server in ordered if server not in self._skip]
        return fresh + [server for server in ordered if server in self._skip]

    async def _discover(self) -> Link | None:
        """One round over the candidates: the link to the active controller when one is known and reachable."""
        for candidate in self._candidates():
            link = await self._try_open(candidate)
            if link is None:
                continue
            answer = await self._ask(link) if self.settings.discover else Answer(candidate)
            if answer is None:
                continue
            if not self.identity.accept(f"controller {candidate}", answer.cluster_id):
                await link.aclose()
                continue
            if answer.endpoints and answer.endpoints != self.endpoints:
                self.endpoints = answer.endpoints
                for address, nodes in shared_endpoints(answer.endpoints).items():  # said once per new list, not per round
                    log.error(
                        "controllers %s all advertise %s on listener %s: the proxy cannot tell them apart and may reach only one. "
                        "Advertise each controller's own address, reachable from the proxy, on that listener (advertised.listeners)",
                        nodes,
                        address,
                        self.settings.listener_name,
                    )
            if answer.active is None:
                log.info("controller %s knows no active controller yet (election in progress)", candidate)
                await link.aclose()
                continue
            if answer.active.address != candidate.address:
                await link.aclose()
                link = await self._try_open(answer.active)
                if link is None:
                    continue
            await self._use(answer.active, link)
            return link
        self._skip.clear()
        return None

    async def _ask(self, link: Link) -> Answer | None:
        try:
            return await ask(link, self.settings.servers, deadline=trio.current_time() + self.settings.request_timeout)
        except DiscoveryError as exc:
            if exc.unauthorized:
                # Without the ACL, the node is tried as it is (NOT_CONTROLLER moves on): the proxy still
                # works, and the client sees the controller's own answer, CLUSTER_ACTION refusals included.
                log.error("controller %s: %s; %s. Trying it as the active controller meanwhile", link.server, exc, _acl_hint(self.settings))
                return Answer(link.server)
            log.warning("controller %s: %s", link.server, exc)
        except LinkBroken as exc:
            log.warning("controller %s: %s", link.server, exc)
            self._connection_failed(link.server, since=link.opened_at)
        await link.aclose()
        return None

    async def _try_open(self, server: ControllerAddress) -> Link | None:
        link = await self._connect(server)
        if link is not None:
            await self._opened(link, active=False)
        return link

    async def _use(self, active: ControllerAddress, link: Link) -> None:
        server = active if active.node_id is not None else link.server
        if server != self.active:
            identity = self.settings.username or self.settings.certificate_dn or "ANONYMOUS"
            # A pool over brokers (read.bootstrap.servers: no discovery) names the broker it reads from, not a controller.
            role = "active controller" if self.settings.discover else "read upstream broker"
            log.info("%s: %s (%s, as %s)", role, server, self.settings.security_protocol, identity)
        link.server = server
        stale = [idle for idle in self._idle if idle.server != server]
        self._idle = [idle for idle in self._idle if idle.server == server]
        for idle in stale:
            await idle.aclose()
        await self._opened(link, active=True)
        self.active = server
        self._reachable = True
        self._skip.discard(server)
        self._known.set()


def _acl_hint(settings: UpstreamSettings) -> str:
    principal = f"User:{settings.username or settings.certificate_dn or 'ANONYMOUS'}"
    return (
        f"to find the active controller, grant {principal} {DESCRIBE_QUORUM_OPERATION} (DescribeQuorum) or {DESCRIBE_CLUSTER_OPERATION} "
        f"(DescribeCluster) on the cluster: kafka-acls --add --allow-principal {principal} --operation {DESCRIBE_QUORUM_OPERATION} --cluster"
    )


__all__ = ["ControllerPool", "Delivery", "QueueFull", "UpstreamEvent", "UpstreamUnavailable"]
