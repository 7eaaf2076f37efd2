"""Tests of the spark_audit job against a real local Spark session."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_audit import job
from spark_audit.schema import AUDIT_SCHEMA, CORRUPT_RECORD_COLUMN, DATA

pytestmark = pytest.mark.spark

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = REPO_ROOT / "tests" / "fixtures" / "audit-sample.jsonl"

REQUESTS_SCHEMA = "principal string, method string, status string, count long"
DENIALS_SCHEMA = (
    "time timestamp, principal string, clientAddress string, method string, subject string, errorCode int, errorName string, status string"
)


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    session = job.build_session("local[2]")
    yield session
    session.stop()


# --------------------------------------------------------------------------- helpers


def record(
    n: int,
    time: str,
    request_id: str,
    stage: str,
    *,
    principal: str = "User:alice",
    method: str = "kafka.CreateTopics",
    subject: str | None = "topic:orders",
    status: str | None = None,
    error_code: int | None = 0,
    errors: Sequence[dict[str, Any]] = (),
    client: str = "127.0.0.1",
) -> dict[str, Any]:
    """A schema-conforming audit record; ``result`` is null for intents."""
    result = None
    if stage != "intent":
        result = {
            "status": status,
            "envelopeErrorCode": 0,
            "errorCode": error_code,
            "errors": list(errors),
        }
    return {
        "specversion": "1.0",
        "id": f"00000000-0000-0000-0000-{n:012d}",
        "type": "io.github.kafka-envelope-proxy.request",
        "source": "envelope-proxy/1",
        "time": time,
        "subject": subject,
        "datacontenttype": "application/json",
        "schemaversion": 1,
        "data": {
            "requestId": request_id,
            "stage": stage,
            "methodName": method,
            "apiKey": 19,
            "apiVersion": 5,
            "authenticationInfo": {
                "principal": principal,
                "mechanism": "PLAIN",
                "listener": "CLIENT",
                "securityProtocol": "SASL_PLAINTEXT",
            },
            "forwardingPrincipal": "User:proxy",
            "requestMetadata": {
                "clientAddress": client,
                "clientPort": 50000 + n,
                "clientId": "admin",
                "clientSoftwareName": None,
                "clientSoftwareVersion": None,
                "correlationId": n,
                "connectionId": f"c-{n}",
            },
            "resources": [],
            "authorizationInfo": None,
            "result": result,
            "timings": None if stage == "intent" else {"queueMs": 0.1, "upstreamMs": 1.0, "totalMs": 1.2},
            "upstream": {"address": "127.0.0.1:9093", "nodeId": 1},
        },
    }


def err(code: int, name: str, resource: str = "orders") -> dict[str, Any]:
    return {"resource": resource, "errorCode": code, "errorName": name, "message": "m"}


def write_jsonl(path: Path, lines: Sequence[dict[str, Any] | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(line if isinstance(line, str) else json.dumps(line))
            f.write("\n")
    return path


def sample_dir(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(SAMPLE, d / "audit-1-20261121T100000Z-0.jsonl")
    return d


def ts(s: str) -> datetime:
    """Naive datetime as PySpark returns it for a UTC instant (tests run with TZ of the host)."""
    return datetime.fromisoformat(s).astimezone().replace(tzinfo=None)


def ids(df: DataFrame) -> list[str]:
    return sorted(r["id"] for r in df.select("id").collect())


# Hand-made requests covering the report rules.
HAND_MADE: list[dict[str, Any] | str] = [
    # r1: alice creates orders, success (intent + outcome).
    record(1, "2026-11-21T10:00:00.000Z", "r1", "intent"),
    record(2, "2026-11-21T10:00:00.010Z", "r1", "outcome", status="SUCCESS"),
    # r2: alice again, success; the outcome is written twice under different ids.
    record(3, "2026-11-21T10:00:01.000Z", "r2", "outcome", status="SUCCESS"),
    record(4, "2026-11-21T10:00:01.000Z", "r2", "outcome", status="SUCCESS"),
    # r3: intent only (no outcome yet) -> not a request in the report.
    record(5, "2026-11-21T10:00:02.000Z", "r3", "intent", principal="User:carol"),
    # r4: bob, per-resource failure that is not an authorization failure -> not a denial.
    record(
        6,
        "2026-11-21T10:00:03.000Z",
        "r4",
        "outcome",
        principal="User:bob",
        status="FAILURE",
        errors=[err(36, "TOPIC_ALREADY_EXISTS")],
    ),
    # r5: bob, one resource exists, one is not authorized -> denial with code 29.
    record(
        7,
        "2026-11-21T10:00:05.000Z",
        "r5",
        "outcome",
        principal="User:bob",
        status="FAILURE",
        errors=[
            err(36, "TOPIC_ALREADY_EXISTS"),
            err(29, "TOPIC_AUTHORIZATION_FAILED", "pay"),
        ],
    ),
    # r6: bob, top-level cluster authorization failure -> denial with code 31.
    record(
        8,
        "2026-11-21T10:00:04.000Z",
        "r6",
        "outcome",
        principal="User:bob",
        method="kafka.AlterConfigs",
        subject="cluster:kafka-cluster",
        status="FAILURE",
        error_code=31,
    ),
    # r7: mallory refused by the proxy (code 42) -> denial.
    record(
        9,
        "2026-11-21T10:00:06.000Z",
        "r7",
        "refused",
        principal="User:mallory",
        method="kafka.Envelope",
        subject=None,
        status="REFUSED",
        error_code=42,
        client="10.0.0.9",
    ),
    # r8: envelope error -> counted, not a denial.
    record(
        10,
        "2026-11-21T10:00:07.000Z",
        "r8",
        "outcome",
        principal="User:mallory",
        method="kafka.Envelope",
        status="ERROR",
        error_code=None,
    ),
]


# --------------------------------------------------------------------------- schema


def test_schema_has_every_documented_field() -> None:
    assert AUDIT_SCHEMA.fieldNames() == [
        "specversion",
        "id",
        "type",
        "source",
        "time",
        "subject",
        "datacontenttype",
        "schemaversion",
        "data",
        CORRUPT_RECORD_COLUMN,
    ]
    assert DATA.fieldNames() == [
        "requestId",
        "stage",
        "methodName",
        "apiKey",
        "apiVersion",
        "authenticationInfo",
        "forwardingPrincipal",
        "requestMetadata",
        "resources",
        "authorizationInfo",
        "result",
        "timings",
        "upstream",
    ]
    result = DATA["result"].dataType
    assert result.fieldNames() == ["status", "envelopeErrorCode", "errorCode", "errors"]  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- reading


def test_read_audit_counts_malformed_and_drops_duplicates(spark: SparkSession, tmp_path: Path) -> None:
    records, malformed = job.read_audit(spark, str(sample_dir(tmp_path)))

    assert malformed == 1
    assert CORRUPT_RECORD_COLUMN not in records.columns
    assert ids(records) == [f"8f0a3c44-0d67-4f7e-9d8e-00000000000{i}" for i in range(1, 6)]
    # Fields are parsed with the explicit schema, including the timestamp.
    row = records.filter("id like '%0005'").select("time", "data.result.errorCode", "subject").first()
    assert row is not None
    assert (row["time"], row["errorCode"], row["subject"]) == (
        ts("2026-11-21T10:00:02.000Z"),
        42,
        None,
    )


def test_read_audit_ignores_staging_and_other_files(spark: SparkSession, tmp_path: Path) -> None:
    d = tmp_path / "in"
    write_jsonl(d / "a.jsonl", [record(1, "2026-11-21T10:00:00.000Z", "r1", "intent")])
    write_jsonl(
        d / ".staging" / "b.jsonl",
        [record(2, "2026-11-21T10:00:00.000Z", "r2", "intent"), "bad"],
    )
    write_jsonl(d / "notes.txt", ["not json either"])

    records, malformed = job.read_audit(spark, str(d))

    assert ids(records) == ["00000000-0000-0000-0000-000000000001"]
    assert malformed == 0


def test_read_audit_treats_wrongly_typed_line_as_malformed(spark: SparkSession, tmp_path: Path) -> None:
    bad = record(2, "2026-11-21T10:00:00.000Z", "r2", "intent")
    bad["data"]["apiKey"] = "nineteen"
    d = tmp_path / "in"
    write_jsonl(d / "a.jsonl", [record(1, "2026-11-21T10:00:00.000Z", "r1", "intent"), bad])

    records, malformed = job.read_audit(spark, str(d))

    assert malformed == 1
    assert ids(records) == ["00000000-0000-0000-0000-000000000001"]


def test_read_audit_empty_dir(spark: SparkSession, tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    records, malformed = job.read_audit(spark, str(d))
    assert (records.count(), malformed) == (0, 0)


# --------------------------------------------------------------------------- reports


def test_requests_report_on_sample(spark: SparkSession, tmp_path: Path) -> None:
    records, _ = job.read_audit(spark, str(sample_dir(tmp_path)))

    expected = spark.createDataFrame(
        [
            ("User:alice", "kafka.CreateTopics", "SUCCESS", 1),
            ("User:bob", "kafka.CreateTopics", "FAILURE", 1),
            ("User:mallory", "kafka.Envelope", "REFUSED", 1),
        ],
        REQUESTS_SCHEMA,
    )
    assertDataFrameEqual(job.requests_by_principal_method_outcome(records), expected, checkRowOrder=True)


def test_requests_report_counts_each_finished_request_once(spark: SparkSession, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "in" / "a.jsonl", HAND_MADE)
    records, _ = job.read_audit(spark, str(tmp_path / "in"))

    expected = spark.createDataFrame(
        [
            ("User:alice", "kafka.CreateTopics", "SUCCESS", 2),
            ("User:bob", "kafka.AlterConfigs", "FAILURE", 1),
            ("User:bob", "kafka.CreateTopics", "FAILURE", 2),
            ("User:mallory", "kafka.Envelope", "ERROR", 1),
            ("User:mallory", "kafka.Envelope", "REFUSED", 1),
        ],
        REQUESTS_SCHEMA,
    )
    assertDataFrameEqual(job.requests_by_principal_method_outcome(records), expected, checkRowOrder=True)


def test_denials_on_sample(spark: SparkSession, tmp_path: Path) -> None:
    records, _ = job.read_audit(spark, str(sample_dir(tmp_path)))

    expected = spark.createDataFrame(
        [
            (
                ts("2026-11-21T10:00:01.040Z"),
                "User:bob",
                "127.0.0.1",
                "kafka.CreateTopics",
                "topic:payments",
                29,
                "TOPIC_AUTHORIZATION_FAILED",
                "FAILURE",
            ),
            (
                ts("2026-11-21T10:00:02.000Z"),
                "User:mallory",
                "127.0.0.9",
                "kafka.Envelope",
                None,
                42,
                "INVALID_REQUEST",
                "REFUSED",
            ),
        ],
        DENIALS_SCHEMA,
    )
    assertDataFrameEqual(job.denials(records), expected, checkRowOrder=True)


def test_denials_rules_and_order(spark: SparkSession, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "in" / "a.jsonl", HAND_MADE)
    records, _ = job.read_audit(spark, str(tmp_path / "in"))

    expected = spark.createDataFrame(
        [
            (
                ts("2026-11-21T10:00:04.000Z"),
                "User:bob",
                "127.0.0.1",
                "kafka.AlterConfigs",
                "cluster:kafka-cluster",
                31,
                "CLUSTER_AUTHORIZATION_FAILED",
                "FAILURE",
            ),
            (
                ts("2026-11-21T10:00:05.000Z"),
                "User:bob",
                "127.0.0.1",
                "kafka.CreateTopics",
                "topic:orders",
                29,
                "TOPIC_AUTHORIZATION_FAILED",
                "FAILURE",
            ),
            (
                ts("2026-11-21T10:00:06.000Z"),
                "User:mallory",
                "10.0.0.9",
                "kafka.Envelope",
                None,
                42,
                "INVALID_REQUEST",
                "REFUSED",
            ),
        ],
        DENIALS_SCHEMA,
    )
    assertDataFrameEqual(job.denials(records), expected, checkRowOrder=True)


# --------------------------------------------------------------------------- run / main


def test_run_writes_parquet_quarantine_and_summary(spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = sample_dir(tmp_path)
    # One more record on the next UTC day, to get a second date partition.
    write_jsonl(
        d / "audit-1-20261122T000000Z-1.jsonl",
        [record(99, "2026-11-22T00:00:00.001Z", "r99", "intent")],
    )
    out = tmp_path / "out"

    summary = job.run(str(d), str(out), spark=spark)

    expected_summary = {
        "records": 6,
        "malformed": 1,
        "duplicates_dropped": 1,
        "requests": 3,
        "denials": 2,
    }
    assert summary == expected_summary
    assert json.loads((out / "summary.json").read_text()) == expected_summary

    parquet = spark.read.parquet(str(out / "records"))
    assert sorted(p.name for p in (out / "records").glob("date=*")) == [
        "date=2026-11-21",
        "date=2026-11-22",
    ]
    by_date = {r["date"]: r["count"] for r in parquet.groupBy("date").count().collect()}
    assert by_date == {date(2026, 11, 21): 5, date(2026, 11, 22): 1}
    assert parquet.select("id").distinct().count() == 6
    assert CORRUPT_RECORD_COLUMN not in parquet.columns

    quarantined = [r["value"] for r in spark.read.text(str(out / "quarantine")).collect()]
    assert quarantined == ["this is not json {{{"]

    stdout = capsys.readouterr().out
    assert "malformed lines: 1" in stdout
    assert "Denials (2)" in stdout
    lines = stdout.splitlines()
    assert any(line.split() == ["User:alice", "kafka.CreateTopics", "SUCCESS", "1"] for line in lines)
    assert any(
        line.split()
        == [
            "2026-11-21T10:00:02.000Z",
            "User:mallory",
            "127.0.0.9",
            "kafka.Envelope",
            "-",
            "42",
            "INVALID_REQUEST",
            "REFUSED",
        ]
        for line in lines
    )


def test_main_runs_job_and_keeps_callers_session(spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = sample_dir(tmp_path)
    out = tmp_path / "out"

    assert job.main(["--input", str(d), "--output", str(out), "--master", "local[2]"]) == 0

    assert json.loads((out / "summary.json").read_text())["malformed"] == 1
    assert "malformed lines: 1" in capsys.readouterr().out
    # main() did not stop the session it did not create.
    assert spark.range(3).count() == 3


def test_main_missing_input_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope"

    assert job.main(["--input", str(missing), "--output", str(tmp_path / "out")]) == 2

    err = capsys.readouterr().err
    assert str(missing) in err
    assert "does not exist" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "command",
    [["-m", "spark_audit"], [str(REPO_ROOT / "spark_audit" / "job.py")]],
    ids=["python -m spark_audit", "script path (spark-submit style)"],
)
def test_command_line_entry_points(command: list[str], tmp_path: Path) -> None:
    # A missing input dir exits before Spark starts, so this only checks the
    # entry points (imports, argument parsing, exit code) and stays fast.
    missing = tmp_path / "nope"
    proc = subprocess.run(
        [
            sys.executable,
            *command,
            "--input",
            str(missing),
            "--output",
            str(tmp_path / "out"),
        ],
        cwd=REPO_ROOT if command[0] == "-m" else tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert str(missing) in proc.stderr
