"""The two upstreams the conformance suite runs against, behind one running proxy each.

A test gets a `Target`: where the proxy listens, and how to look at the
upstream's state *without* the proxy (the embedded controller's image, or a
direct AdminClient on the real node's broker listener), so a test checks what
really happened, not only what the proxy answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import trio

from controller.server import EmbeddedController
from devkit.kafka_node import KafkaNode
from envelope_proxy.embedded import proxy_properties, start_stack
from proxy.app import RunningProxy, run_proxy
from proxy.config import parse_proxy_config

READ_TIMEOUT = 30.0
ACL_PROPAGATION = 5.0
"""How long a real controller may take to apply a committed ACL change to its decisions."""
T = TypeVar("T")


@dataclass
class Target:
    kind: str  # "embedded" or "kafka"
    proxy: RunningProxy
    topic_partitions: Callable[[str], int | None]
    """Partition count of a topic as the upstream sees it, None when it does not exist."""
    topic_configs: Callable[[str], dict[str, str]]
    """The topic's explicitly set configs (not defaults)."""
    controller_address: str = ""
    """host:port of the controller listener the proxy forwards to (User:proxy logs in there and may send Envelopes)."""
    read_address: str = ""
    """host:port where a client reads without the proxy: the node's broker listener, or the embedded controller."""

    @property
    def address(self) -> str:
        """The proxy's SASL_PLAINTEXT/PLAIN client listener."""
        return f"127.0.0.1:{self.proxy.listener('CLIENT').port}"

    def wait_for_partitions(self, topic: str, expected: int | None, timeout: float = READ_TIMEOUT) -> int | None:
        """The real node's broker learns metadata a moment after the controller commits it; poll, bounded."""
        return poll(lambda: self.topic_partitions(topic), lambda seen: seen == expected, timeout)

    def wait_for_configs(self, topic: str, expected: dict[str, str], timeout: float = READ_TIMEOUT) -> dict[str, str]:
        return poll(lambda: self.topic_configs(topic), lambda seen: seen == expected, timeout)


def poll(read: Callable[[], T], done: Callable[[T], bool], timeout: float, pause: float = 0.2) -> T:
    """`read()` again until `done` says so or `timeout` passes; the last value either way (the test asserts on it)."""
    deadline = time.monotonic() + timeout
    seen = read()
    while not done(seen) and time.monotonic() < deadline:
        time.sleep(pause)
        seen = read()
    return seen


async def embedded_target(
    nursery: trio.Nursery, audit_dir: Path, overrides: dict[str, str] | None = None, controller_overrides: dict[str, str] | None = None
) -> Target:
    stack = await start_stack(nursery, audit_dir, proxy_overrides=overrides, controller_overrides=controller_overrides)
    controller: EmbeddedController = stack.controller

    def partitions(name: str) -> int | None:
        topic = controller.image.topics.get(name)
        return None if topic is None else topic.partitions

    def configs(name: str) -> dict[str, str]:
        topic = controller.image.topics.get(name)
        return {} if topic is None else dict(topic.configs)

    address = f"127.0.0.1:{stack.controller_port}"
    return Target("embedded", stack.proxy, partitions, configs, controller_address=address, read_address=address)


async def kafka_target(nursery: trio.Nursery, node: KafkaNode, audit_dir: Path, overrides: dict[str, str] | None = None) -> Target:
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

    props = proxy_properties(int(node.controller_address.rsplit(":", 1)[1]), audit_dir)
    props.update(node.proxy_upstream_properties())
    props["read.bootstrap.servers"] = node.broker_address
    props.update(overrides or {})
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    direct: Any = AdminClient(node.client_config("admin"))

    def partitions(name: str) -> int | None:
        topic = direct.list_topics(topic=name, timeout=READ_TIMEOUT).topics.get(name)
        if topic is None or topic.error is not None:
            return None
        return len(topic.partitions)

    def configs(name: str) -> dict[str, str]:
        (future,) = direct.describe_configs([ConfigResource("TOPIC", name)]).values()
        try:
            entries = future.result(timeout=READ_TIMEOUT)
        except Exception:
            return {}
        return {key: entry.value for key, entry in entries.items() if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}

    return Target("kafka", running, partitions, configs, controller_address=node.controller_address, read_address=node.broker_address)
