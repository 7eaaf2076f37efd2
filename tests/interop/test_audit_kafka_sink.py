"""The Kafka audit sink against a real Kafka node that is killed and restarted while admin requests go on.

The proxy (embedded controller upstream) writes every record to files and to the
node's audit topic. While the node is down, records are spooled locally and requests
keep being answered; once it is back, the spool is delivered in order. The topic must
then hold every record the proxy wrote (the file sink's copy is the reference), each
at least once and nothing else, with each request's intent before its outcome.
"""

import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from devkit.kafka_node import KafkaNode
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties, start_proxy
from proxy.audit.sinks.kafka import KafkaSink
from proxy.config import parse_proxy_config
from tests.audit_records import assert_valid, records_under

pytestmark = pytest.mark.interop

AUDIT_TOPIC = "envelope-proxy-audit"
TOPIC = {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}


def _create_audit_topic(node: KafkaNode) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(node.client_config())
    for future in admin.create_topics([NewTopic(AUDIT_TOPIC, 1, 1)]).values():
        future.result(timeout=60)


def _admin_work(address: str, prefix: str, count: int) -> list[int]:
    """`count` CreateTopics, each on its own connection (so connection events come and go too)."""
    codes = []
    for n in range(count):
        with wire.connect(address, timeout=60) as sock:
            assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
            body = {"topics": [{"name": f"{prefix}-{n}", **TOPIC}], "timeout": 5000, "validate_only": False}
            codes.append(int(wire.call(sock, ApiKey.CREATE_TOPICS, 5, body, 3).topics[0].error_code))
    return codes


def _consume_all(node: KafkaNode, expected: set[str], timeout: float = 90.0) -> list[tuple[bytes | None, dict[str, Any]]]:
    """(key, record) of every message in the audit topic, read until each expected id was seen (bounded)."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(node.client_config(**{"group.id": f"audit-check-{uuid.uuid4()}", "enable.auto.commit": "false"}))
    consumer.assign([TopicPartition(AUDIT_TOPIC, 0, OFFSET_BEGINNING)])
    messages: list[tuple[bytes | None, dict[str, Any]]] = []
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    idle_polls = 0
    try:
        while time.monotonic() < deadline and (not expected <= seen or idle_polls < 3):
            message = consumer.poll(1.0)
            if message is None:
                idle_polls += 1  # once everything expected is in, a few empty polls show nothing else follows
                continue
            assert message.error() is None, message.error()
            idle_polls = 0
            record = json.loads(message.value())
            messages.append((message.key(), record))
            seen.add(record["id"])
    finally:
        consumer.close()
    return messages


async def test_spooled_records_reach_the_topic_once_kafka_is_back_and_none_are_lost(
    own_kafka_node: KafkaNode, nursery: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="proxy")
    node = own_kafka_node
    await trio.to_thread.run_sync(_create_audit_topic, node)
    controller = EmbeddedController(parse_controller_config(controller_properties()))
    (bound,) = await nursery.start(controller.run)
    props = {
        **proxy_properties(bound.port, tmp_path / "audit"),
        "audit.sinks": "file,kafka",
        "audit.durability": "fsync",
        "audit.kafka.bootstrap.servers": node.broker_address,
        "audit.kafka.topic": AUDIT_TOPIC,
        "audit.kafka.delivery.timeout.ms": "3000",
        "audit.kafka.spool.retry.backoff.ms": "500",
        # passthrough to librdkafka: the node's broker listener wants SASL/PLAIN
        "audit.kafka.producer.security.protocol": "SASL_PLAINTEXT",
        "audit.kafka.producer.sasl.mechanism": "PLAIN",
        "audit.kafka.producer.sasl.username": "admin",
        "audit.kafka.producer.sasl.password": node.users["admin"],
        "audit.kafka.producer.reconnect.backoff.max.ms": "1000",
    }
    run = await start_proxy(nursery, parse_proxy_config(props))
    running = run.running
    address = f"127.0.0.1:{running.listener('CLIENT').port}"
    sink = next(s for s in running.service.audit.sinks if isinstance(s, KafkaSink))

    assert await trio.to_thread.run_sync(_admin_work, address, "before", 3) == [0] * 3
    assert not sink.spooling and sink.spool.empty

    await trio.to_thread.run_sync(node.kill)
    # Requests are still answered while Kafka is away: their records go to the spool.
    assert await trio.to_thread.run_sync(_admin_work, address, "down", 8) == [0] * 8
    assert sink.spooling and sink.spool.records > 0
    spooled_while_down = sink.spool.records

    await trio.to_thread.run_sync(node.restart)
    assert await trio.to_thread.run_sync(_admin_work, address, "after", 3) == [0] * 3
    with trio.fail_after(120):
        while sink.spooling:
            await trio.sleep(0.2)
    assert sink.spool.empty and not any((tmp_path / "audit" / ".kafka-spool").glob("*.jsonl"))
    run.shutdown.set()
    with trio.fail_after(60):
        await run.stopped.wait()

    written = records_under(tmp_path / "audit")  # the file sink's copy of every record the proxy wrote
    expected = {record["id"] for record in written}
    assert len(expected) == len(written) and spooled_while_down <= len(written)
    messages = await trio.to_thread.run_sync(_consume_all, node, expected)
    consumed = [record for _, record in messages]
    assert_valid(consumed)
    delivered = {record["id"] for record in consumed}
    assert delivered - expected == set(), "the topic holds records the proxy never wrote"
    assert expected - delivered == set(), f"{len(expected - delivered)} records never reached Kafka"
    assert all(key == record["data"]["requestId"].encode() for key, record in messages)  # keyed by request id
    first_seen: dict[tuple[str, str], int] = {}
    for index, record in enumerate(consumed):
        first_seen.setdefault((record["data"]["requestId"], record["data"]["stage"]), index)
    for (request_id, stage), index in first_seen.items():
        if stage == "outcome":
            assert first_seen[(request_id, "intent")] < index, "an outcome reached Kafka before its intent"
    assert "spooling records to" in caplog.text and "spool drained" in caplog.text
