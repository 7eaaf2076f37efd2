"""The job submitted with spark-submit to a standalone master and two workers on loopback, against local mode.

Both runs get the same realistic input (bench/audit's generator, edge cases included) and the same
options (the what-if replay included, so Python runs on the executors); every output must be the
same: the store, the quarantine, each report and what-if table row for row, and summary.json.
The cluster's run interprets Spark's expressions, as the job chooses for so little input
(spark_audit/run_size.py); the local run compiles them, so the two ways agree as well.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_audit import run_size
from spark_audit.cli import options_from, parser
from spark_audit.layout import REPORT_NAMES
from spark_audit.pipeline import run
from spark_audit.session import EXPRESSION_FACTORY
from tests.spark_audit.harness import REPO_ROOT, bench_generator, edge_case_traffic
from tests.spark_audit.records import write_jsonl
from tests.spark_audit.standalone import SHORT_LIVED_JVM, SPARK_HOME, standalone_cluster, tasks_started

pytestmark = pytest.mark.spark

#: Every Parquet table the job writes (reports, store, what-if).
TABLES = (
    "records",
    *(f"reports/{name}" for name in REPORT_NAMES),
    "whatif/changes",
    "whatif/counts",
)
#: summary.json keys that say when the run happened, not what it found
TIMING = ("generated_at",)


def _input(directory: Path) -> Path:
    """Two proxy nodes' hourly files over a day: over 30 files, so the first stage alone has tasks for both executors."""
    generate = bench_generator()
    traffic = edge_case_traffic(days=1, nodes=2, principals=30, topics=40, addresses=40)
    source = directory / "audit"
    counts = generate.write(source, 3000, seed=23, traffic=traffic)
    assert counts.malformed and counts.duplicates and counts.files >= 20
    return source


def _rows(spark: SparkSession, path: Path) -> Counter[str]:
    """Each row of a Parquet table (partition columns included) as JSON, counted."""
    frame = spark.read.parquet(str(path))
    return Counter(row[0] for row in frame.select(F.to_json(F.struct(*frame.columns))).collect())


def _lines(directory: Path) -> Counter[str]:
    return Counter(line for part in directory.glob("*.json") for line in part.read_text().splitlines() if line)


def _summary(out: Path) -> dict[str, Any]:
    text = (out / "summary.json").read_text().replace(str(out), "<output>")
    return {key: value for key, value in json.loads(text).items() if key not in TIMING}


def test_spark_submit_to_two_workers_gives_local_modes_results(spark: SparkSession, tmp_path: Path) -> None:
    source = _input(tmp_path)
    acls = write_jsonl(
        tmp_path / "acls.jsonl",
        [
            {"principal": "User:*", "operation": "DESCRIBE", "resourceType": "TOPIC", "resourceName": "*"},
            {"principal": "User:*", "operation": "ALL", "resourceType": "TOPIC", "resourceName": "orders-", "patternType": "PREFIXED"},
        ],
    )
    options = ["--input", str(source), "--whatif-acls", str(acls), "--whatif-property", "super.users=User:admin", "--quiet"]
    # Spark's 200 shuffle partitions on a cluster are 200 tasks a shuffle for a few thousand lines: one per executor
    cluster_options = [*options, "--shuffle-partitions", "2"]
    local_out, cluster_out = tmp_path / "local", tmp_path / "cluster-out"
    assert run_size.RunSize.of(str(source), str(cluster_out), incremental=False).interpreted
    interpreted = spark.conf.get(EXPRESSION_FACTORY)
    spark.conf.set(EXPRESSION_FACTORY, "FALLBACK")  # Spark's default: compiled, interpreted only where that fails
    try:
        run(None, str(local_out), spark=spark, options=options_from(parser().parse_args([*options, "--output", str(local_out)])))
    finally:
        spark.conf.set(EXPRESSION_FACTORY, interpreted)

    with standalone_cluster(tmp_path / "cluster", workers=2, cores=1, memory="512m") as cluster:
        command = [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            cluster.master_url,
            "--driver-memory",
            "512m",
            "--executor-memory",
            "512m",
            "--conf",
            f"spark.pyspark.python={sys.executable}",
            "--conf",
            f"spark.pyspark.driver.python={sys.executable}",
            "--driver-java-options",
            SHORT_LIVED_JVM,
            "--conf",
            f"spark.executor.extraJavaOptions={SHORT_LIVED_JVM}",
            "--conf",
            "spark.ui.enabled=false",
            # start no stage before both executors are there, so neither worker is left out by timing
            "--conf",
            "spark.scheduler.minRegisteredResourcesRatio=1.0",
            str(REPO_ROOT / "spark_audit" / "job.py"),
            *cluster_options,
            "--output",
            str(cluster_out),
        ]
        proc = subprocess.run(command, cwd=tmp_path, env=cluster.env, capture_output=True, text=True, timeout=900, check=False)
        assert proc.returncode == 0, proc.stderr[-4000:]

    # an executor on each worker ran tasks of this application
    started = [tasks_started(worker_dir) for worker_dir in cluster.worker_dirs]
    assert len(started) == 2 and all(count > 0 for count in started), started
    assert (cluster_out / "report.html").is_file()
    local, remote = _summary(local_out), _summary(cluster_out)
    assert remote["records"] > 2500 and remote["malformed"] > 0 and remote["duplicates_dropped"] > 0
    assert remote["whatif"]["decisions"] > 0 and remote["whatif"]["changed"] > 0
    assert remote == local
    assert _lines(cluster_out / "quarantine") == _lines(local_out / "quarantine")
    for table in TABLES:
        assert _rows(spark, cluster_out / table) == _rows(spark, local_out / table), table
