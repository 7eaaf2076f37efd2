"""A run that cannot finish says in one line what ran out and which setting to raise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spark_audit.failure import explain, first_line
from spark_audit.local_fs import JAR_ENV, KEEP_HADOOPS
from tests.spark_audit.harness import run_job
from tests.spark_audit.records import write_jsonl
from tests.spark_audit.scenario import RECORDS

# Texts as Spark and the JVM write them (abridged from real failures).
HEAP = "py4j.protocol.Py4JJavaError: An error occurred while calling o412.parquet.\n: java.lang.OutOfMemoryError: Java heap space\n\tat ..."
TASK_HEAP = "ERROR Executor: Exception in task 1.0 in stage 68.0 (TID 412)\njava.lang.OutOfMemoryError: GC overhead limit exceeded"
TOO_SMALL = "java.lang.IllegalArgumentException: System memory 119537664 must be at least 471859200. Please increase heap size using the --driver-memory option"
DISK = "org.apache.spark.SparkException: Job aborted.\nCaused by: java.io.IOException: No space left on device\n\tat java.io.FileOutputStream.writeBytes"


@pytest.mark.parametrize(
    ("text", "what", "setting"),
    [
        (HEAP, "heap", "--driver-memory"),
        (TASK_HEAP, "heap", "--driver-memory"),
        (TOO_SMALL, "heap", "--driver-memory"),
        (DISK, "disk", "--local-dir"),
    ],
)
def test_explain_names_what_ran_out_and_the_setting(text: str, what: str, setting: str) -> None:
    exhausted = explain(None, text)

    assert exhausted is not None
    assert what in exhausted.what and setting in exhausted.setting
    assert "\n" not in exhausted.line("768m")


def test_other_failures_are_not_blamed_on_memory() -> None:
    text = "An error occurred while calling o12.load.\n: org.apache.spark.sql.AnalysisException: [PATH_NOT_FOUND] Path does not exist"

    assert explain(text) is None
    assert first_line(text) == "org.apache.spark.sql.AnalysisException: [PATH_NOT_FOUND] Path does not exist"


@pytest.mark.spark
def test_a_heap_too_small_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    source, out = tmp_path / "audit", tmp_path / "out"
    write_jsonl(source / "audit-1-20261121T100000Z-000001.jsonl", RECORDS)

    # Hadoop's own local file system: where Maven cannot fetch the java.nio one, that would be a line of its own.
    env = {**os.environ, JAR_ENV: KEEP_HADOOPS}
    proc = run_job(source, out, "--master", "local[1]", "--driver-memory", "128m", "--quiet", "--no-html", timeout=600, env=env)

    assert proc.returncode == 3, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("spark_audit: the JVM heap")
    assert "--driver-memory" in lines[0] and "(now 128m)" in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert "spark.log" in lines[0] and (out / "spark.log").exists()
