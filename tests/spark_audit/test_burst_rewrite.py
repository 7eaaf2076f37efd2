"""An incremental run rewrites the bursts of the dates its new records touch, widened while an episode crosses their
edge, and keeps the other dates' bursts (spark_audit/burst_rewrite.py): its report is the full run's, row for row."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_audit.options import JobOptions, ReportOptions
from spark_audit.pipeline import run
from tests.spark_audit.records import connection, err, request, write_jsonl

pytestmark = pytest.mark.spark

#: An hour's window, so that an episode of a few dozen events runs over midnights; two events within it make a burst.
REPORTS = ReportOptions(burst_window_seconds=3600, burst_threshold=2, outcome_grace_seconds=0)
FIRST_DAY = datetime(2026, 11, 21, tzinfo=UTC)


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return FIRST_DAY + timedelta(days=day - 1, hours=hour, minutes=minute)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _failures(first: int, start: datetime, end: datetime, step: timedelta, client: str) -> list[dict[str, Any]]:
    """Failed logins from ``client`` every ``step`` from ``start`` to ``end``."""
    events, t, n = [], start, first
    while t <= end:
        events.append(connection(n, _iso(t), "authentication-failed", principal="User:admin", client=client))
        t, n = t + step, n + 1
    return events


def _by_day(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    files: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        files.setdefault(record["time"][:10].replace("-", ""), []).append(record)
    return files


def _bursts(spark: SparkSession, out: Path) -> list[tuple[Any, ...]]:
    frame = spark.read.parquet(str(out / "reports" / "bursts"))
    return sorted(tuple(row) for row in frame.selectExpr("clientAddress", "kind", "unix_micros(start)", "unix_micros(`end`)", "cast(date as string)", "events", "peak", "principals").collect())


def _files(out: Path, day: str) -> set[str]:
    return {path.name for path in (out / "reports" / "bursts" / f"date={day}").glob("*.parquet")}


def test_a_rerun_rewrites_the_bursts_an_episode_runs_into_and_keeps_the_rest(spark: SparkSession, tmp_path: Path) -> None:
    # one episode of failed logins every 50 minutes from the first day's evening to the fifth day's first hours: over
    # the two edges of the dates a late file on the third day rewrites (the second to the fourth)
    long_episode = _failures(1000, _at(1, 20), _at(5, 2), timedelta(minutes=50), "198.51.100.60")
    # an episode over the sixth day's midnight, and a burst on the seventh day, far from the rewritten dates
    over_midnight = _failures(2000, _at(6, 23, 30), _at(7, 0, 30), timedelta(minutes=20), "198.51.100.61")
    far_away = _failures(3000, _at(7, 12), _at(7, 12, 30), timedelta(minutes=10), "198.51.100.62")
    # every day holds a request, so the store spans every date
    requests = [request(4000 + day, _iso(_at(day, 9)), f"r{day}", "outcome", status="SUCCESS") for day in range(1, 8)]
    source, every_file = tmp_path / "audit", tmp_path / "all"
    for day, records in _by_day([*long_episode, *over_midnight, *far_away, *requests]).items():
        write_jsonl(source / f"audit-1-{day}T000000Z-1.jsonl", records)
    options = JobOptions(input=str(source), incremental=True, html=False, print_report=False, reports=REPORTS)
    out = tmp_path / "out"
    run(None, str(out), spark=spark, options=options)
    before = {day: _files(out, day) for day in ("2026-11-21", "2026-11-26", "2026-11-27")}
    assert all(before.values())

    # a late file on the third day: one more failure inside the long episode, and a new burst of its own
    late = [
        connection(5000, _iso(_at(3, 10, 5)), "authentication-failed", principal="User:root", client="198.51.100.60"),
        *_failures(5100, _at(3, 15), _at(3, 15, 20), timedelta(minutes=10), "198.51.100.63"),
    ]
    write_jsonl(source / "audit-2-20261123T100000Z-1.jsonl", late)
    rerun = run(None, str(out), spark=spark, options=options)

    shutil.copytree(source, every_file)
    whole = run(None, str(tmp_path / "whole"), spark=spark, options=JobOptions(input=str(every_file), html=False, print_report=False, reports=REPORTS))
    assert _bursts(spark, out) == _bursts(spark, tmp_path / "whole")
    assert rerun["bursts"] == whole["bursts"] == 4
    # the long episode, found again whole: its start on the first day, outside the dates the late file rewrote
    (episode,) = [row for row in _bursts(spark, out) if row[0] == "198.51.100.60"]
    assert episode[4] == "2026-11-21" and episode[5] == len(long_episode) + 1 and list(episode[7]) == ["User:admin", "User:root"]
    # the first day's partition was rewritten (the episode reached it); the sixth's and seventh's were kept as they were
    assert _files(out, "2026-11-21") != before["2026-11-21"]
    assert _files(out, "2026-11-26") == before["2026-11-26"] and _files(out, "2026-11-27") == before["2026-11-27"]


def test_a_window_over_a_day_and_a_kept_burst_that_loses_its_event_in_the_rewritten_dates(spark: SparkSession, tmp_path: Path) -> None:
    """A two-day window: the rerun reads the alarms two days past the rewritten dates' edges (an episode whose next event
    is 42 hours on); and a burst that began before those dates loses its one event inside them (a late, earlier outcome
    becomes its request's row): its kept row is found again."""
    reports = ReportOptions(burst_window_seconds=2 * 86400, burst_threshold=2, outcome_grace_seconds=0)
    two_days_on = [
        connection(100, _iso(_at(11, 12)), "authentication-failed", principal="User:admin", client="198.51.100.70"),
        connection(101, _iso(_at(13, 6)), "authentication-failed", principal="User:admin", client="198.51.100.70"),
    ]
    denied = [err(31, "CLUSTER_AUTHORIZATION_FAILED", "kafka-cluster")]
    losing = [
        connection(200, _iso(_at(7, 12)), "refused", principal="User:mallory", client="198.51.100.71", reason="ip-filter"),
        connection(201, _iso(_at(7, 13)), "refused", principal="User:mallory", client="198.51.100.71", reason="ip-filter"),
        request(202, _iso(_at(9, 6)), "lost", "outcome", status="FAILURE", errors=denied, client="198.51.100.71"),
    ]
    source = tmp_path / "audit"
    for day, records in _by_day([*two_days_on, *losing]).items():
        write_jsonl(source / f"audit-1-{day}T000000Z-1.jsonl", records)
    options = JobOptions(input=str(source), incremental=True, html=False, print_report=False, reports=reports)
    out = tmp_path / "out"
    run(None, str(out), spark=spark, options=options)
    assert {row[0]: row[5] for row in _bursts(spark, out)} == {"198.51.100.70": 2, "198.51.100.71": 3}

    # late records on the ninth and tenth days: the rerun rewrites the eighth to the eleventh
    late = [
        request(300, _iso(_at(9, 5)), "lost", "outcome", status="SUCCESS", client="198.51.100.71"),
        connection(301, _iso(_at(10, 8)), "authentication-failed", principal="User:admin", client="198.51.100.72"),
    ]
    write_jsonl(source / "audit-2-20261130T000000Z-1.jsonl", late)
    run(None, str(out), spark=spark, options=options)

    whole = tmp_path / "whole"
    shutil.copytree(source, tmp_path / "all")
    run(None, str(whole), spark=spark, options=JobOptions(input=str(tmp_path / "all"), html=False, print_report=False, reports=reports))
    assert _bursts(spark, out) == _bursts(spark, whole)
    assert {row[0]: row[5] for row in _bursts(spark, out)} == {"198.51.100.70": 2, "198.51.100.71": 2}
