"""The job submitted with spark-submit (as a script) to a standalone master and worker on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark_audit.records import write_jsonl
from tests.spark_audit.scenario import RECORDS
from tests.spark_audit.standalone import SPARK_HOME, standalone_cluster

pytestmark = pytest.mark.spark

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_spark_submit_to_a_standalone_cluster(tmp_path: Path) -> None:
    source, out = tmp_path / "audit", tmp_path / "out"
    write_jsonl(source / "audit-1-a.jsonl", [*RECORDS, "not json", RECORDS[0]])
    acls = write_jsonl(
        tmp_path / "acls.jsonl", [{"principal": "User:alice", "operation": "ALL", "resourceType": "TOPIC", "resourceName": "*"}]
    )

    with standalone_cluster(tmp_path / "cluster") as cluster:
        command = [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            cluster.master_url,
            "--conf",
            f"spark.pyspark.python={sys.executable}",
            "--conf",
            f"spark.pyspark.driver.python={sys.executable}",
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.ui.enabled=false",
            str(REPO_ROOT / "spark_audit" / "job.py"),
            "--input",
            str(source),
            "--output",
            str(out),
            "--whatif-acls",
            str(acls),
            "--quiet",
        ]
        proc = subprocess.run(command, cwd=tmp_path, env=cluster.env, capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr[-4000:]
        # the work ran in an executor the worker started for this application
        executor_logs = list(cluster.worker_dir.glob("app-*/*/stderr"))

    assert executor_logs, "no executor ran on the worker"
    assert any("Running task" in log.read_text(errors="replace") for log in executor_logs)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["records"], summary["malformed"], summary["duplicates_dropped"]) == (len(RECORDS), 1, 1)
    assert summary["whatif"]["decisions"] > 0
    assert (out / "report.html").is_file()
