"""The pool of connections to the active controller, and the one loop each request is sent in.

As Kafka's NodeToControllerChannelManager: the active controller is looked up, not assumed
(proxy/upstream/discovery.py finds it); each attempt is bounded by `request.timeout.ms`. Unlike
Kafka's single forwarding connection, `controller.connections` connections each carry one request
at a time, and at most `controller.queue.max.requests` requests wait for one.

Each attempt is classified, and two results are sent again, to the controller found then, until
the request's one deadline: lost (no connection to the active controller could be had, or it
broke before the answer) and NOT_CONTROLLER (an Envelope answered by a node that is not the active
controller: the EnvelopeResponse's own error code, where Kafka's RequestChannel puts an inner
NOT_CONTROLLER). Any other answer ends the loop, and so does the deadline, when the wait before the
next attempt would end after it.

That wait is proxy/backoff.py's one schedule (`reconnect.backoff.ms` doubling to
`reconnect.backoff.max.ms`, with jitter), grown by two counts kept apart: an answer proves the
connection works, so losses count consecutively since the last answer, while NOT_CONTROLLER answers
count over the whole request, as they measure how long the quorum has been without a leader it can
name. Only a re-send after a loss is the pool's retry (counted, reported, never refused by the
queue's bound); a re-send after NOT_CONTROLLER is admitted again as a new request would be. Nodes
have a backoff of their own too (proxy/upstream/backoff.py): every new connection to a controller
whose connections failed waits. Kafka resets that one as soon as a connection is ready, so a
controller that drops the connection on one request is reconnected to about every 50 ms for a
minute; here neither count is reset by a connection alone.

The loop knows nothing of connections: a `Sender` makes each attempt (the pool, or a test's fake).
"""

import logging
import random
from collections.abc import Callable
from typing import NamedTuple, Protocol, TypeVar

import trio
from kio.schema.errors import ErrorCode

from apiversions import VersionRange
from envelope.responses import NO_NODE
from envelope.wrap import unwrap
from proxy.backoff import Backoff, Uniform
from proxy.net.addresses import ControllerAddress
from proxy.upstream.cluster_identity import ClusterIdentity
from proxy.upstream.connector import Connector, UpstreamEvent
from proxy.upstream.discovery import Discovery
from proxy.upstream.link import ConnectionSlots, DeadlineWatch, Link, LinkBroken, UpstreamUnavailable
from proxy.upstream.settings import UpstreamSettings

log = logging.getLogger(__name__)



class QueueFull(UpstreamUnavailable):
    """`controller.queue.max.requests` requests already wait: answered at once with a retriable error."""


Build = Callable[[int], bytes]
"""The request frame for a correlation id (each attempt goes on a connection with its own ids)."""


class Attempt(NamedTuple):
    """How one attempt ended. (This and the two below are named tuples: immutable as a frozen dataclass, made per
    request at a quarter of its cost.)"""

    server: ControllerAddress | None
    """The node the request was sent to; None when no connection to the active controller could be had."""
    response: bytes | None
    """Its answer frame; None when the attempt was lost."""
    queued: float
    """Seconds spent waiting for a connection."""
    remote: float
    """Seconds from sending to the answer."""


class Delivery(NamedTuple):
    response: bytes
    server: ControllerAddress
    """The node that answered."""
    attempts: tuple[ControllerAddress, ...]
    """Every node the request was sent to since the previous answer, the answering one last."""
    queued: float
    """Seconds spent waiting for a connection, over those attempts."""
    remote: float
    """Seconds from sending the answered attempt to its answer."""


class EnvelopeReply(NamedTuple):
    """An answered Envelope, read."""

    delivery: Delivery
    error: int
    """The EnvelopeResponse's error code."""
    embedded: bytes | None
    """The controller's answer to the client's request, when there is one."""

    @property
    def not_controller(self) -> bool:
        """Answered by a node that is not the active controller: sent again, or, at the deadline, the final reply."""
        return self.error == ErrorCode.not_controller


class Sender(Protocol):
    """What the loop sends through."""

    @property
    def backoff(self) -> Backoff: ...

    async def attempt(self, build: Build, deadline: float, *, admitted: bool) -> Attempt:
        """One attempt at the active controller. `admitted`: a re-send after a loss, which the queue's bound never refuses."""
        ...

    async def retry_after(self, delay: float) -> None:
        """Wait `delay` before re-sending a request whose attempt was lost, as one of the pool's retries."""
        ...

    def not_controller(self, server: ControllerAddress) -> None:
        """`server` answered NOT_CONTROLLER: it is no longer taken for the active controller."""
        ...


Reply = TypeVar("Reply")


async def send(sender: Sender, build: Build, *, deadline: float) -> Delivery:
    """The answer to a request sent as it is (an answer is an answer: only losses are sent again)."""
    return await _until_answered(sender, build, deadline, read=_as_it_is, retry_elsewhere=_never, answered=None)


