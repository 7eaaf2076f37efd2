"""Three combined KRaft nodes (broker and controller each) forming a static quorum on loopback.

Heaps are small and the JVMs are started together (a voter cannot be ready before a majority
runs), so the quorum fits on a 2-core machine. The leader is asked, not assumed: through a
controller listener with DescribeCluster (KIP-919), as the proxy's discovery does.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import TracebackType

from envelope.apis import ApiKey, EndpointType
from tests.integration import wire
from tests.interop.kafka_node import NODE_USER, KafkaNode, KafkaNodeError, _cluster_id, _free_port

NODE_IDS = (1, 2, 3)
NO_LEADER = -1


class KafkaQuorum:
    def __init__(self, workdir: Path, *, lib_dir: Path | None = None, heap: str = "320m", startup_timeout: float = 180.0) -> None:
        ports = {node: (_free_port(), _free_port()) for node in NODE_IDS}
        voters = ",".join(f"{node}@127.0.0.1:{controller}" for node, (_, controller) in ports.items())
        cluster_id = _cluster_id()
        self.nodes = {
            node: KafkaNode(
                workdir=workdir / f"node-{node}",
                lib_dir=lib_dir,
                heap=heap,
                startup_timeout=startup_timeout,
                node_id=node,
                voters=voters,
                ports=ports[node],
                cluster_id=cluster_id,
            )
            for node in NODE_IDS
        }
        self.voters = voters

    def __enter__(self) -> KafkaQuorum:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> None:
        try:
            for node in self.nodes.values():
                node.prepare()
            for node in self.nodes.values():
                node.spawn()
            for node in self.nodes.values():
                node.wait_ready()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for node in self.nodes.values():
            node.stop()

    def controller_address(self, node_id: int) -> str:
        return self.nodes[node_id].controller_address

    def leader_id(self, *, timeout: float = 60.0) -> int:
        """The Raft leader as the running nodes see it; waits (bounded) while an election is on."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if not node.running:
                    continue
                leader = _ask_leader(node)
                if leader != NO_LEADER and self.nodes[leader].running:
                    return leader
            time.sleep(0.2)
        raise KafkaNodeError(f"no leader among the running nodes within {timeout:.0f}s")

    def followers(self) -> list[int]:
        leader = self.leader_id()
        return [node for node in NODE_IDS if node != leader]


def _ask_leader(node: KafkaNode) -> int:
    values = {"include_cluster_authorized_operations": False, "endpoint_type": EndpointType.CONTROLLER}
    try:
        with wire.connect(node.controller_address, timeout=5) as sock:
            if wire.sasl_plain_login(sock, NODE_USER, node.users[NODE_USER]) != 0:
                return NO_LEADER
            body = wire.call(sock, ApiKey.DESCRIBE_CLUSTER, 1, values, 5)
    except OSError:
        return NO_LEADER
    return int(body.controller_id) if int(body.error_code) == 0 else NO_LEADER
