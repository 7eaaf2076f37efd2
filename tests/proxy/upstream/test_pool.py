"""The pool of controller connections over loopback: which node it uses, the bounded queue, re-sending
over a lost connection, and the deadline. A FakeController decides when answers come."""

import struct
from typing import Any

import pytest
import trio

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from devkit.processes import free_port
from envelope.apis import ApiKey
from envelope_proxy.embedded import PROXY_PASSWORD, PROXY_USER, controller_properties
from proxy.net.addresses import ControllerAddress
from proxy.net.sasl.mechanisms import UsernamePasswordLogin
from proxy.net.sasl.plain import plain_client
from proxy.upstream.link import ConnectionSlots, DeadlineWatch, Link, LinkBroken, UpstreamUnavailable
from proxy.upstream.pool import ControllerPool, QueueFull, UpstreamEvent
from proxy.upstream.settings import UpstreamSettings
from tests.fake_controller import FakeController

WAIT = 10.0  # bound on every wait; none is expected to come near it


def plaintext(*ports: int, **overrides: Any) -> UpstreamSettings:
    servers = tuple(ControllerAddress("127.0.0.1", port) for port in ports)
    return UpstreamSettings(servers, "PLAINTEXT", connect_timeout=2.0, backoff_initial=0.01, backoff_max=0.05, **overrides)


def marker_request(correlation_id: int) -> bytes:
    """Any request frame: the fake answers what is not ApiVersions with the correlation id and a marker."""
    return wire.request(ApiKey.CREATE_TOPICS, 5, {"topics": [], "timeout": 1000, "validate_only": True}, correlation_id)


async def connected(pool: ControllerPool) -> None:
    with trio.fail_after(WAIT):
        while not pool.connected:
            await trio.sleep(0.01)


async def test_a_dead_first_address_is_skipped_and_the_next_one_used(nursery: trio.Nursery) -> None:
    fake = FakeController()
    port = await nursery.start(fake.serve)
    dead = free_port()
    pool = ControllerPool(plaintext(dead, port))
    await nursery.start(pool.run)
    await connected(pool)
    assert pool.active is not None and pool.active.port == port
    with trio.fail_after(WAIT):
        delivery = await pool.send(marker_request, deadline=trio.current_time() + WAIT)
    assert delivery.response[4:] == b"answered" and struct.unpack(">i", delivery.response[:4])[0] == fake.received[-1]
    assert [server.port for server in delivery.attempts] == [port] and delivery.server.port == port


async def test_a_full_queue_refuses_at_once_and_the_waiting_requests_are_served_in_turn(nursery: trio.Nursery) -> None:
    fake = FakeController(held=True)
    port = await nursery.start(fake.serve)
    pool = ControllerPool(plaintext(port, connections=1, max_queued=1))
    await nursery.start(pool.run)
    await connected(pool)
    answers: list[bytes] = []

    async def one() -> None:
        answers.append((await pool.send(marker_request, deadline=trio.current_time() + WAIT)).response)

    nursery.start_soon(one)  # takes the only connection, and is held by the controller
    nursery.start_soon(one)  # waits for it: the queue is full now
    with trio.fail_after(WAIT):
        while pool.queue_length < 2:
            await trio.sleep(0.01)
    assert (pool.in_flight, pool.waiting) == (1, 1)
    with pytest.raises(QueueFull):
        await pool.send(marker_request, deadline=trio.current_time() + WAIT)
    fake.release()
    with trio.fail_after(WAIT):
        while len(answers) < 2:
            await trio.sleep(0.01)
    assert pool.queue_length == 0
    assert len(fake.received) == 2, "the refused request never reached the controller"


async def test_a_lost_connection_sends_the_request_again(nursery: trio.Nursery) -> None:
    fake = FakeController(close_first=1)
    port = await nursery.start(fake.serve)
    events_in, events = trio.open_memory_channel[UpstreamEvent](64)
    pool = ControllerPool(plaintext(port), events=events_in)
    await nursery.start(pool.run)
    await connected(pool)
    with trio.fail_after(WAIT):
        delivery = await pool.send(marker_request, deadline=trio.current_time() + WAIT)
    assert len(fake.received) == 2 and delivery.response.endswith(b"answered")
    assert [server.port for server in delivery.attempts] == [port, port]
    seen = []
    while True:
        try:
            seen.append(events.receive_nowait())
        except trio.WouldBlock:
            break
    assert UpstreamEvent.RECONNECT in seen and pool.reconnects >= 1


async def test_no_reachable_controller_fails_at_the_deadline_not_before(nursery: trio.Nursery) -> None:
    pool = ControllerPool(plaintext(free_port(), free_port()))
    await nursery.start(pool.run)
    assert not pool.connected and pool.active_id == -1
    started = trio.current_time()
    with trio.fail_after(WAIT), pytest.raises(UpstreamUnavailable, match="no active controller known"):
        await pool.send(marker_request, deadline=started + 0.5)
    assert trio.current_time() - started >= 0.5


