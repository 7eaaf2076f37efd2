"""Smoke test of bench/audit/run.py: a thousand records, one JSON object out (its incremental reruns:
test_bench_incremental.py, a file of its own so that the two run side by side)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.spark_audit.harness import bench_generator, run_bench

pytestmark = pytest.mark.spark

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_bench_prints_json(tmp_path: Path) -> None:
    # --compare checks Spark's reports against DuckDB's (the bench extra); without DuckDB it would only time a Spark run.
    compare = importlib.util.find_spec("duckdb") is not None
    result = run_bench(tmp_path, *(["--compare"] if compare else []))
    for run in result["runs"]:
        given = run["input"]
        assert given["good"] + given["malformed"] + given["blank"] + given["duplicates"] == run["records"]
        # each floor a process of its own (a fresh JVM), measured as the job's process is
        for step in ("session_start", "ingest_floor", "parquet_floor", "spark_job", *(["spark_reports"] if compare else [])):
            assert run[step]["records_per_second"] > 0 and run[step]["peak_rss_mb"] > 0, step
        # counted from the job's event log, not from the job's own word
        assert 0 < run["spark_job"]["spark_jobs"] <= result["targets"]["spark_jobs_1000"]["target"]
        assert result["targets"]["spark_jobs_1000"]["met"] is True
        assert run["spark_job"]["summary"]["records"] == given["good"]
        assert run["spark_job"]["summary"]["malformed"] == given["malformed"]
        assert run["ratios"]["job_over_ingest_floor"] > 0 and run["ratios"]["job_cpu_over_ingest_floor_cpu"] > 0
        if compare:
            assert run["results_match"]["latency_requests_per_api"] is True
            assert run["results_match"]["denials_by_principal"] is True


def test_synthetic_records_match_the_proxys_schema() -> None:
    from proxy.audit.cloudevents import SCHEMA_VERSION
    from tests.audit_records import schema_errors

    generate = bench_generator()
    records = list(generate.Generator(seed=3, traffic=generate.Traffic(brute_force=0.02)).records(3000))
    assert len(records) == 3000
    assert {record["data"]["stage"] for record in records} >= {"intent", "outcome", "local", "authentication-failed"}
    # The generator writes version 2 (the job reads every version since); the shape is checked against the
    # schema of the version the proxy writes today, which every field of version 2 still holds.
    assert [error for record in records for error in schema_errors({**record, "schemaversion": SCHEMA_VERSION})] == []


def test_generated_directory_has_the_shape_of_real_traffic(tmp_path: Path) -> None:
    from collections import Counter

    generate = bench_generator()

    counts = generate.write(tmp_path, 30_000, seed=5, traffic=generate.Traffic(days=2, nodes=3, malformed=0.01, blank=0.01))

    files = sorted(tmp_path.glob("*.jsonl"))
    lines = [line for path in files for line in path.read_text().splitlines()]
    assert len(lines) == 30_000 == counts.records + counts.malformed + counts.blank + counts.duplicates
    # hourly files of every node over the days
    nodes = Counter(path.name.split("-")[1] for path in files)
    assert set(nodes) == {"100", "101", "102"} and all(n >= 40 for n in nodes.values())
    assert sum(1 for line in lines if not line.strip()) == counts.blank > 0
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    ids = Counter(record["id"] for record in records if "id" in record)
    assert sum(n - 1 for n in ids.values() if n > 1) == counts.duplicates > 0
    principals = Counter(record["data"]["authenticationInfo"]["principal"] for record in records)
    top = principals.most_common(1)[0][1]
    assert len(principals) > 100 and top > 20 * sorted(principals.values())[len(principals) // 2]  # skewed
    stages = Counter(record["data"]["stage"] for record in records)
    assert set(stages) >= {
        "intent",
        "outcome",
        "read",
        "local",
        "refused",
        "connected",
        "authenticated",
        "authentication-failed",
        "disconnected",
    }
    assert {record["data"]["authenticationInfo"]["listener"] for record in records} == {"CLIENT", "INTERNAL", "MTLS", "LEGACY"}
    assert {record["data"]["forwardingPrincipal"] for record in records if record["data"]["stage"] == "intent"} == {"User:envelope-proxy"}
    by_request = Counter(
        (record["data"]["requestId"], record["data"]["stage"]) for record in records if record["data"]["stage"] in ("intent", "outcome")
    )
    request_ids = {rid for rid, _ in by_request}
    assert any((rid, "intent") not in by_request for rid in request_ids)  # an outcome without its intent
    assert any((rid, "outcome") not in by_request for rid in request_ids)  # an intent without its outcome
    assert counts.extra["lost_intents"] > 0 and counts.extra["lost_outcomes"] > 0
