"""The one backoff schedule: how long to wait after n consecutive failures, everywhere the proxy retries.

Kafka's (`org.apache.kafka.common.utils.ExponentialBackoff`): after n failures the wait is
`initial * multiplier^(n-1)` times a random factor in [1 - jitter, 1 + jitter), never more than the maximum;
a maximum not above the initial wait gives a constant wait. Its users:
- the upstream pool (proxy/upstream/): `reconnect.backoff.ms` to `reconnect.backoff.max.ms`, jitter 0.2, per node
  and per request, as Kafka's NetworkClient;
- the OAUTHBEARER login's token endpoint and the JWKS refresh (proxy/net/sasl/): `sasl.login.retry.backoff.ms`
  and `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`, doubling with no jitter and no maximum but the caller's
  deadline, as Kafka's `Retry`;
- the audit pipeline's retries of a sink that cannot take records (proxy/audit/pipeline.py).

Sans-IO: the caller sleeps, and the random draw is injectable, so schedules are tested without sleeping.
`Retries` is the one retry loop's bookkeeping under a deadline (the OAuth token login and the JWKS refresh): after
each failed attempt, the wait before the next, or None once the deadline leaves no time for one.
"""

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

Uniform = Callable[[float, float], float]
"""A random number between its two bounds, as `random.uniform`."""

KAFKA_MULTIPLIER = 2.0
KAFKA_JITTER = 0.2
"""NetworkClient's reconnect jitter; Kafka's `Retry` (logins, JWKS) draws none."""


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
        # (and at 2^64 when there is no maximum, so a float never overflows)
        exponent = min(failures - 1, math.log(self.maximum / self.initial, self.multiplier), 64)
        factor = self.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        wait: float = self.initial * self.multiplier**exponent * factor
        return min(wait, self.maximum)

    @classmethod
    def doubling(cls, initial: float, maximum: float = math.inf) -> "Backoff":
        """Kafka's `Retry` and the audit sink's retries: doubling, no jitter."""
        return cls(initial, maximum, jitter=0.0)


class Retries:
    """Attempts that stop at a deadline `budget` seconds after the first, as Kafka's `Retry`: the caller makes an
    attempt, and after a failure sleeps `failed()` seconds, or gives up when it is None."""

    def __init__(self, backoff: Backoff, budget: float, clock: Callable[[], float]) -> None:
        self.backoff = backoff
        self.clock = clock
        self.end = clock() + budget
        self.failures = 0
        """Attempts failed so far: the number a log line or an error message names."""

    def failed(self) -> float | None:
        """Seconds to wait before the next attempt, never past the deadline; None when none is left."""
        self.failures += 1
        wait = min(self.backoff.delay(self.failures), self.end - self.clock())
        return wait if wait > 0 else None


__all__ = ["KAFKA_JITTER", "KAFKA_MULTIPLIER", "Backoff", "Retries", "Uniform"]
