"""The job reading audit records from a topic on a real Kafka node (marker interop).

Spark's Kafka connector is fetched with Maven on first use (spark_audit/kafka_connector.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.interop.kafka_node import KafkaNode
from tests.spark_audit.scenario import RECORDS

pytestmark = pytest.mark.interop

REPO_ROOT = Path(__file__).resolve().parents[2]
TOPIC = f"spark-audit-{uuid.uuid4().hex[:8]}"  # the node is shared: a topic of this run's own


def _produce(node: KafkaNode, values: list[dict[str, Any] | str]) -> None:
    from confluent_kafka import Producer

    producer = Producer(node.client_config("admin"))
    for value in values:
        producer.produce(TOPIC, (value if isinstance(value, str) else json.dumps(value)).encode())
    assert producer.flush(30) == 0


def _job(node: KafkaNode, out: Path, *extra: str) -> dict[str, Any]:
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="{node.users["admin"]}";'
    command = [
        sys.executable,
        "-m",
        "spark_audit",
        "--kafka-bootstrap-servers",
        node.broker_address,
        "--kafka-topic",
        TOPIC,
        "--kafka-option",
        "kafka.security.protocol=SASL_PLAINTEXT",
        "--kafka-option",
        "kafka.sasl.mechanism=PLAIN",
        "--kafka-option",
        f"kafka.sasl.jaas.config={jaas}",
        "--output",
        str(out),
        "--master",
        "local[2]",
        "--quiet",
        *extra,
    ]
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_kafka_topic_batch_and_incremental(kafka_node: KafkaNode, tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(kafka_node.client_config("admin"))
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
    first, rest = RECORDS[:8], RECORDS[8:]
    _produce(kafka_node, [*first, "not json"])

    one = _job(kafka_node, tmp_path / "inc", "--incremental")

    assert (one["run"]["lines"], one["run"]["malformed"], one["records"]) == (len(first) + 1, 1, len(first))
    assert one["source"] == f"kafka:{TOPIC}@{kafka_node.broker_address}"
    _produce(kafka_node, [*rest, RECORDS[0]])  # RECORDS[0] again: a duplicate

    two = _job(kafka_node, tmp_path / "inc", "--incremental")

    assert two["run"]["lines"] == len(rest) + 1  # only the new messages were read
    assert (two["run"]["duplicates"], two["records"], two["malformed"]) == (1, len(RECORDS), 1)
    quarantine = (tmp_path / "inc" / "quarantine").rglob("*.json")
    origins = [json.loads(line)["origin"] for path in quarantine for line in path.read_text().splitlines()]
    assert len(origins) == 1 and origins[0].startswith(f"kafka:{TOPIC}/")

    batch = _job(kafka_node, tmp_path / "batch")

    assert (batch["mode"], batch["records"], batch["malformed"], batch["duplicates_dropped"], batch["denials"]) == (
        "batch",
        len(RECORDS),
        1,
        1,
        7,
    )
