"""The bursts report of an incremental run, rewritten for the dates whose request rows changed, not the whole history.

A burst is an episode of one address's denials (or failed logins) with no gap longer than the window, and an episode
can run across midnight, or for days. So the dates a rerun rewrites (spark_audit/tables.py: the new records' dates
and the days next to them) are a start, not the answer: the episodes are found over those dates' events and the
events within one window of their edges (two events a window apart or less are one episode, and a peak counts the
events of one window), and where an episode crosses an edge (it holds events on both sides) the dates it reaches are
added and the episodes found again. A kept burst that ran into the dates from before them is found again too: a
date's request rows can change (a request's row is its earliest closing record), and an event it held may be gone.
When none crosses, the episodes of those dates are exactly what a pass over every event gives, and their partitions
of the report are replaced; every other date's bursts are kept. Each round adds a date that holds events, so the
rounds end, and the first one is enough unless an episode runs over a rewritten date's edge.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from spark_audit import denial_reports, report_writes, tables
from spark_audit.layout import Layout
from spark_audit.options import ReportOptions

BURSTS = "bursts"


def _edges(dates: frozenset[date]) -> tuple[list[datetime], list[datetime]]:
    """The instants where a run of consecutive ``dates`` begins, and where one ends."""
    begins = [tables.midnight(d) for d in sorted(dates) if d - tables.DAY not in dates]
    ends = [tables.midnight(d + tables.DAY) for d in sorted(dates) if d + tables.DAY not in dates]
    return begins, ends


def _scoped(alarms: DataFrame, dates: frozenset[date], window: timedelta) -> DataFrame:
    """The alarm rows of ``dates``, and those within one window before a run of them begins or after one ends: only
    those dates' partitions and the neighbours' the window reaches are read (more than one a side for a window over a
    day)."""
    begins, ends = _edges(dates)
    near: Column = tables.is_in("date", dates)
    for begin in begins:
        near = near | ((F.col("time") >= F.lit(begin - window)) & (F.col("time") < F.lit(begin)))
    for end in ends:
        near = near | ((F.col("time") >= F.lit(end)) & (F.col("time") < F.lit(end + window)))
    reach = max(1, math.ceil(window / tables.DAY))
    around = dates | {d + tables.DAY * step for d in dates for step in range(-reach, reach + 1)}
    return alarms.filter(tables.is_in("date", around)).filter(near)


def _spans(frame: DataFrame) -> set[tuple[date, date]]:
    """The dates of each row's ``start`` and ``end``."""
    return {(row[0], row[1]) for row in frame.select(F.to_date("start"), F.to_date("end")).distinct().collect()}


def _kept_running_in(spark: SparkSession, target: str, dates: frozenset[date]) -> set[date]:
    """The dates of the kept bursts that begin before ``dates`` and run into them: a request row of those dates can
    change (a request's closing record is its earliest), so such a burst may have lost an event there, which no
    episode of the new rows shows."""
    kept = spark.read.schema("start timestamp, end timestamp").parquet(target)
    low, high = min(dates), max(dates)
    spans = _spans(kept.filter((F.to_date("end") >= F.lit(low)) & (F.to_date("start") < F.lit(high))))
    running_in = [(first, last) for first, last in spans if first not in dates and any(first < day <= last for day in dates)]
    return {day for first, last in running_in for day in tables.days_from(first, last)}


def rewrite(
    spark: SparkSession,
    alarms: DataFrame,
    layout: Layout,
    rewritten: frozenset[date],
    options: ReportOptions,
    *,
    span: tuple[int | None, int | None],
) -> None:
    """The report's partitions of ``rewritten`` (widened while an episode crosses their edge) found again from
    ``alarms``; ``span`` is the store's first and last record's time (microseconds), which bounds the rounds."""
    if not rewritten:
        return
    window = timedelta(seconds=options.burst_window_seconds)
    staging, target = layout.work(f"{BURSTS}-update"), layout.report(BURSTS)
    dates = rewritten | _kept_running_in(spark, target, rewritten)
    first_us, last_us = span
    # each round adds a date that holds an event: at most one round per date of the store, and one to find none crossing
    rounds = (tables.date_of(last_us) - tables.date_of(first_us)).days + 2 if first_us is not None and last_us is not None else 1
    for _ in range(rounds):
        events = denial_reports.burst_events(_scoped(alarms, dates, window)).withColumn("day", F.to_date("time"))
        found = denial_reports.episodes(events, window_seconds=options.burst_window_seconds, inside=tables.is_in("day", dates))
        observation = Observation("crossing")
        checked = found.observe(observation, F.count(F.when(F.col("crossing"), True)).alias("n"))
        rows = denial_reports.burst_rows(checked.filter(F.col("hasInside")), options.burst_threshold)
        rows.repartition("date").write.mode("overwrite").partitionBy("date").parquet(staging)
        if not observation.get["n"]:
            tables.replace_partitions(spark, staging, target, dates)
            return
        # rare (an episode over the edge of the dates): each crossing episode's own dates, not all between them
        dates = dates.union(*[tables.days_from(first, last) for first, last in _spans(found.filter(F.col("crossing")))])
    # not reached (each round adds a date of the store); a whole write is right whatever the dates
    whole = denial_reports.bursts(alarms, window_seconds=options.burst_window_seconds, threshold=options.burst_threshold, ordered=False)
    report_writes.write(whole, target, by_date=True, one_file_per_date=True)
