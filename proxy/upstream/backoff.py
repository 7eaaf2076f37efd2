"""Per controller node: the consecutive connection failures and when the next connection may be opened.

The wait is the one schedule of proxy/backoff.py (Kafka's `reconnect.backoff.ms` doubling to
`reconnect.backoff.max.ms`, with jitter, which spreads the reconnects of many proxies that lost the
same controller at the same moment). Sans-IO: the caller passes the clock's time in and sleeps itself.
"""

from dataclasses import dataclass

from proxy.backoff import Backoff


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


__all__ = ["ReconnectBackoff"]
