"""Kafka's reconnect backoff schedule and the per-node record of failures, without sleeping: the random
draw is injected, and the clock is a number the tests move."""

import random

import pytest

from proxy.backoff import Backoff, Retries
from proxy.upstream.backoff import ReconnectBackoff

KAFKA_DEFAULTS = (0.05, 1.0)  # reconnect.backoff.ms, reconnect.backoff.max.ms


def lowest(low: float, high: float) -> float:
    return low


def highest(low: float, high: float) -> float:
    return high


def middle(low: float, high: float) -> float:
    return (low + high) / 2


def test_without_jitter_the_wait_doubles_from_the_initial_to_the_maximum() -> None:
    backoff = Backoff(*KAFKA_DEFAULTS, uniform=middle)
    waits = [round(backoff.delay(failures), 6) for failures in range(8)]
    assert waits == [0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_the_jitter_is_kafkas_plus_or_minus_twenty_percent_and_never_passes_the_maximum() -> None:
    assert Backoff(*KAFKA_DEFAULTS, uniform=lowest).delay(1) == pytest.approx(0.04)
    assert Backoff(*KAFKA_DEFAULTS, uniform=highest).delay(1) == pytest.approx(0.06)
    # At the top the exponent stops (Kafka's expMax): the jitter still spreads the waits below the maximum.
    assert Backoff(*KAFKA_DEFAULTS, uniform=lowest).delay(30) == pytest.approx(0.8)
    assert Backoff(*KAFKA_DEFAULTS, uniform=highest).delay(30) == 1.0


def test_every_drawn_wait_lies_within_the_jitter_of_the_schedule() -> None:
    draws = random.Random(24)
    backoff = Backoff(*KAFKA_DEFAULTS, uniform=draws.uniform)
    for failures in range(1, 40):
        nominal = min(0.05 * 2 ** (failures - 1), 1.0)
        assert 0.8 * nominal <= backoff.delay(failures) <= min(1.2 * nominal, 1.0)


def test_a_maximum_not_above_the_initial_wait_gives_a_constant_wait_as_in_kafka() -> None:
    backoff = Backoff(2.0, 1.0, uniform=highest)
    assert [backoff.delay(failures) for failures in (1, 2, 10)] == [2.0, 2.0, 2.0]


def test_a_node_waits_longer_after_each_failure_and_starts_again_after_an_answer() -> None:
    nodes = ReconnectBackoff(Backoff(*KAFKA_DEFAULTS, uniform=middle))
    assert nodes.ready_at("c:9093") == 0.0
    assert nodes.failed("c:9093", 10.0, since=9.0) == pytest.approx(0.05)
    assert nodes.ready_at("c:9093") == pytest.approx(10.05)
    assert nodes.failed("c:9093", 10.05, since=10.05) == pytest.approx(0.1)
    assert (nodes.failures("c:9093"), nodes.ready_at("other:9093")) == (2, 0.0)
    nodes.succeeded("c:9093")
    assert (nodes.failures("c:9093"), nodes.ready_at("c:9093")) == (0, 0.0)
    assert nodes.failed("c:9093", 20.0, since=19.0) == pytest.approx(0.05)


def test_connections_begun_before_the_latest_failure_count_as_that_failure() -> None:
    """A restarted controller breaks every idle connection at once; finding them dead one by one is one failure."""
    nodes = ReconnectBackoff(Backoff(*KAFKA_DEFAULTS, uniform=middle))
    nodes.failed("c:9093", 10.0, since=1.0)
    assert nodes.failed("c:9093", 10.02, since=2.0) == pytest.approx(0.03)  # the wait left, not a longer one
    assert nodes.failed("c:9093", 10.04, since=3.0) == pytest.approx(0.01)
    assert nodes.failures("c:9093") == 1
    assert nodes.failed("c:9093", 10.2, since=10.1) == pytest.approx(0.1)  # opened after it: a failure of its own
    assert nodes.failures("c:9093") == 2


def test_a_node_that_drops_every_connection_is_reconnected_to_about_once_a_second_not_sixteen_times() -> None:
    """Connects as early as the record allows, each dropped at once, for Kafka's 60 s forwarding timeout.

    Kafka's broker, which starts its backoff again on every ready connection, makes about 16 a second
    (docs: protocol-facts, measured on Kafka 4.3.1), 960 in the minute.
    """
    nodes = ReconnectBackoff(Backoff(*KAFKA_DEFAULTS, uniform=random.Random(7).uniform))
    now, connects = 0.0, 0
    while now < 60.0:
        now = max(now, nodes.ready_at("c:9093"))
        connects += 1
        nodes.failed("c:9093", now, since=now)
    # 0.05 + 0.1 + ... + 0.8 takes 1.55 s, then about one a second (0.8 s to 1 s with the jitter).
    assert 55 <= connects <= 80


def test_the_doubling_schedule_of_logins_jwks_and_audit_sinks() -> None:
    """Kafka's `Retry` (token endpoint, JWKS): no jitter, doubling, bounded only by the caller's deadline; the audit
    sink's: the same, capped. One schedule for all of them (proxy/backoff.py)."""
    login = Backoff.doubling(0.1)
    assert [login.delay(n) for n in range(5)] == [0.0, 0.1, 0.2, 0.4, 0.8]
    assert login.delay(10_000) > 1e18  # no float overflow, however long a deadline lets attempts go on
    sink = Backoff.doubling(0.05, 2.0)
    assert [sink.delay(n) for n in (1, 2, 6, 7, 50)] == [0.05, 0.1, 1.6, 2.0, 2.0]


def test_retries_wait_the_doubling_schedule_but_never_past_the_deadline() -> None:
    now = [0.0]
    retries = Retries(Backoff.doubling(0.1), 0.25, lambda: now[0])
    assert retries.failed() == 0.1
    now[0] = 0.1
    assert retries.failed() == pytest.approx(0.15)  # 0.2 by the schedule, cut to what the deadline leaves
    now[0] = 0.25
    assert retries.failed() is None
    assert retries.failures == 3