async def send_envelope(
    sender: Sender, build: Build, *, deadline: float, answered: Callable[[EnvelopeReply], None] | None = None
) -> EnvelopeReply:
    """The reply to an Envelope; NOT_CONTROLLER too when no active controller took it by `deadline`.

    `answered` sees every reply as it comes, NOT_CONTROLLER ones included, so that what the request went
    through is known even when a later attempt fails. ProtocolError when a reply is no EnvelopeResponse.
    """
    return await _until_answered(sender, build, deadline, read=_envelope, retry_elsewhere=_is_not_controller, answered=answered)


async def _until_answered(
    sender: Sender,
    build: Build,
    deadline: float,
    *,
    read: Callable[[Delivery], Reply],
    retry_elsewhere: Callable[[Reply], bool],
    answered: Callable[[Reply], None] | None,
) -> Reply:
    attempts: list[ControllerAddress] = []
    queued = 0.0
    lost = 0
    not_controller = 0
    while True:
        attempt = await sender.attempt(build, deadline, admitted=lost > 0)
        queued += attempt.queued
        if attempt.server is not None:
            attempts.append(attempt.server)
        if attempt.server is None or attempt.response is None:
            lost += 1
            delay = sender.backoff.delay(lost)
            if trio.current_time() + delay >= deadline:
                raise UpstreamUnavailable(
                    f"no answer from the controller in time ({len(attempts)} attempts, {lost} lost or not connected; "
                    f"the next would come after the deadline)"
                )
            await sender.retry_after(delay)
            continue
        reply = read(Delivery(attempt.response, attempt.server, tuple(attempts), queued, attempt.remote))
        if answered is not None:
            answered(reply)
        if not retry_elsewhere(reply):
            return reply
        sender.not_controller(attempt.server)
        not_controller += 1
        delay = sender.backoff.delay(not_controller)
        if trio.current_time() + delay >= deadline:
            return reply
        await trio.sleep(delay)
        attempts, queued, lost = [], 0.0, 0


def _as_it_is(delivery: Delivery) -> Delivery:
    return delivery


def _never(delivery: Delivery) -> bool:
    return False


def _envelope(delivery: Delivery) -> EnvelopeReply:
    error, embedded = unwrap(delivery.response)
    return EnvelopeReply(delivery, error, embedded)


