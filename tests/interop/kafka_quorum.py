"""Three combined KRaft nodes (broker and controller each) forming a static quorum on loopback.

Each node is a `KafkaNode` (same SASL users, StandardAuthorizer and super users) whose storage is
formatted for `controller.quorum.voters` (no --standalone). Heaps are small, the JIT stops at C1
and the JVMs are started together (a voter cannot be ready before a majority runs), so the quorum
fits on a 2-core machine. Raft's timeouts are set explicitly short. The leader is asked, not
assumed: through a controller listener with DescribeCluster (KIP-919), as the proxy's discovery does.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import TracebackType

from kio.schema.errors import ErrorCode

from devkit import wire
from devkit.kafka_jars import KafkaNodeError
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import NODE_USER, new_cluster_id
from devkit.processes import free_port
from envelope.apis import ApiKey, EndpointType

NODE_IDS = (1, 2, 3)
NO_LEADER = -1
ELECTION_TIMEOUT_MS = 1000
FETCH_TIMEOUT_MS = 2000
QUORUM_PROPERTIES = {
    "controller.quorum.election.timeout.ms": str(ELECTION_TIMEOUT_MS),
    "controller.quorum.fetch.timeout.ms": str(FETCH_TIMEOUT_MS),
    "controller.quorum.election.backoff.max.ms": str(ELECTION_TIMEOUT_MS),
}


class KafkaQuorum:
    """Use as a context manager; every wait is bounded and close() ends every JVM, also after a failure."""

    def __init__(self, workdir: Path, *, lib_dir: Path | None = None, heap: str = "256m", startup_timeout: float = 180.0) -> None:
        ports = {node: (free_port(), free_port()) for node in NODE_IDS}
        while len({port for pair in ports.values() for port in pair}) != 2 * len(NODE_IDS):
            ports = {node: (free_port(), free_port()) for node in NODE_IDS}
        self.voters = ",".join(f"{node}@127.0.0.1:{controller}" for node, (_, controller) in ports.items())
        self.startup_timeout = startup_timeout
        cluster_id = new_cluster_id()
        self.nodes = {
            node: KafkaNode(
                workdir=workdir / f"node-{node}",
                lib_dir=lib_dir,
                heap=heap,
                startup_timeout=startup_timeout,
                node_id=node,
                voters=self.voters,
                ports=ports[node],
                cluster_id=cluster_id,
                extra_properties=QUORUM_PROPERTIES,
            )
            for node in NODE_IDS
        }

    def __enter__(self) -> KafkaQuorum:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> None:
        """Format and start all three, then wait (bounded) until every broker is registered and a leader is elected."""
        try:
            for node in self.nodes.values():
                node.prepare()
            for node in self.nodes.values():
                node.spawn()
            for node in self.nodes.values():
                node.wait_ready()
            self.leader_id(timeout=self.startup_timeout)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop every node (SIGTERM, SIGKILL after the node's stop timeout), even when one of them fails to stop."""
        failure: BaseException | None = None
        for node in self.nodes.values():
            try:
                node.stop()
            except BaseException as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    # ---------------------------------------------------------------- one member

    def kill(self, node_id: int) -> None:
        """SIGKILL one node, as a crash: its storage and ports stay for restart()."""
        self.nodes[node_id].kill()

    def stop(self, node_id: int) -> None:
        """SIGTERM one node (controlled shutdown: a leader resigns) and wait, bounded; restart() brings it back."""
        self.nodes[node_id].terminate()

    def restart(self, node_id: int) -> None:
        """Start a killed or stopped node again on its ports and storage, and wait (bounded) until it is registered."""
        self.nodes[node_id].restart()

    # ---------------------------------------------------------------- what the quorum says

    def controller_address(self, node_id: int) -> str:
        return self.nodes[node_id].controller_address

    def running(self) -> list[int]:
        return [node_id for node_id, node in self.nodes.items() if node.running]

    def leader_id(self, *, timeout: float = 60.0) -> int:
        """The Raft leader as the running nodes see it, when it runs too; waits (bounded) while an election is on."""
        deadline = time.monotonic() + timeout
        while True:
            for node in self.nodes.values():
                if not node.running:
                    continue
                leader = _ask_leader(node)
                if leader in self.nodes and self.nodes[leader].running:
                    return leader
            if time.monotonic() >= deadline:
                raise KafkaNodeError(f"no running leader among the running nodes {self.running()} within {timeout:.0f}s")
            time.sleep(0.2)

    def followers(self) -> list[int]:
        leader = self.leader_id()
        return [node for node in NODE_IDS if node != leader]

    def log_tails(self, lines: int = 40) -> str:
        return "\n".join(node.log_tail(lines) for node in self.nodes.values())


def _ask_leader(node: KafkaNode) -> int:
    """DescribeCluster v1 with EndpointType=CONTROLLER on the node's controller listener: its view of the Raft leader."""
    values = {"include_cluster_authorized_operations": False, "endpoint_type": EndpointType.CONTROLLER}
    try:
        with wire.connect(node.controller_address, timeout=5) as sock:
            if wire.sasl_plain_login(sock, NODE_USER, node.users[NODE_USER]) != ErrorCode.none:
                return NO_LEADER
            body = wire.call(sock, ApiKey.DESCRIBE_CLUSTER, 1, values, 5)
    except (OSError, AssertionError):  # not listening yet, gone, or closed mid-login (sasl_plain_login asserts)
        return NO_LEADER
    return int(body.controller_id) if int(body.error_code) == ErrorCode.none else NO_LEADER
