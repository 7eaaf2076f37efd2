"""The pool against a controller that drops the connection on one request, over loopback with Kafka's default
backoff (reconnect.backoff.ms 50, reconnect.backoff.max.ms 1000): that request is re-sent no faster than the
backoff until its deadline, and the other requests are answered meanwhile, even over a single connection.

Timing bounds are lower bounds (a loaded machine only makes waits longer) or generous upper ones."""

from collections.abc import Callable
from typing import Any

import pytest
import trio

from devkit import wire
from envelope.apis import ApiKey
from proxy.net.addresses import ControllerAddress
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import ControllerPool
from proxy.upstream.settings import UpstreamSettings
from tests.fake_controller import FakeController

POISON = b"poison-topic"
DEADLINE = 3.0  # controller.forward.timeout.ms in the proxy
WAIT = 20.0  # bound on every wait; none is expected to come near it
#: why the pool gives a lost request up before its deadline: the next attempt's backoff would pass it
NEXT_AFTER_DEADLINE = "the next would come after the deadline"


def kafka_defaults(port: int, **overrides: Any) -> UpstreamSettings:
    return UpstreamSettings((ControllerAddress("127.0.0.1", port),), "PLAINTEXT", connect_timeout=2.0, **overrides)


def create_topic(name: bytes) -> bytes:
    """A CreateTopics frame naming `name`: the fake drops the connection on those that hold POISON."""
    topic = {"name": name.decode(), "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    return wire.request(ApiKey.CREATE_TOPICS, 5, {"topics": [topic], "timeout": 1000, "validate_only": True}, 0)


def with_correlation_id(frame: bytes) -> Callable[[int], bytes]:
    """The pool's `build`: the frame with the link's correlation id in its header (after api key and version)."""
    return lambda correlation_id: frame[:4] + correlation_id.to_bytes(4, "big", signed=True) + frame[8:]


async def connected(pool: ControllerPool) -> None:
    with trio.fail_after(WAIT):
        while not pool.connected:
            await trio.sleep(0.01)


async def test_a_request_that_drops_every_connection_is_re_sent_no_faster_than_the_backoff(nursery: trio.Nursery) -> None:
    fake = FakeController(poison=POISON)
    port = await nursery.start(fake.serve)
    pool = ControllerPool(kafka_defaults(port))
    await nursery.start(pool.run)
    await connected(pool)
    started = trio.current_time()
    # Given up at the deadline: mostly because the next attempt would come after it; on a loaded machine the
    # last lost connection's rediscovery can outlast the deadline instead, which ends the request just the same.
    gave_up_at_deadline = f"{NEXT_AFTER_DEADLINE}|no active controller known"
    with trio.fail_after(WAIT), pytest.raises(UpstreamUnavailable, match=gave_up_at_deadline) as gave_up:
        await pool.send(with_correlation_id(create_topic(POISON)), deadline=started + DEADLINE)
    elapsed = trio.current_time() - started
    # 50, 100, 200, 400, 800, 1000 ms (+/-20%) between attempts: at most 8 fit in 3 s.
    attempts = len(fake.dropped)
    assert 2 <= attempts <= 8, fake.dropped
    gaps = [later - earlier for earlier, later in zip(fake.dropped, fake.dropped[1:], strict=False)]
    for failures, gap in enumerate(gaps, start=1):
        assert gap >= 0.8 * min(0.05 * 2 ** (failures - 1), 1.0), gaps
    # Given up when the next wait (at most 1 s) would pass the deadline, not before.
    assert elapsed >= DEADLINE - 1.0
    # Each attempt: one connection for the request, one for finding the controller again.
    assert fake.connections <= 2 * attempts + 2, (fake.connections, attempts)
    # every lost attempt but the last was re-sent; the last too when the request then waited for the controller
    resent = attempts - 1 if NEXT_AFTER_DEADLINE in str(gave_up.value) else attempts
    assert pool.retries == resent and pool.backing_off == 0 and pool.queue_length == 0


async def test_other_requests_are_answered_while_one_request_backs_off(nursery: trio.Nursery) -> None:
    fake = FakeController(poison=POISON)
    port = await nursery.start(fake.serve)
    # One connection: the request that waits out its backoff does not keep it from the others.
    pool = ControllerPool(kafka_defaults(port, connections=1))
    await nursery.start(pool.run)
    await connected(pool)
    poisoned: list[BaseException] = []

    async def poison() -> None:
        try:
            await pool.send(with_correlation_id(create_topic(POISON)), deadline=trio.current_time() + DEADLINE)
        except UpstreamUnavailable as exc:
            poisoned.append(exc)

    nursery.start_soon(poison)
    latencies: list[float] = []
    with trio.fail_after(WAIT):
        while not poisoned and len(latencies) < 10_000:
            sent = trio.current_time()
            delivery = await pool.send(with_correlation_id(create_topic(b"healthy")), deadline=sent + WAIT)
            assert delivery.response.endswith(b"answered")
            latencies.append(trio.current_time() - sent)
            await trio.sleep(0.02)
    assert poisoned, "the poisoned request got an answer"
    assert len(fake.dropped) >= 2 and len(latencies) >= 10, (fake.dropped, len(latencies))
    # A healthy request waits at most for the controller to be found again, never for the poisoned one's backoff.
    assert max(latencies) < 1.0, sorted(latencies)[-5:]
