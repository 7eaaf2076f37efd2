"""KIP-103: Metadata and DescribeCluster answer with the advertised endpoint of the listener the request came in on."""

import threading
from pathlib import Path
from typing import Any

import trio

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import start_stack

ROUNDS = 20
METADATA = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
DESCRIBE_CLUSTER = {"include_cluster_authorized_operations": False, "endpoint_type": 1, "include_fenced_brokers": False}


async def test_two_clients_on_two_listeners_at_once_each_see_their_listeners_endpoint(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(
        nursery,
        tmp_path / "audit",
        proxy_overrides={
            "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            "advertised.listeners": "PLAIN://plain.example:19092,INTERNAL://internal.example:29092",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        },
    )
    both_connected = threading.Barrier(2, timeout=30)

    def client(listener: str) -> set[tuple[str, int]]:
        bound = stack.proxy.listener(listener)
        seen: set[tuple[str, int]] = set()
        with wire.connect(f"127.0.0.1:{bound.port}") as sock:
            both_connected.wait()  # both connections are open before either asks
            for round_ in range(ROUNDS):
                metadata = wire.call(sock, ApiKey.METADATA, 12, METADATA, correlation_id=2 * round_ + 1)
                seen |= {(b.host, int(b.port)) for b in metadata.brokers}
                cluster = wire.call(sock, ApiKey.DESCRIBE_CLUSTER, 1, DESCRIBE_CLUSTER, correlation_id=2 * round_ + 2)
                seen |= {(b.host, int(b.port)) for b in cluster.brokers}
        return seen

    results: dict[str, set[tuple[str, int]]] = {}

    async def run(listener: str) -> None:
        results[listener] = await trio.to_thread.run_sync(client, listener)

    async with trio.open_nursery() as clients:
        clients.start_soon(run, "PLAIN")
        clients.start_soon(run, "INTERNAL")
    assert results == {"PLAIN": {("plain.example", 19092)}, "INTERNAL": {("internal.example", 29092)}}