async def test_an_unanswered_attempt_ends_at_the_deadline_and_breaks_its_connection(nursery: trio.Nursery) -> None:
    fake = FakeController(held=True)
    port = await nursery.start(fake.serve)
    pool = ControllerPool(plaintext(port, request_timeout=0.3))
    await nursery.start(pool.run)
    await connected(pool)
    with trio.fail_after(WAIT), pytest.raises(UpstreamUnavailable):
        await pool.send(marker_request, deadline=trio.current_time() + 0.5)
    assert pool.in_flight == 0 and pool.waiting == 0
    fake.release()
    with trio.fail_after(WAIT):
        await connected(pool)
        delivery = await pool.send(marker_request, deadline=trio.current_time() + WAIT)
    # A fresh connection: the late answers of the broken ones never reach a later request.
    assert struct.unpack(">i", delivery.response[:4])[0] == fake.received[-1]


async def test_the_embedded_controller_is_found_by_discovery_and_its_id_known(nursery: trio.Nursery) -> None:
    controller = EmbeddedController(parse_controller_config({**controller_properties(), "node.id": "7"}))
    (bound,) = await nursery.start(controller.run)
    settings = UpstreamSettings(
        (ControllerAddress("127.0.0.1", bound.port),), "SASL_PLAINTEXT", login=UsernamePasswordLogin("PLAIN", PROXY_USER, PROXY_PASSWORD, plain_client)
    )
    pool = ControllerPool(settings)
    await nursery.start(pool.run)
    await connected(pool)
    assert pool.active_id == 7
    assert pool.controller_ranges is not None and pool.controller_ranges == controller.ranges


async def test_a_controller_that_goes_away_is_noticed_without_a_request(nursery: trio.Nursery) -> None:
    fake = FakeController()
    scope = trio.CancelScope()

    async def serve(task_status: trio.TaskStatus[int]) -> None:
        with scope:
            await fake.serve(task_status=task_status)

    port = await nursery.start(serve)
    pool = ControllerPool(plaintext(port))
    await nursery.start(pool.run)
    await connected(pool)
    scope.cancel()
    with trio.fail_after(WAIT):
        while pool.connected:
            await trio.sleep(0.01)
    assert pool.active is None and fake.received == []




@pytest.mark.parametrize("watched", [True, False], ids=["the pool's watch", "the round trip's own scope"])
async def test_a_round_trip_past_its_deadline_ends_then_broken_whoever_keeps_the_deadline(nursery: trio.Nursery, watched: bool) -> None:
    # The watch (link.py DeadlineWatch) replaces a cancel scope per round trip: it must end the round trip at the
    # same moment and the same way as the scope, which stays the way of a link with no watch running.
    fake = FakeController(held=True)
    port = await nursery.start(fake.serve)
    link = await Link.open(plaintext(port), ControllerAddress("127.0.0.1", port))
    watch = DeadlineWatch()
    if watched:
        await nursery.start(watch.run)
    started = trio.current_time()
    with trio.fail_after(WAIT), pytest.raises(LinkBroken, match="in time"):
        await link.exchange(marker_request, deadline=started + 0.2, watch=watch)
    assert 0.2 <= trio.current_time() - started < 0.2 + WAIT / 10
    assert link.broken and link.overdue is watched and not watch._due


async def test_a_watch_that_stops_closes_the_round_trips_it_kept(nursery: trio.Nursery) -> None:
    fake = FakeController(held=True)
    port = await nursery.start(fake.serve)
    link = await Link.open(plaintext(port), ControllerAddress("127.0.0.1", port))
    watch = DeadlineWatch()
    watching = trio.CancelScope()

    async def run_watch(task_status: trio.TaskStatus[None]) -> None:
        with watching:
            await watch.run(task_status=task_status)

    await nursery.start(run_watch)

    async def stop_soon() -> None:
        await trio.sleep(0.1)
        watching.cancel()

    nursery.start_soon(stop_soon)
    with trio.fail_after(WAIT), pytest.raises(LinkBroken, match="in time"):
        await link.exchange(marker_request, deadline=trio.current_time() + WAIT * 10, watch=watch)
    assert link.broken and not watch.watch(link, trio.current_time() + 1)


@pytest.mark.parametrize("watched", [True, False], ids=["the pool's watch", "the wait's own scope"])
async def test_connection_slots_go_first_come_first_served_and_a_wait_ends_at_its_deadline(nursery: trio.Nursery, watched: bool) -> None:
    # ConnectionSlots replaces a trio.Semaphore under a cancel scope per wait: the same order, the same end at the deadline.
    watch = DeadlineWatch()
    if watched:
        await nursery.start(watch.run)
    slots = ConnectionSlots(1, watch)
    slots.acquire_nowait()
    with pytest.raises(trio.WouldBlock):
        slots.acquire_nowait()
    started = trio.current_time()
    assert not await slots.acquire(started + 0.2)  # nobody releases: none in time
    assert 0.2 <= trio.current_time() - started < 0.2 + WAIT / 10
    taken: list[str] = []
    cancelled = trio.CancelScope()

    async def wait_for_one(name: str, scope: trio.CancelScope | None = None) -> None:
        with scope or trio.CancelScope():
            if await slots.acquire(trio.current_time() + WAIT):
                await trio.sleep(0.01)
                slots.release()
                taken.append(name)

    for name in ("first", "cancelled", "second"):
        nursery.start_soon(wait_for_one, name, cancelled if name == "cancelled" else None)
        await trio.sleep(0.01)
    cancelled.cancel()
    await trio.sleep(0.01)
    slots.release()
    with trio.fail_after(WAIT):
        while len(taken) < 2:
            await trio.sleep(0.01)
    assert taken == ["first", "second"] and not watch._due
    slots.acquire_nowait()  # the slot came back free
