"""How long the proxy waits, after a failure, before it connects to a controller again or re-sends a request.

The schedule is Kafka's (`org.apache.kafka.common.utils.ExponentialBackoff`, which its NetworkClient
uses for `reconnect.backoff.ms` and `reconnect.backoff.max.ms`): after n consecutive failures the
wait is `initial * 2^(n-1)` times a random factor in [0.8, 1.2), never more than the maximum; a
maximum not above the initial wait gives a constant wait. The jitter spreads the reconnects of many
proxies that lost the same controller at the same moment.

Sans-IO: the caller passes the clock's time in and sleeps itself, and the random draw is injectable,
so the schedule is tested without sleeping.
"""

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

Uniform = Callable[[float, float], float]
"""A random number between its two bounds, as `random.uniform`."""

KAFKA_MULTIPLIER = 2.0
KAFKA_JITTER = 0.2


@dataclass(frozen=True)
class Backoff:
    initial: float
    """Seconds after the first failure (`reconnect.backoff.ms`)."""
    maximum: float
    """The longest wait (`reconnect.backoff.max.ms`)."""
    multiplier: float = KAFKA_MULTIPLIER
    jitter: float = KAFKA_JITTER
    uniform: Uniform = field(default=random.uniform, compare=False, repr=False)

    def delay(self, failures: int) -> float:
        """Seconds to wait after `failures` consecutive failures (0 when nothing has failed)."""
        if failures <= 0:
            return 0.0
        if self.maximum <= self.initial or self.initial <= 0:
            return self.initial
        # The exponent stops where the maximum is reached, as Kafka's expMax, so the jitter still spreads waits at the top.
        exponent = min(failures - 1, math.log(self.maximum / self.initial, self.multiplier))
        factor = self.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        wait: float = self.initial * self.multiplier**exponent * factor
        return min(wait, self.maximum)


@dataclass
class _NodeFailures:
    count: int
    last: float
    """When the latest counted failure happened (the caller's clock)."""
    retry_at: float
    """No new connection to the node before this time."""


class ReconnectBackoff:
    """Per node (by address): the consecutive connection failures and when the next connection may be opened.

    As Kafka's ClusterConnectionStates, a failed connect or a lost connection counts, and the next
    connection to that node waits the backoff of the count. Unlike Kafka, which starts again from
    `reconnect.backoff.ms` as soon as a connection is ready, the count is cleared only by a request
    answered on the node (or a node that stays connected a while, the caller decides): a controller
    that accepts connections and drops each on the request it is sent reaches the maximum wait
    instead of being reconnected to every `reconnect.backoff.ms`.
    """

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self.failing: dict[str, _NodeFailures] = {}
        """The nodes whose last connection failed (read-only outside this class)."""

    def failed(self, address: str, now: float, *, since: float) -> float:
        """Count a failure of a connection to `address` that was opened (or whose connect began) at `since`;
        the seconds until the next connection may be opened.

        A connection begun before the node's latest counted failure is part of that failure, not a new one:
        a controller that restarts breaks every idle connection at once, and connects begun together fail
        together; finding them dead one by one must not push the backoff to its maximum at once.
        """
        node = self.failing.get(address)
        if node is not None and since <= node.last:
            return max(0.0, node.retry_at - now)
        count = 1 if node is None else node.count + 1
        delay = self.backoff.delay(count)
        self.failing[address] = _NodeFailures(count, now, now + delay)
        return delay

    def succeeded(self, address: str) -> None:
        """The node answered: its next failure waits the initial backoff again."""
        self.failing.pop(address, None)

    def failures(self, address: str) -> int:
        node = self.failing.get(address)
        return 0 if node is None else node.count

    def ready_at(self, address: str) -> float:
        """The earliest time for a new connection to `address` (0.0 when it has not failed)."""
        node = self.failing.get(address)
        return 0.0 if node is None else node.retry_at


__all__ = ["Backoff", "ReconnectBackoff", "Uniform"]
