"""The one set of brokers every answer names: the cluster's own, each at the proxy's address.

Clients build their picture of a cluster from the brokers an answer lists, and some replace it with each
answer. Kafka lists the same live brokers in every Metadata and DescribeCluster answer, whatever was asked,
and partitions name those brokers. So the proxy lists the cluster's brokers as the read upstream reports them
(their ids and racks; their host and port replaced by the advertised endpoint of the client's listener, so
every connection still reaches the proxy) in every answer that names nodes. Partition leaders and replicas
keep their real ids, which keeps placement, reassignments and leader elections true.

Until the read upstream has listed brokers (a controller that serves no Metadata, or none reached yet), the
proxy's own `node.id` stands alone, as before. The set is asked for again when it is older than the upstream's
discovery interval, and taken from every Metadata answer the upstream gives meanwhile.
"""

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from envelope.responses import NO_NODE
from proxy.net.addresses import ControllerAddress

FIRST_VIEW_WAIT = 5.0
"""Seconds an answer waits for the read upstream to list the brokers before it falls back to the last set known."""
RETRY_AFTER = 5.0
"""Seconds before an upstream that could not list the brokers is asked again: answers meanwhile use the last set."""


@dataclass(frozen=True)
class ClusterBroker:
    node_id: int
    rack: str | None = None
    upstream: ControllerAddress | None = None
    """Where the read upstream says this broker listens; None for the proxy's own id standing alone."""


@dataclass(frozen=True)
class BrokerSet:
    brokers: tuple[ClusterBroker, ...]
    controller_id: int
    from_upstream: bool

    @classmethod
    def alone(cls, node_id: int) -> "BrokerSet":
        """The proxy as the only broker and the controller: what it says before the cluster's brokers are known."""
        return cls((ClusterBroker(node_id),), node_id, from_upstream=False)

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(b.node_id for b in self.brokers)

    def get(self, node_id: int) -> ClusterBroker | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)

    def listed(self, host: str, port: int, id_key: str = "node_id") -> list[dict[str, Any]]:
        """The brokers as an answer lists them, at `host:port` (DescribeCluster names the id `broker_id`)."""
        return [{id_key: b.node_id, "host": host, "port": port, "rack": b.rack} for b in self.brokers]


class BrokerView:
    def __init__(self, own_id: int, max_age: float) -> None:
        self.own_id = own_id
        self.max_age = max_age
        self._set = BrokerSet.alone(own_id)
        self._learned_at = -math.inf
        self._lock = trio.Lock()

    @property
    def known(self) -> BrokerSet:
        """The set as last learned, without asking."""
        return self._set

    def learn(self, response: Any) -> BrokerSet:
        """Take the brokers of an upstream Metadata answer, if it lists any (an error answer lists none) with racks."""
        listed = getattr(response, "brokers", None) or ()
        if not listed or not hasattr(listed[0], "rack"):
            return self._set  # Metadata v0 carries no racks: the set is asked for again at a version that does
        brokers = tuple(
            sorted(
                (ClusterBroker(int(b.node_id), b.rack, ControllerAddress(str(b.host), int(b.port), int(b.node_id))) for b in listed),
                key=lambda b: b.node_id,
            )
        )
        ids = {b.node_id for b in brokers}
        # The controller a client is told stays put while it is a broker: Kafka names a random live broker, and a
        # client that sees it move at every answer re-resolves it for nothing.
        upstream_controller = int(getattr(response, "controller_id", NO_NODE))
        if self._set.from_upstream and self._set.controller_id in ids:
            controller = self._set.controller_id
        elif upstream_controller in ids:
            controller = upstream_controller
        else:
            controller = brokers[0].node_id
        self._set = BrokerSet(brokers, controller, from_upstream=True)
        self._learned_at = trio.current_time()
        return self._set

    async def current(self, ask: Callable[[], Awaitable[Any | None]]) -> BrokerSet:
        """The set, asked for again (`ask()`: an upstream Metadata answer, None when there is none) when it is older
        than `max_age`.

        One refresh at a time; an upstream that cannot answer leaves the last set in place, so a client never sees
        the brokers change because the upstream was briefly away."""
        if trio.current_time() - self._learned_at < self.max_age:
            return self._set
        async with self._lock:
            if trio.current_time() - self._learned_at < self.max_age:
                return self._set  # another answer refreshed it while this one waited
            with trio.move_on_after(FIRST_VIEW_WAIT):
                answer = await ask()
                if answer is not None and getattr(answer, "brokers", None):
                    self.learn(answer)
                    return self._set
            self._learned_at = trio.current_time() - self.max_age + RETRY_AFTER
        return self._set
