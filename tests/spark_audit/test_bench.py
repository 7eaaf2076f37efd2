"""Smoke test of bench/audit/run.py: a thousand records, one JSON object out."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_bench_prints_json(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "audit" / "run.py"),
            "--records",
            "1000",
            "--workdir",
            str(tmp_path),
            "--master",
            "local[2]",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )

    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["records"] == 1000
    assert result["input"]["good"] + result["input"]["malformed"] + result["input"]["duplicates"] == 1000
    for step in ("spark_job", "spark_reports"):
        assert result[step]["records_per_second"] > 0 and result[step]["peak_rss_mb"] > 0
    assert result["spark_job"]["summary"]["records"] == result["input"]["good"]
    if importlib.util.find_spec("duckdb") is not None:
        assert result["results_match"]["latency_requests_per_api"] is True
        assert result["results_match"]["denials_by_principal"] is True


def test_synthetic_records_match_the_proxys_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util as util

    from tests.audit_records import schema_errors

    spec = util.spec_from_file_location("bench_generate", REPO_ROOT / "bench" / "audit" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_generate", generate)  # dataclasses look their module up there
    spec.loader.exec_module(generate)
    records = list(generate.Generator(seed=3).records(3000))
    assert len(records) == 3000
    assert {record["data"]["stage"] for record in records} >= {"intent", "outcome", "local", "authentication-failed"}
    assert [error for record in records for error in schema_errors(record)] == []
