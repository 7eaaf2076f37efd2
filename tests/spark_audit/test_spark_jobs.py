"""A batch run starts a small, fixed number of Spark jobs, whatever its input's size (issue 55)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_audit.options import JobOptions
from spark_audit.pipeline import run
from tests.spark_audit.harness import bench_generator, edge_case_traffic
from tests.spark_audit.records import write_jsonl
from tests.spark_audit.scenario import RECORDS

pytestmark = pytest.mark.spark

#: The issue's bound on the Spark jobs of a batch run.
MOST_JOBS = 20
#: Two sizes four times apart, each holding every edge case (duplicates, malformed lines, bursts): the cost of a
#: run must not grow in jobs with its input, and the smaller is the one where a fixed cost shows.
SIZES = (1_500, 6_000)


def _jobs(spark: SparkSession, tmp_path: Path, lines: int) -> tuple[int, dict[str, object]]:
    source, out = tmp_path / f"audit-{lines}", tmp_path / f"out-{lines}"
    traffic = edge_case_traffic(days=2, nodes=2, principals=12, topics=30, addresses=20)
    bench_generator().write(source, lines, seed=lines, traffic=traffic)
    summary = run(str(source), str(out), spark=spark, options=JobOptions(html=True, print_report=False))
    jobs = summary["spark_jobs"]
    assert isinstance(jobs, int)
    return jobs, summary


def test_a_batch_run_starts_at_most_twenty_spark_jobs_at_either_size(spark: SparkSession, tmp_path: Path) -> None:
    counts = []
    for lines in SIZES:
        jobs, summary = _jobs(spark, tmp_path, lines)
        # every path that costs a job of its own is taken: repeated ids, quarantined lines, bursts
        assert summary["duplicates_dropped"] and summary["malformed"] and summary["bursts"]
        counts.append(jobs)
    assert all(0 < jobs <= MOST_JOBS for jobs in counts), counts
    assert counts[0] == counts[1], counts


def test_a_rerun_in_the_same_session_compiles_little_code_again(spark: SparkSession, tmp_path: Path) -> None:
    # Janino compiles, counted by Spark's own codegen metrics; with Spark's default cache of 100 generated classes a
    # rerun of this input compiled about 380 sources again, and about 40 with the job's (spark_audit/session.py CODEGEN_CACHE_ENTRIES)
    compiles = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    source = write_jsonl(tmp_path / "audit" / "audit-1.jsonl", RECORDS).parent
    options = JobOptions(html=True, print_report=False)
    first = run(str(source), str(tmp_path / "first"), spark=spark, options=options)
    before = compiles.getCount()
    again = run(str(source), str(tmp_path / "again"), spark=spark, options=options)
    compiled_again = compiles.getCount() - before
    assert again["requests"] == first["requests"] > 0
    assert compiled_again < 150, compiled_again
