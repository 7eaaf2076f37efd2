"""Incremental mode: a rerun processes only new files, de-duplicates against what is stored."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_audit.ingest import QUARANTINE_SCHEMA, STORE_SCHEMA, read_quarantine, read_store
from spark_audit.options import JobOptions, ReportOptions
from spark_audit.pipeline import run
from tests.spark_audit.records import record_id, request, rid, write_jsonl
from tests.spark_audit.scenario import RECORDS

pytestmark = pytest.mark.spark


def test_rerun_reads_only_new_files(spark: SparkSession, tmp_path: Path) -> None:
    source, out = tmp_path / "audit", tmp_path / "out"
    options = JobOptions(
        input=str(source), incremental=True, html=False, print_report=False, reports=ReportOptions(outcome_grace_seconds=0)
    )
    # r1's intent now, its outcome in a later file
    write_jsonl(source / "audit-1-a.jsonl", RECORDS[:4])

    first = run(None, str(out), spark=spark, options=options)

    assert first["run"] == {
        "mode": "incremental",
        "batches": 1,
        "lines": 4,
        "origins": 1,
        "records": 4,
        "malformed": 0,
        "duplicates": 0,
        "stored": 4,
    }
    assert first["records"] == 4
    assert [r["requestId"] for r in spark.read.parquet(str(out / "reports" / "intents_without_outcome")).collect()] == [rid("r1")]

    # the rest with one of its records twice, a record stored by the first run again, and a malformed line
    late = write_jsonl(source / "audit-1-b.jsonl", [*RECORDS[4:], RECORDS[4], RECORDS[0], "{not json"])
    # published late: a proxy restarted after a crash renames its old staging file into the directory,
    # and the rename keeps its modification time, here 8 days before the newest file read (Spark's
    # file source skips a file older than maxFileAge, 7 days by default, before the newest it has seen)
    eight_days_earlier = (source / "audit-1-a.jsonl").stat().st_mtime - 8 * 86400
    os.utime(late, (eight_days_earlier, eight_days_earlier))
    # a file still being written is not read
    write_jsonl(source / ".staging" / "audit-1-c.jsonl", ["{partial"])

    kept_manifest = (out / "_checkpoint" / "files.json").read_text()
    second = run(None, str(out), spark=spark, options=options)

    new = len(RECORDS) - 4
    assert second["run"] == {
        "mode": "incremental",
        "batches": 1,
        "lines": new + 3,
        "origins": 1,
        "records": new + 2,
        "malformed": 1,
        "duplicates": 2,
        "stored": new,
    }
    assert (second["records"], second["malformed"], second["duplicates_dropped"]) == (len(RECORDS), 1, 2)
    stored_ids = [r["id"] for r in spark.read.parquet(str(out / "records")).select("id").collect()]
    assert sorted(stored_ids) == sorted(record_id(n) for n in range(1, len(RECORDS) + 1))
    # reports cover the whole store: r1 found its outcome, r3 never did
    assert [r["requestId"] for r in spark.read.parquet(str(out / "reports" / "intents_without_outcome")).collect()] == [rid("r3")]
    quarantined = spark.read.json(str(out / "quarantine")).collect()
    assert [(r["value"], r["batch"]) for r in quarantined] == [("{not json", 1)]

    # as if the run had died after updating the store, before the manifest was replaced
    manifest = out / "_checkpoint" / "files.json"
    assert json.loads(manifest.read_text())["nextBatch"] == 2
    manifest.write_text(kept_manifest)
    (manifest.parent / ".files.json.crc").unlink(missing_ok=True)  # Hadoop's checksum of the text replaced

    again = run(None, str(out), spark=spark, options=options)

    # the same batch once more: every record is found in the store, the quarantine is rewritten, not doubled
    assert (again["run"]["batches"], again["run"]["lines"], again["run"]["stored"], again["run"]["duplicates"]) == (1, new + 3, 0, new + 2)
    assert sorted(r["id"] for r in spark.read.parquet(str(out / "records")).select("id").collect()) == sorted(stored_ids)
    assert [(r["value"], r["batch"]) for r in spark.read.json(str(out / "quarantine")).collect()] == [("{not json", 1)]

    # files with nothing but blank lines, or nothing at all: a batch that stores nothing, and no error
    write_jsonl(source / "audit-2-blank.jsonl", ["", "  "])
    (source / "audit-2-empty.jsonl").touch()

    blank = run(None, str(out), spark=spark, options=options)

    assert (blank["run"]["batches"], blank["run"]["lines"], blank["run"]["stored"], blank["records"]) == (1, 0, 0, len(RECORDS))
    assert blank["run"]["origins"] == 2  # the file of blank lines and the empty file were read, as a batch run counts them

    # an operator removed a kept table: the next run rebuilds it from the store; retention removed an audit file:
    # its name leaves the manifest, which holds no more than the input lists
    shutil.rmtree(out / "_tables" / "requests")
    (source / "audit-2-empty.jsonl").unlink()

    third = run(None, str(out), spark=spark, options=options)

    assert (third["run"]["batches"], third["run"]["stored"], third["records"]) == (0, 0, len(RECORDS))
    assert third["requests"] == blank["requests"] > 0
    assert json.loads((out / "summary.json").read_text())["run"]["batches"] == 0
    listed = sorted(f"file://{path}" for path in source.glob("*.jsonl"))
    assert sorted(json.loads(manifest.read_text())["files"]) == listed



def test_a_store_or_quarantine_not_written_yet_reads_empty_without_python_workers(spark: SparkSession, tmp_path: Path) -> None:
    """The first incremental run looks its ids up in a store that does not exist yet. An empty frame from
    ``createDataFrame([])`` is a Python RDD whose scan starts Python workers (about 50 MiB each, for the
    rest of the run: a first run over 1M lines peaked at 1,583 MiB with them and 1,208 MiB without)."""
    for frame, schema in ((read_store(spark, str(tmp_path / "records")), STORE_SCHEMA), (read_quarantine(spark, str(tmp_path / "q")), QUARANTINE_SCHEMA)):
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert "ExistingRDD" not in plan and "PythonRDD" not in plan, plan
        assert frame.schema == schema
        assert frame.count() == 0


def test_an_intent_still_in_flight_joins_the_report_once_a_rerun_moves_the_cut_off_past_its_date(spark: SparkSession, tmp_path: Path) -> None:
    # a rerun rewrites the intents-without-outcome report for the dates its new records touch and, since its rows
    # depend on the newest record's time less the grace, for the dates that cut-off moved across: here the 21st,
    # which the new records (the 24th) do not touch, nor the days next to them
    source, out = tmp_path / "audit", tmp_path / "out"
    options = JobOptions(input=str(source), incremental=True, html=False, print_report=False)
    write_jsonl(
        source / "audit-1-a.jsonl",
        [
            request(1, "2026-11-21T10:00:00.000Z", "done", "outcome", status="SUCCESS"),
            request(2, "2026-11-21T23:59:30.000Z", "late", "intent"),  # within the grace of the newest record
            request(3, "2026-11-21T23:59:50.000Z", "last", "outcome", status="SUCCESS"),
        ],
    )

    first = run(None, str(out), spark=spark, options=options)

    assert first["intents_without_outcome"] == 0
    write_jsonl(source / "audit-1-b.jsonl", [request(4, "2026-11-24T10:00:00.000Z", "later", "outcome", status="SUCCESS")])

    second = run(None, str(out), spark=spark, options=options)

    assert second["intents_without_outcome"] == 1
    rows = spark.read.parquet(str(out / "reports" / "intents_without_outcome")).collect()
    assert [(r["requestId"], str(r["date"])) for r in rows] == [(rid("late"), "2026-11-21")]


def _denial(n: int, time: str) -> dict[str, object]:
    return request(n, time, f"denied-{n}", "outcome", principal="User:bob", method="kafka.AlterConfigs", api_key=33, status="FAILURE", error_code=31)


@pytest.mark.parametrize("newest_day_denials", [1, 3])
def test_the_pages_newest_denials_are_the_newest_of_every_date(spark: SparkSession, tmp_path: Path, newest_day_denials: int) -> None:
    # an incremental run's page looks for its newest denials on the newest two dates first (of four here); where
    # those hold fewer than it shows, it looks on every date: its rows are the newest of all either way
    source, out = tmp_path / "audit", tmp_path / "out"
    older = [_denial(1, "2026-11-18T09:17:41.000Z"), _denial(2, "2026-11-18T09:17:42.000Z")]
    newest = [_denial(10 + n, f"2026-11-21T11:2{n}:07.000Z") for n in range(newest_day_denials)]
    allowed = request(3, "2026-11-19T08:00:00.000Z", "fine", "outcome", status="SUCCESS")
    write_jsonl(source / "audit-1-a.jsonl", [*older, allowed, *newest])
    options = JobOptions(input=str(source), incremental=True, html=True, print_report=False, reports=ReportOptions(top=2))

    summary = run(None, str(out), spark=spark, options=options)

    assert summary["denials"] == 2 + newest_day_denials
    latest = (out / "report.html").read_text().split("<h3>Latest denials</h3>", 1)[1].split("</table>", 1)[0]
    shown = [clock for clock in ("09:17:41", "09:17:42", *(f"11:2{n}:07" for n in range(newest_day_denials))) if clock in latest]
    expected = ["09:17:42", "11:20:07"] if newest_day_denials == 1 else ["11:21:07", "11:22:07"]
    assert shown == expected
