"""Requests `envelope-proxy authz probe` and `authz replay` sent (``data.probe``) are no client's traffic:
the reports leave them out and the summary counts them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from pyspark.sql import SparkSession

from spark_audit import request_reports
from spark_audit.options import JobOptions
from spark_audit.pipeline import run
from tests.spark_audit.records import err, request, write_jsonl
from tests.spark_audit.scenario import RECORDS, flat_of

pytestmark = pytest.mark.spark

#: A principal, an address and an API that only the probes use: any row naming one of them came from a probe.
PROBE_PRINCIPAL = "User:probed"
PROBE_ADDRESS = "10.9.9.9"
PROBE_METHOD, PROBE_API_KEY = "kafka.CreatePartitions", 37
PROBE_VALUES = frozenset({PROBE_PRINCIPAL, PROBE_ADDRESS, PROBE_METHOD})
#: The first record id of the probes, past the scenario's.
FIRST_ID = 900
#: What the scenario's records alone give (tests/spark_audit/test_job.py counts the same records).
SCENARIO_REQUESTS = 11
SCENARIO_DENIALS = 7


def probe_records() -> list[dict[str, Any]]:
    """Two probes, each an intent and an outcome: one allowed, one denied; each with ``data.probe``."""
    records: list[dict[str, Any]] = []
    n = FIRST_ID
    for case, (status, code, errors) in enumerate(
        (("SUCCESS", 0, ()), ("FAILURE", 0, (err(ErrorCode.topic_authorization_failed, "TOPIC_AUTHORIZATION_FAILED"),))), start=1
    ):
        for stage in ("intent", "outcome"):
            record = request(
                n,
                f"2026-11-21T10:01:0{case}.000Z",
                f"probe-{case}",
                stage,
                principal=PROBE_PRINCIPAL,
                client=PROBE_ADDRESS,
                method=PROBE_METHOD,
                api_key=PROBE_API_KEY,
                status=status,
                error_code=code,
                errors=errors,
                version=3,
            )
            record["data"]["probe"] = {"command": "authz probe", "case": f"cases.jsonl:{case}"}
            records.append(record)
            n += 1
    return records


def test_a_report_over_the_records_leaves_probes_out(spark: SparkSession) -> None:
    flat = flat_of(spark, [*RECORDS, *probe_records()])
    assert flat.filter("isProbe").count() == len(probe_records())
    report = request_reports.requests_by_principal_method_outcome(flat)
    assert report.filter(report.principal == PROBE_PRINCIPAL).count() == 0
    assert sum(row["count"] for row in report.collect()) == SCENARIO_REQUESTS


def test_the_job_counts_probes_in_the_summary_and_in_no_report(spark: SparkSession, tmp_path: Path) -> None:
    source, out = tmp_path / "audit", tmp_path / "out"
    write_jsonl(source / "audit-1-20261121T100000Z-000001.jsonl", [*RECORDS, *probe_records()])

    summary = run(None, str(out), spark=spark, options=JobOptions(input=str(source), print_report=False))

    assert summary["probes"] == 2
    assert summary["records"] == len(RECORDS) + len(probe_records())
    assert (summary["requests"], summary["denials"]) == (SCENARIO_REQUESTS, SCENARIO_DENIALS)
    for name in ("requests", "who_did_what", "denials", "denial_ranking", "impersonation", "first_seen_pairs", "latency"):
        rows = spark.read.parquet(str(out / "reports" / name)).collect()
        assert rows, name
        assert not [row for row in rows if PROBE_VALUES & {v for v in row.asDict().values() if isinstance(v, str)}], name
    assert "authz probe or replay" in (out / "report.html").read_text()