def _is_not_controller(reply: EnvelopeReply) -> bool:
    return reply.not_controller


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
        self.identity = identity if identity is not None else ClusterIdentity()
        self.connector = Connector(settings, self.backoff, events)
        self.discovery = Discovery(settings, self.connector, self.identity, self.backoff, on_active=self._keep_idle_to)
        self.waiting = 0
        self.in_flight = 0
        self.retries = 0
        """Requests sent again after a lost connection or a failed connect (not after NOT_CONTROLLER)."""
        self.backing_off = 0
        """Requests waiting out their backoff before their next attempt after a lost connection."""
        self._watch = DeadlineWatch()  # the deadline of every wait for a slot and round trip, while `run` runs
        self._slots = ConnectionSlots(settings.connections, self._watch)
        self._idle: list[Link] = []

    # -- what the rest of the proxy reads -------------------------------------------------

    @property
    def controller_ranges(self) -> dict[int, VersionRange] | None:
        return self.connector.controller_ranges

    @property
    def active(self) -> ControllerAddress | None:
        return self.discovery.active

    @property
    def reconnects(self) -> int:
        return self.discovery.reconnects

    @property
    def connected(self) -> bool:
        """An active controller is known and its last connection attempt succeeded."""
        return self.discovery.active is not None and self.discovery.reachable

    @property
    def active_id(self) -> int:
        active = self.discovery.active
        if active is None or active.node_id is None:
            return NO_NODE
        return active.node_id

    @property
    def queue_length(self) -> int:
        """Waiting (for a connection or for their next attempt) and in flight, as Kafka's ForwardingManager QueueLength."""
        return self.waiting + self.backing_off + self.in_flight

    # -- sending ---------------------------------------------------------------------------

    async def send(self, build: Build, *, deadline: float) -> Delivery:
        """The answer frame to `build(correlation_id)` from the active controller; QueueFull at once when too many wait.

        A request whose connection is lost or cannot be had is sent again, to the controller found then, after a
        wait that grows with its own consecutive failures (`reconnect.backoff.ms` doubling to
        `reconnect.backoff.max.ms`, with jitter): a request that breaks every connection it is sent on is re-sent
        no faster than that. It waits without a connection slot, so other requests go on meanwhile. When the
        next attempt would come after `deadline`, UpstreamUnavailable.
        """
        return await send(self, build, deadline=deadline)

    async def send_envelope(
        self, build: Build, *, deadline: float, answered: Callable[[EnvelopeReply], None] | None = None
    ) -> EnvelopeReply:
        """`send` for an Envelope, which NOT_CONTROLLER also sends again."""
        return await _until_answered(self, build, deadline, read=_envelope, retry_elsewhere=_is_not_controller, answered=answered)

    async def request(self, build: Build, *, timeout: float | None = None) -> bytes:
        """`send` for the proxy's own reads: one answer frame within `timeout` (default `request.timeout.ms`)."""
        deadline = trio.current_time() + (timeout if timeout is not None else self.settings.request_timeout)
        return (await self.send(build, deadline=deadline)).response

    async def attempt(self, build: Build, deadline: float, *, admitted: bool) -> Attempt:
        """One attempt on a connection to the active controller, holding a connection slot only meanwhile."""
        try:
            self._slots.acquire_nowait()  # the usual case, without awaiting a coroutine for it
            queued = 0.0
        except trio.WouldBlock:
            queued = await self._queue(deadline, admitted=admitted)
        self.in_flight += 1
        try:
            return await self._exchange(build, deadline, queued)
        finally:
            self.in_flight -= 1
            self._slots.release()

    async def retry_after(self, delay: float) -> None:
        self.retries += 1
        await self.connector.report(UpstreamEvent.RETRY)
        self.backing_off += 1
        try:
            await trio.sleep(delay)
        finally:
            self.backing_off -= 1

    def not_controller(self, server: ControllerAddress) -> None:
        """`server` answered NOT_CONTROLLER: forget it as the active controller and look again."""
        self.discovery.forget(server, "answered NOT_CONTROLLER")

    async def _queue(self, deadline: float, *, admitted: bool = False) -> float:
        """Wait for a free connection (first come, first served); the seconds waited. A request already `admitted` (a
        retry) is never refused as QueueFull."""
        if not admitted and self.waiting >= self.settings.max_queued:
            raise QueueFull(f"{self.waiting} requests already wait for a controller connection (controller.queue.max.requests)")
        self.waiting += 1
        arrived = trio.current_time()
        try:
            taken = await self._slots.acquire(deadline)
        finally:
            self.waiting -= 1
        if not taken:
            raise UpstreamUnavailable("no controller connection became free in time")
        return trio.current_time() - arrived

    async def _exchange(self, build: Build, deadline: float, queued: float) -> Attempt:
        # Read when known, awaited only when not: the usual request's path stays within this file and link.py.
        server = self.discovery.active or await self.discovery.wait_active(deadline)
        idle = self._idle
        if idle and idle[-1].server == server and not idle[-1].broken:
            link: Link | None = idle.pop()  # the usual case, without awaiting `_idle_link`
        else:
            link = await self._idle_link(server) or await self._open(server, deadline)
        if link is None:
            return Attempt(None, None, queued, 0.0)
        sent = trio.current_time()
        reauthentications = link.reauthentications
        try:
            response = await link.exchange(build, deadline=min(deadline, sent + self.settings.request_timeout), watch=self._watch)
        except LinkBroken as exc:
            self.connector.failed(server, since=link.opened_at)
            self.discovery.forget(server, f"connection lost: {exc}")
            await self.connector.report(UpstreamEvent.RECONNECT)
            return Attempt(server, None, queued, 0.0)
        if link.reauthentications != reauthentications:
            await self.connector.report(UpstreamEvent.REAUTHENTICATED)
        if server.address in self.connector.reconnect_backoff.failing:
            self.connector.reconnect_backoff.succeeded(server.address)
        self._idle.append(link)
        return Attempt(server, response, queued, trio.current_time() - sent)

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
            link = await self.connector.connect(server)
            if link is None:
                self.discovery.forget(server, "unreachable")
                return None
            try:
                await self.connector.opened(link, active=True)
            except BaseException:
                with trio.CancelScope(shield=True):
                    await link.aclose()
                raise
            self.discovery.reached()
            return link
        raise UpstreamUnavailable(f"no connection to controller {server} in time")

    async def _keep_idle_to(self, active: ControllerAddress) -> None:
        """A new active controller: the idle connections to any other node are closed."""
        stale = [idle for idle in self._idle if idle.server != active]
        self._idle = [idle for idle in self._idle if idle.server == active]
        for idle in stale:
            await idle.aclose()

    # -- discovery -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Discovery (proxy/upstream/discovery.py) for as long as the pool is used; its connections closed after."""
        try:
            async with trio.open_nursery() as watching:
                await watching.start(self._watch.run)
                await self.discovery.run(task_status=task_status)
                watching.cancel_scope.cancel()
        finally:
            idle, self._idle = self._idle, []
            with trio.CancelScope(shield=True):
                for link in idle:
                    await link.aclose()


__all__ = ["Attempt", "Build", "ControllerPool", "Delivery", "EnvelopeReply", "QueueFull", "Sender", "UpstreamEvent", "UpstreamUnavailable", "send", "send_envelope"]
