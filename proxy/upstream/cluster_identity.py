"""The id of the cluster the proxy fronts, learned from its controllers and held across failover.

Kafka answers Metadata and DescribeCluster with its cluster id, always, and clients key on it:
librdkafka builds `describe_cluster()` from a Metadata answer and copies the id without a null
check, so a null id crashes it (docs/clients.md). The proxy therefore never answers with an id it
does not know. It takes the first id a controller reports (DescribeCluster, KIP-919) or the read
upstream's Metadata carries, or `cluster.id` when set, and from then on a node that reports
another id belongs to another cluster: a misconfiguration, logged, and not forwarded to.
"""

import logging

import trio

log = logging.getLogger(__name__)

CLUSTER_ID_KEY = "cluster.id"


class ClusterIdentity:
    def __init__(self, configured: str | None = None) -> None:
        """`configured`: `cluster.id`, the id every controller must report; None = the first one reported."""
        self.configured = configured or None
        self._learned: str | None = None
        self._known = trio.Event()
        self._refused: set[tuple[str, str]] = set()  # (node, id) already logged: discovery asks again every round
        if self.configured is not None:
            self._known.set()

    @property
    def cluster_id(self) -> str | None:
        return self.configured or self._learned

    def accept(self, node: object, reported: str | None) -> bool:
        """Whether `node`, which reports `reported` (None or empty: it did not say), may be forwarded to."""
        if not reported:
            return True
        known = self.cluster_id
        if known is None:
            log.info("cluster id %s, as reported by %s", reported, node)
            self._learned = reported
            self._known.set()
            return True
        if reported == known:
            return True
        if (str(node), reported) in self._refused:
            return False
        self._refused.add((str(node), reported))
        origin = f"{CLUSTER_ID_KEY} in the proxy's configuration" if self.configured else "its controllers so far"
        log.error(
            "%s reports cluster id %s, but the proxy fronts cluster %s (from %s): it belongs to another cluster, "
            "so nothing is forwarded to it. Check controller.quorum.bootstrap.servers (or controller.quorum.voters) and %s",
            node,
            reported,
            known,
            origin,
            CLUSTER_ID_KEY,
        )
        return False

    async def wait(self, timeout: float) -> str | None:
        """The cluster id, waiting up to `timeout` seconds for the first controller to report it."""
        if self.cluster_id is None:
            with trio.move_on_after(timeout):
                await self._known.wait()
        return self.cluster_id


__all__ = ["CLUSTER_ID_KEY", "ClusterIdentity"]
