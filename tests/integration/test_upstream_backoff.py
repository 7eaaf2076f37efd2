"""The proxy in front of a controller that drops the connection on a request (tests/fake_controller.py),
with Kafka's reconnect backoff defaults (50 ms doubling to 1 s): the request is re-sent no faster than the backoff,
answered REQUEST_TIMED_OUT once controller.forward.timeout.ms runs out, and other clients' requests are answered
meanwhile. Before the backoff, the proxy re-sent at once: over 1,000 connects a second here, on loopback.

Bounds are generous: a loaded machine makes attempts rarer, never more frequent."""

import time
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope_proxy.embedded import DEFAULT_USERS, proxy_properties
from proxy.app import RunningProxy, run_proxy
from proxy.config import parse_proxy_config
from tests.fake_controller import FakeController

FORWARD_TIMEOUT = 3.0
WAIT = 30.0  # bound on every wait; none is expected to come near it


def _config(controller_port: int, audit_dir: Path, forward_timeout: float) -> dict[str, str]:
    return {
        **proxy_properties(controller_port, audit_dir),
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "authorizer.class.name": "",  # no reads here: nothing to mirror from the stand-in
        "controller.forward.timeout.ms": str(int(forward_timeout * 1000)),
        "request.timeout.ms": "2000",
    }


def _create_topic(address: str, name: str) -> tuple[int, float]:
    """(the topic's error code, seconds to the answer) for CreateTopics as alice."""
    with wire.connect(address, timeout=WAIT) as sock:
        assert wire.sasl_plain_login(sock, "alice", DEFAULT_USERS["alice"]) == 0
        started = time.monotonic()
        return int(wire.create_topic(sock, name).error_code), time.monotonic() - started


async def _start(
    nursery: trio.Nursery, tmp_path: Path, controller: FakeController, forward_timeout: float = FORWARD_TIMEOUT
) -> tuple[RunningProxy, str]:
    port = await nursery.start(controller.serve)
    running: RunningProxy = await nursery.start(run_proxy, parse_proxy_config(_config(port, tmp_path / "audit", forward_timeout)))
    with trio.fail_after(WAIT):
        while not running.ready():
            await trio.sleep(0.02)
    return running, f"127.0.0.1:{running.listener('CLIENT').port}"


def _sample(running: RunningProxy, name: str, labels: dict[str, str] | None = None) -> float:
    value = running.service.metrics.registry.get_sample_value(name, labels or {})
    return 0.0 if value is None else value


async def test_a_request_that_drops_the_connection_backs_off_times_out_and_others_go_on(nursery: Any, tmp_path: Path) -> None:
    controller = FakeController(poison=b"poison-topic")
    running, address = await _start(nursery, tmp_path, controller)
    warm_up, _ = await trio.to_thread.run_sync(_create_topic, address, "warm-up")
    assert warm_up == 0

    started = trio.current_time()
    poisoned: list[tuple[int, float]] = []

    async def poison() -> None:
        poisoned.append(await trio.to_thread.run_sync(_create_topic, address, "poison-topic"))

    nursery.start_soon(poison)
    healthy: list[tuple[int, float]] = []
    with trio.fail_after(WAIT):
        while not poisoned and len(healthy) < 1000:
            healthy.append(await trio.to_thread.run_sync(_create_topic, address, f"healthy-{len(healthy)}"))
            await trio.sleep(0.05)
    ended = trio.current_time()

    ((code, seconds),) = poisoned
    assert code == ErrorCode.request_timed_out
    # Given up when the next wait (at most reconnect.backoff.max.ms, 1 s) would pass the deadline.
    assert FORWARD_TIMEOUT - 1.0 <= seconds < WAIT
    attempts = len(controller.dropped)
    assert 2 <= attempts <= 8, controller.dropped  # 50, 100, 200, 400, 800, 1000 ms (+/-20%) apart: at most 8 in 3 s
    connects = controller.connects_between(started, ended)
    # Per attempt one connection for the request and one to find the controller again; the healthy requests
    # add a few when the poisoned one has used up the idle connections. Without the backoff: over 3,000.
    assert connects <= 3 * attempts + 8, (connects, attempts)
    assert healthy and all(code == 0 for code, _ in healthy), healthy
    assert max(seconds for _, seconds in healthy) < 2.0, sorted(seconds for _, seconds in healthy)[-3:]
    assert _sample(running, "envelope_proxy_upstream_request_retries_total") == attempts - 1
    assert _sample(running, "envelope_proxy_upstream_connection_attempts_total", {"result": "connected"}) == len(controller.connects)
    assert _sample(running, "envelope_proxy_upstream_reconnects_total") >= attempts


async def test_a_controller_that_drops_every_request_is_reconnected_to_a_few_times_a_second(nursery: Any, tmp_path: Path) -> None:
    controller = FakeController(drop_all=True)
    # Long enough for the waits to reach their maximum (after about 1.5 s), short enough for the suite.
    running, address = await _start(nursery, tmp_path, controller, forward_timeout=6.0)
    started = trio.current_time()
    answers: list[tuple[int, float]] = []

    async def client(number: int) -> None:
        answers.append(await trio.to_thread.run_sync(_create_topic, address, f"topic-{number}"))

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as clients:
            for number in range(3):
                clients.start_soon(client, number)
    elapsed = trio.current_time() - started
    connects = controller.connects_between(started, started + elapsed)
    assert [code for code, _ in answers] == [ErrorCode.request_timed_out] * 3
    # Each request at most 11 attempts in 6 s (50 ms to 1 s apart, less 20%); each attempt one connection for the request and
    # one to find the controller again, and attempts of different requests that meet the node's backoff together
    # share it. Measured: about 35 connects, 6 a second; Kafka's broker makes about 16 a second, the proxy before
    # the backoff over 1,000.
    attempts = len(controller.dropped)
    assert attempts <= 3 * 11, controller.dropped
    assert connects <= 2 * attempts + 2 and connects / elapsed < 12, (connects, attempts, elapsed)
    assert _sample(running, "envelope_proxy_upstream_requests_backing_off") == 0

