"""In local mode the job writes its files with java.nio, not a `chmod` child process of the JVM per file (spark_audit/local_fs.py).

A child the JVM starts shares the JVM's memory until it runs its program: a sampler that sums the
resident memory of the job's process tree counts the JVM twice whenever it samples during one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spark_audit import local_fs, maven
from tests.spark_audit.harness import REPO_ROOT, RealisticRun, recording_chmod

# A session on Hadoop's own local file system writing a few rows: the recorder's control.
_SMALL_WRITE = """
import sys
from spark_audit.session import build_session
spark = build_session("local[1]")
spark.range(3).selectExpr("id", "id % 2 AS part").write.partitionBy("part").parquet(sys.argv[1])
spark.stop()
"""


@pytest.mark.spark
def test_local_job_runs_no_chmod_process(realistic_cli_run: RealisticRun, tmp_path: Path) -> None:
    # The control first: Hadoop's own local file system runs chmod for each file and directory it creates.
    control_log = tmp_path / "chmod-hadoop.log"
    env = recording_chmod(tmp_path / "bin-hadoop", control_log)
    env[local_fs.JAR_ENV] = local_fs.KEEP_HADOOPS
    proc = subprocess.run(
        [sys.executable, "-c", _SMALL_WRITE, str(tmp_path / "small")],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(control_log.read_text().splitlines()) >= 4

    try:
        local_fs.local_fs_jar()
    except maven.MavenError as exc:
        pytest.skip(f"the jar cannot be fetched here: {exc}")
    # The job, as a user runs it over half a million lines (its hundreds of files and partitions), with the same recorder.
    assert realistic_cli_run.proc.returncode == 0, realistic_cli_run.proc.stderr[-3000:]
    assert not realistic_cli_run.chmod_log.exists(), realistic_cli_run.chmod_log.read_text()[:2000]
    assert json.loads((realistic_cli_run.out / "summary.json").read_text())["records"] == realistic_cli_run.counts.records


def test_only_a_local_master_gets_the_nio_file_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = tmp_path / "fs.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv(local_fs.JAR_ENV, str(jar))

    assert local_fs.local_file_system_conf("local[2]") == {
        "spark.driver.extraClassPath": str(jar),
        "spark.hadoop.fs.file.impl": local_fs.FILE_SYSTEM_CLASS,
    }
    # Executors elsewhere would need the jar on their own class path: a cluster keeps Hadoop's file system.
    assert local_fs.local_file_system_conf("spark://127.0.0.1:7077") == {}
    assert local_fs.local_file_system_conf("local-cluster[2,1,1024]") == {}  # executors in JVMs of their own
    assert local_fs.local_file_system_conf(None) == {}


def test_without_the_jar_the_job_keeps_hadoops_file_system_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(local_fs.JAR_ENV, local_fs.KEEP_HADOOPS)
    assert local_fs.local_file_system_conf("local[2]") == {}
    assert capsys.readouterr().err == ""

    missing = tmp_path / "missing.jar"
    monkeypatch.setenv(local_fs.JAR_ENV, str(missing))
    assert local_fs.local_file_system_conf("local[2]") == {}
    assert f"{local_fs.JAR_ENV}={missing} is not a file" in capsys.readouterr().err

    monkeypatch.delenv(local_fs.JAR_ENV)
    if shutil.which("mvn") is not None:
        # A cache that cannot be written (its root is a file): one line, and the job goes on.
        blocked = tmp_path / "not-a-folder"
        blocked.write_text("")
        monkeypatch.setenv("KAFKA_ENVELOPE_PROXY_CACHE", str(blocked / "cache"))
        assert local_fs.local_file_system_conf("local[2]") == {}
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and "Hadoop's local file system stays" in lines[0], lines

    # No Maven on PATH and nothing cached: one line, and the job goes on.
    monkeypatch.setenv("KAFKA_ENVELOPE_PROXY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert local_fs.local_file_system_conf("local[2]") == {}
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "mvn not found" in lines[0] and "Hadoop's local file system stays" in lines[0], lines


def test_the_jar_is_fetched_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("mvn") is None:
        pytest.skip("no Maven here")
    monkeypatch.setenv("KAFKA_ENVELOPE_PROXY_CACHE", str(tmp_path / "cache"))
    jar = maven.ensure_jar(local_fs.GROUP, local_fs.ARTIFACT, local_fs.VERSION, needed_for="this test")
    assert jar.is_file() and jar.parent.parent == tmp_path / "cache"
    assert maven.complete(jar.parent) == [jar]
    # A second call finds it without Maven.
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert maven.ensure_jar(local_fs.GROUP, local_fs.ARTIFACT, local_fs.VERSION, needed_for="this test") == jar
