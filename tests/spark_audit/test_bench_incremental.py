"""Smoke test of bench/audit/run.py --incremental-only: one more day over one and over two days of history
(the bench's own 3 and 9 days are the same steps on more dates; each of its runs is a fresh JVM either way)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark_audit.harness import REPO_ROOT, run_bench

pytestmark = pytest.mark.spark


def test_bench_reruns_one_more_day_over_two_histories(tmp_path: Path) -> None:
    result = run_bench(tmp_path, "--incremental-only", "--histories", "2,1")
    (run,) = result["runs"]
    assert "spark_job" not in run  # no batch job, no batch floors
    incremental = run["incremental"]
    for days in (1, 2):  # one more day over one and over two days of history, at the input's daily rate
        rerun = incremental[f"rerun_{days}d"]
        assert 0 < rerun["summary"]["run"]["lines"] <= rerun["one_more_day"]["lines"]  # blank lines not counted
        assert rerun["summary"]["records"] == rerun["one_more_day"]["history"]["good"] + rerun["one_more_day"]["good"]
    assert incremental["rerun_longest_over_shortest_history"] > 0 and incremental["rerun_over_day_parquet_floor"] > 0
    assert result["targets"]["rerun_2d_over_rerun_1d_1000"]["measured"] == incremental["rerun_longest_over_shortest_history"]
    assert "spark_jobs_1000" not in result["targets"]


@pytest.mark.parametrize("given", ["3", "4,4", "0,2", "three,nine"])
def test_histories_are_two_different_numbers_of_days_or_a_usage_error(given: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "audit" / "run.py"), "--incremental-only", "--histories", given],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "--histories" in proc.stderr and repr(given) in proc.stderr, proc.stderr
