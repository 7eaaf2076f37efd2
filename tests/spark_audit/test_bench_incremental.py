"""Smoke test of bench/audit/run.py --incremental-only: one more day over three and over nine days of history."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark_audit.harness import run_bench

pytestmark = pytest.mark.spark


def test_bench_reruns_one_more_day_over_two_histories(tmp_path: Path) -> None:
    result = run_bench(tmp_path, "--incremental-only")
    (run,) = result["runs"]
    assert "spark_job" not in run  # no batch job, no batch floors
    incremental = run["incremental"]
    for days in (3, 9):  # one more day over three and over nine days of history, at the input's daily rate
        rerun = incremental[f"rerun_{days}d"]
        assert 0 < rerun["summary"]["run"]["lines"] <= rerun["one_more_day"]["lines"]  # blank lines not counted
        assert rerun["summary"]["records"] == rerun["one_more_day"]["history"]["good"] + rerun["one_more_day"]["good"]
    assert incremental["rerun_longest_over_shortest_history"] > 0 and incremental["rerun_over_day_parquet_floor"] > 0
    assert result["targets"]["rerun_9d_over_rerun_3d_1000"]["measured"] == incremental["rerun_longest_over_shortest_history"]
    assert "spark_jobs_1000" not in result["targets"]
