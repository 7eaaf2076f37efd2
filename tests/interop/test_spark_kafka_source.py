"""The job reading audit records from a topic on a real Kafka node (marker interop).

Spark's Kafka connector is fetched with Maven on first use (spark_audit/kafka_connector.py).
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devkit.kafka_node import KafkaNode
from proxy.net.sasl.login_modules import plain_jaas
from tests.spark_audit.scenario import RECORDS

pytestmark = pytest.mark.interop

REPO_ROOT = Path(__file__).resolve().parents[2]
JOB_TIMEOUT = 900.0
TOPIC = f"spark-audit-{uuid.uuid4().hex[:8]}"  # the node is shared: a topic of this run's own


def _produce(node: KafkaNode, values: list[dict[str, Any] | str]) -> None:
    from confluent_kafka import Producer

    producer = Producer(node.client_config("admin"))
    for value in values:
        producer.produce(TOPIC, (value if isinstance(value, str) else json.dumps(value)).encode())
    assert producer.flush(30) == 0


# One Python process runs the three jobs, as the CLI does (spark_audit.cli.main), in one Spark session started with
# the Kafka connector: three JVM starts and their warm-up would cost more than the jobs.
_JOB_SERVER = """
import json, sys
from spark_audit.cli import main
from spark_audit.kafka_connector import connector_jars
from spark_audit.session import Resources, build_session
build_session("local[2]", jars=connector_jars(None), shuffle_partitions=2, resources=Resources(short_run=True, interpreted=True))  # a few records: see run_size.SMALL_RUN_PARTITIONS
for line in sys.stdin:
    status = main(json.loads(line))
    print(f"EXIT {status}", flush=True)
"""


class _Jobs:
    def __init__(self, node: KafkaNode) -> None:
        self.node = node
        self.process = subprocess.Popen(
            [sys.executable, "-c", _JOB_SERVER], cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, out: Path, *extra: str) -> dict[str, Any]:
        node = self.node
        jaas = plain_jaas(username="admin", password=node.users["admin"])
        argv = [
            *("--kafka-bootstrap-servers", node.broker_address, "--kafka-topic", TOPIC),
            *("--kafka-option", "kafka.security.protocol=SASL_PLAINTEXT", "--kafka-option", "kafka.sasl.mechanism=PLAIN"),
            *("--kafka-option", f"kafka.sasl.jaas.config={jaas}"),
            *("--output", str(out), "--master", "local[2]", "--quiet", *extra),
        ]
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(argv) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + JOB_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], deadline - time.monotonic())
            line = self.process.stdout.readline() if ready else ""
            assert line or ready, f"no job finished within {JOB_TIMEOUT} s"
            assert line, f"the job process ended ({self.process.poll()})"
            if line.startswith("EXIT "):
                assert line.split()[1] == "0", line
                summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
                return summary
        raise AssertionError(f"no job finished within {JOB_TIMEOUT} s")

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)


@pytest.fixture
def jobs(kafka_node: KafkaNode) -> Iterator[_Jobs]:
    runner = _Jobs(kafka_node)
    yield runner
    runner.close()


def test_kafka_topic_batch_and_incremental(kafka_node: KafkaNode, jobs: _Jobs, tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(kafka_node.client_config("admin"))
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
    first, rest = RECORDS[:8], RECORDS[8:]
    _produce(kafka_node, [*first, "not json"])

    one = jobs.run(tmp_path / "inc", "--incremental")

    assert (one["run"]["lines"], one["run"]["malformed"], one["records"]) == (len(first) + 1, 1, len(first))
    assert one["source"] == f"kafka:{TOPIC}@{kafka_node.broker_address}"
    _produce(kafka_node, [*rest, RECORDS[0]])  # RECORDS[0] again: a duplicate

    two = jobs.run(tmp_path / "inc", "--incremental")

    assert two["run"]["lines"] == len(rest) + 1  # only the new messages were read
    assert (two["run"]["duplicates"], two["records"], two["malformed"]) == (1, len(RECORDS), 1)
    quarantine = (tmp_path / "inc" / "quarantine").rglob("*.json")
    origins = [json.loads(line)["origin"] for path in quarantine for line in path.read_text().splitlines()]
    assert len(origins) == 1 and origins[0].startswith(f"kafka:{TOPIC}/")

    batch = jobs.run(tmp_path / "batch")

    assert (batch["mode"], batch["records"], batch["malformed"], batch["duplicates_dropped"], batch["denials"]) == (
        "batch",
        len(RECORDS),
        1,
        1,
        7,
    )
