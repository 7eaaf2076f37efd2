"""The audit chain through a real Kafka topic: two proxy runs write through the Kafka sink, the second continuing the
first; `audit verify --topic` finds the trail whole (also spread over partitions), and finds and locates each way of
tampering with a copy of the topic."""

import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from devkit.kafka_node import KafkaNode
from envelope_proxy.audit_verify_cli import main as verify_main
from envelope_proxy.audit_verify_cli import topic_lines
from tests.proxy.audit.chain_trail import write_key_pair, write_run

pytestmark = pytest.mark.interop

RECORDS = 20
TIMEOUT_S = 60.0


def _create(node: KafkaNode, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(node.client_config())
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=TIMEOUT_S)


def _produce(node: KafkaNode, topic: str, values: list[bytes], *, by_key: bool = False) -> None:
    from confluent_kafka import Producer

    producer = Producer(node.client_config())
    for index, value in enumerate(values):
        producer.produce(topic, value, key=str(index).encode() if by_key else None)
    assert producer.flush(TIMEOUT_S) == 0


def _properties(node: KafkaNode) -> list[str]:
    return [f"--kafka-property={key}={value}" for key, value in node.client_config().items() if key != "bootstrap.servers"]


def _verify(node: KafkaNode, topic: str, public: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, object]]]:
    code = verify_main(["--bootstrap-server", node.broker_address, "--topic", topic, "--public-key", str(public), "--json", *_properties(node)])
    report = json.loads(capsys.readouterr().out)
    return code, {writer["writer"].split("/")[1]: writer for writer in report["writers"]}


def _seq(value: bytes) -> int:
    seq: int = json.loads(value)["chainseq"]
    return seq


def _writer_1(values: list[bytes]) -> list[int]:
    return [index for index, value in enumerate(values) if json.loads(value)["source"].startswith("envelope-proxy/1/")]


def _edit(values: list[bytes], index: int) -> list[bytes]:
    record = json.loads(values[index])
    record["data"]["authenticationInfo"]["principal"] = "User:mallory"
    return [*values[:index], json.dumps(record, separators=(",", ":")).encode(), *values[index + 1 :]]


def test_a_kafka_trail_verifies_and_each_tampering_is_located(kafka_node: KafkaNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private, public = write_key_pair(tmp_path)
    topic = f"audit-chain-{uuid.uuid4().hex[:8]}"
    _create(kafka_node, topic, 1)
    sink = {"audit.sinks": "kafka", "audit.kafka.bootstrap.servers": kafka_node.broker_address, "audit.kafka.topic": topic}
    sink.update({f"audit.kafka.producer.{key}": value for key, value in kafka_node.client_config().items() if key != "bootstrap.servers"})

    async def two_runs() -> None:
        await write_run(tmp_path / "audit", private, 1, RECORDS, extra=sink)
        await write_run(tmp_path / "audit", private, 2, RECORDS, extra=sink)

    trio.run(two_runs)
    code, writers = _verify(kafka_node, topic, public, capsys)
    assert code == 0 and writers["2"]["continues"]["source"] == writers["1"]["writer"], writers
    values = [line.data for line in topic_lines(kafka_node.broker_address, topic, dict(kafka_node.client_config()), TIMEOUT_S)]
    first = _writer_1(values)
    middle, late = first[len(first) // 2], first[-3:]
    tampering: dict[str, tuple[Callable[[list[bytes]], list[bytes]], Callable[[dict[str, object]], bool]]] = {
        "spread over partitions": (lambda v: v, lambda w: w["status"] == "whole"),
        "delete line": (lambda v: v[:middle] + v[middle + 1 :], lambda w: w["missing"] == [[_seq(values[middle])] * 2]),
        "delete a range": (lambda v: v[:middle] + v[middle + 4 :], lambda w: w["missing"] == [[_seq(values[middle]), _seq(values[middle]) + 3]]),
        "edit principal": (lambda v: _edit(v, middle), lambda w: w["modified"] == [_seq(values[middle])]),
        "reorder": (lambda v: [*v[:middle], v[middle + 1], v[middle], *v[middle + 2 :]], lambda w: w["reordered"] == [_seq(values[middle])]),
        "truncate tail": (lambda v: [x for i, x in enumerate(v) if i not in late], lambda w: w["missing"] == [[_seq(values[late[0]]), _seq(values[late[-1]])]]),
    }
    for name, (tamper, located) in tampering.items():
        copy = f"{topic}-{name.replace(' ', '-')}"
        spread = name == "spread over partitions"
        _create(kafka_node, copy, 3 if spread else 1)
        _produce(kafka_node, copy, tamper(values), by_key=spread)
        code, writers = _verify(kafka_node, copy, public, capsys)
        assert code == (0 if spread else 1), (name, writers)
        assert located(writers["1"]), (name, writers["1"])
        assert writers["2"]["status"] == "whole", (name, writers["2"])
