"""Runs that parse little input start their driver JVM with the quick compiler alone (spark_audit/run_size.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_audit import cli, run_size
from spark_audit.session import EXPRESSION_FACTORY, QUICK_COMPILER_ONLY, Resources


def _sized(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(size)  # sparse: the size counts, not the disk


def test_the_input_files_decide(tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    _sized(audit / "a.jsonl", run_size.SHORT_RUN_BYTES // 2)
    _sized(audit / "ignored.txt", 10 * run_size.SHORT_RUN_BYTES)  # the job reads *.jsonl only
    assert run_size.RunSize.of(str(audit), str(tmp_path / "out"), incremental=False).short
    _sized(audit / "b.jsonl", run_size.SHORT_RUN_BYTES)
    assert not run_size.RunSize.of(str(audit), str(tmp_path / "out"), incremental=False).short


def _store(out: Path, json_bytes: int) -> None:
    _sized(out / "records" / "date=2026-11-21" / "part-0.parquet", json_bytes // run_size.PARQUET_TO_JSON)


def test_an_incremental_run_counts_what_the_store_does_not_hold_yet(tmp_path: Path) -> None:
    audit, out = tmp_path / "audit", tmp_path / "out"
    _sized(audit / "days-1-3.jsonl", run_size.SHORT_RUN_BYTES)
    _sized(audit / "day-4.jsonl", run_size.SHORT_RUN_BYTES // 2)
    assert not run_size.RunSize.of(str(audit), str(out), incremental=True).short  # a first run parses everything
    _store(out, run_size.SHORT_RUN_BYTES)  # the first three days are stored
    stored = run_size.stored_json_bytes(str(out))
    assert stored > run_size.SHORT_RUN_BYTES - run_size.PARQUET_TO_JSON
    assert run_size.json_bytes(str(audit), str(out), incremental=True) == run_size.SHORT_RUN_BYTES * 3 // 2 - stored
    assert run_size.RunSize.of(str(audit), str(out), incremental=True).short
    assert not run_size.RunSize.of(str(audit), str(out), incremental=False).short  # a batch run parses all of its input again


def test_an_incremental_run_over_a_large_store_keeps_both_compilers(tmp_path: Path) -> None:
    audit, out = tmp_path / "audit", tmp_path / "out"
    _sized(audit / "new-day.jsonl", 1024)
    _store(out, run_size.SHORT_RUN_STORE_BYTES)
    assert run_size.RunSize.of(str(audit), str(out), incremental=True).short
    _store(out, run_size.SHORT_RUN_STORE_BYTES + 100 * run_size.PARQUET_TO_JSON)
    assert not run_size.RunSize.of(str(audit), str(out), incremental=True).short
    assert run_size.json_bytes(str(audit), str(out), incremental=True) == 0  # old files deleted: nothing new to parse


def test_unknown_sizes_are_not_short(tmp_path: Path) -> None:
    assert not run_size.RunSize.of(None, str(tmp_path), incremental=False).short  # a Kafka topic
    assert not run_size.RunSize.of("hdfs://namenode/audit", str(tmp_path), incremental=False).short


def test_the_job_asks_for_the_quick_compiler_on_little_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    chosen: list[Resources] = []

    class Stop(Exception):
        pass

    def build_session(*_: object, resources: Resources, **__: object) -> None:
        chosen.append(resources)
        raise Stop

    monkeypatch.setattr(cli, "build_session", build_session)
    audit = tmp_path / "audit"
    _sized(audit / "a.jsonl", 1000)
    for size in (1000, run_size.INTERPRETED_RUN_BYTES + 1, 2 * run_size.SHORT_RUN_BYTES):
        _sized(audit / "a.jsonl", size)
        with pytest.raises(Stop):
            cli.main(["--input", str(audit), "--output", str(tmp_path / "out"), "--master", "local[2]"])
    assert [resources.short_run for resources in chosen] == [True, True, False]
    assert [QUICK_COMPILER_ONLY in resources.conf()["spark.driver.extraJavaOptions"] for resources in chosen] == [True, True, False]
    # only the smallest interprets Spark's expressions rather than compiling them
    assert [resources.conf().get(EXPRESSION_FACTORY) for resources in chosen] == ["NO_CODEGEN", None, None]
    assert not any(resources.create_class_archive for resources in chosen)  # only make_class_archive writes one
    _sized(audit / "a.jsonl", 1000)
    # make_class_archive's own process, which has no session yet (another test in this process may have left one active)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    with pytest.raises(Stop):
        cli.main(["--input", str(audit), "--output", str(tmp_path / "out"), "--master", "local[2]"], make_class_archive=True)
    # the archive's run compiles, so that the archive holds the compiler's classes for the runs that compile
    assert chosen[-1].create_class_archive and EXPRESSION_FACTORY not in chosen[-1].conf()


def test_an_incremental_run_interprets_while_its_new_lines_and_its_store_are_small(tmp_path: Path) -> None:
    audit, out = tmp_path / "audit", tmp_path / "out"
    _sized(audit / "day-1.jsonl", run_size.INTERPRETED_RUN_BYTES // 2)
    assert run_size.RunSize.of(str(audit), str(out), incremental=True).interpreted
    _store(out, 2 * run_size.INTERPRETED_RUN_BYTES)  # the reports read the store too
    assert not run_size.RunSize.of(str(audit), str(out), incremental=True).interpreted
    assert not run_size.RunSize.of(None, str(out), incremental=False).interpreted  # a Kafka topic: size unknown


def test_a_small_local_run_shuffles_into_few_partitions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    chosen: list[int | None] = []

    class Stop(Exception):
        pass

    def build_session(*_: object, shuffle_partitions: int | None, **__: object) -> None:
        chosen.append(shuffle_partitions)
        raise Stop

    monkeypatch.setattr(cli, "build_session", build_session)
    audit = tmp_path / "audit"
    runs = (
        (1000, "local[2]", []),
        # a gigabyte of JSON is still a small run: one partition per core
        (1024**3, "local[2]", []),
        (1024**3, "local[6]", []),
        (2 * run_size.SMALL_RUN_BYTES, "local[2]", []),
        (1000, "local[2]", ["--shuffle-partitions", "5"]),
    )
    for size, master, extra in runs:
        _sized(audit / "a.jsonl", size)
        with pytest.raises(Stop):
            cli.main(["--input", str(audit), "--output", str(tmp_path / "out"), "--master", master, *extra])
    assert chosen == [2, 2, 6, run_size.LOCAL_PARTITIONS, 5]  # the operator's number wins
    assert run_size.RunSize.of(None, str(tmp_path), incremental=False).local_shuffle_partitions("local[2]") == run_size.LOCAL_PARTITIONS  # Kafka
    # a cluster's master, or spark-submit's (none given): Spark's own setting stands
    small = run_size.RunSize.of(str(audit), str(tmp_path), incremental=False)
    assert [small.local_shuffle_partitions(master) for master in ("spark://127.0.0.1:7077", "yarn", None)] == [None, None, None]


@pytest.mark.parametrize(
    ("master", "threads"),
    [("local", 1), ("local[1]", 1), ("local[4]", 4), ("local[3,2]", 3), ("local[*]", os.cpu_count() or 1), ("local[0]", 1), ("local[x]", 1), ("spark://h:7077", 1)],
)
def test_a_local_masters_threads_are_read_as_spark_reads_them(master: str, threads: int) -> None:
    assert run_size.local_threads(master) == threads
