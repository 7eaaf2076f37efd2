"""The proxy in front of a real Kafka KRaft controller: forwarded identity counts there."""

from pathlib import Path
from typing import Any

import pytest
import trio

from apiversions import intersect
from devkit import wire
from devkit.kafka_node import KafkaNode
from envelope.apis import FORWARDABLE, ApiKey
from envelope_proxy.embedded import client_config, proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config

pytestmark = pytest.mark.interop
TIMEOUT = 60


async def _start_proxy(nursery: Any, node: KafkaNode, audit_dir: Path) -> Any:
    props = proxy_properties(int(node.controller_address.rsplit(":", 1)[1]), audit_dir)
    props.update(node.proxy_upstream_properties())
    return await nursery.start(run_proxy, parse_proxy_config(props))


async def test_admin_creates_and_alice_is_denied_by_the_real_controller(kafka_node: KafkaNode, nursery: Any, tmp_path: Path) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    running = await _start_proxy(nursery, kafka_node, tmp_path / "audit")
    listener = running.listener("CLIENT")
    address = f"127.0.0.1:{listener.port}"

    def work() -> tuple[list[str], str]:
        admin = AdminClient(client_config(address, "admin"))
        for future in admin.create_topics([NewTopic("via-proxy", 1, 1)]).values():
            future.result(timeout=TIMEOUT)
        alice = AdminClient(client_config(address, "alice"))
        (future,) = alice.create_topics([NewTopic("alice-via-proxy", 1, 1)]).values()
        with pytest.raises(KafkaException) as denied:
            future.result(timeout=TIMEOUT)
        direct = AdminClient(kafka_node.client_config("admin"))
        topics = sorted(direct.list_topics(timeout=TIMEOUT).topics)
        for future in admin.delete_topics(["via-proxy"]).values():
            future.result(timeout=TIMEOUT)
        return topics, str(denied.value.args[0].name())

    topics, alice_error = await trio.to_thread.run_sync(work)
    assert "via-proxy" in topics and "alice-via-proxy" not in topics
    assert alice_error == "TOPIC_AUTHORIZATION_FAILED"


async def test_advertised_versions_are_the_intersection_with_the_real_controller(
    kafka_node: KafkaNode, nursery: Any, tmp_path: Path
) -> None:
    running = await _start_proxy(nursery, kafka_node, tmp_path / "audit")
    address = f"127.0.0.1:{running.listener('PLAIN').port}"

    def versions(target: str) -> dict[int, tuple[int, int]]:
        with wire.connect(target) as sock:
            body = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"}, correlation_id=9)
            return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}

    advertised = await trio.to_thread.run_sync(versions, address)
    controller = await trio.to_thread.run_sync(versions, kafka_node.controller_address)
    upstream = running.service.upstream.controller_ranges
    assert upstream is not None
    assert {k: (r.min, r.max) for k, r in upstream.items()} == controller
    expected = intersect(running.service.own, upstream, FORWARDABLE)
    assert advertised == {k: (r.min, r.max) for k, r in expected.items()}
    for api_key in (19, 20, 30, 31, 33, 37, 44):
        own = running.service.own[api_key]
        assert advertised[api_key] == (max(own.min, controller[api_key][0]), min(own.max, controller[api_key][1]))


async def test_a_proxy_without_cluster_action_gets_a_clear_error_and_a_loud_log(
    kafka_node: KafkaNode, nursery: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The node refuses Envelopes from User:bob (no ClusterAction): the client hears 31, the log says what to grant."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from proxy.net.sasl.login_modules import plain_jaas
    from tests.interop.test_conformance import outcomes

    props = proxy_properties(int(kafka_node.controller_address.rsplit(":", 1)[1]), tmp_path / "audit")
    props.update(kafka_node.proxy_upstream_properties())
    props["listener.name.controller.plain.sasl.jaas.config"] = plain_jaas(username="bob", password="bob-secret")
    # Without Alter on the cluster no controller tells bob the cluster id (DescribeCluster), so the operator names it.
    props["cluster.id"] = kafka_node.cluster_id
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    address = f"127.0.0.1:{running.listener('CLIENT').port}"

    def work() -> list[str]:
        admin = AdminClient(client_config(address, "admin"))
        return outcomes(admin.create_topics([NewTopic("never-created", 1, 1)]))

    assert await trio.to_thread.run_sync(work) == ["CLUSTER_AUTHORIZATION_FAILED"]
    loud = [r.getMessage() for r in caplog.records if r.levelname == "ERROR" and r.name == "proxy.forward.forwarding"]
    assert any("User:bob lacks CLUSTER_ACTION" in m and "--operation ClusterAction --cluster" in m for m in loud), loud
