"""Per-date partial aggregates of the store, kept between incremental runs (``_tables/daily``, ``_tables/identities``).

An incremental run's reports used to scan the whole store for four things: its time span and number of records,
the probes, whether the baseline's history holds any traffic, and the identities (the records that name a
principal, per principal, listener, address and side of the baseline). Each is a merge of per-date parts:

- ``daily``: per date, the records, the first and last record's time, the records of traffic (not probes), and the
  probe requests first seen that date (a probe request whose records straddle midnight counts on its first date);
- ``identities``: per date, principal, listener and client address, the first and last record and their number.

A run recomputes the parts of the dates its new records touch (``spark_audit/table_state.py``'s pending dates,
and the day after each for the probes' first-seen rule) from those dates of the store, and merges the rest. The
baseline's bounds fall inside a date: the dates wholly on one side come from the parts, the one or two dates that
hold a bound from the store, so the merge is exactly what a scan of the whole store gives. A batch run keeps no
parts (it observes its counts as it writes the store); the first incremental run after it writes them whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType, TimestampType

from spark_audit import hadoop_fs, identity_reports
from spark_audit.identity_reports import IN_BASELINE, Baseline
from spark_audit.layout import Layout
from spark_audit.table_state import TableState
from spark_audit.tables import DAY, date_of, is_in, read_table, rewrite_dates
from spark_audit.view import IS_PROBE, flatten, traffic

DAILY, IDENTITIES = "daily", "identities"

DAILY_SCHEMA = StructType(
    [
        StructField("records", LongType()),
        StructField("firstUs", LongType()),
        StructField("lastUs", LongType()),
        StructField("traffic", LongType()),
        StructField("probes", LongType()),
        StructField("date", DateType()),
    ]
)
IDENTITY_KEYS = ("principal", "listener", "clientAddress")
IDENTITY_SCHEMA = StructType(
    [
        *[StructField(name, StringType()) for name in IDENTITY_KEYS],
        StructField("first", TimestampType()),
        StructField("last", TimestampType()),
        StructField("events", LongType()),
        StructField("date", DateType()),
    ]
)
_DAY_US = int(DAY.total_seconds()) * 1_000_000


def _daily(flat: DataFrame) -> DataFrame:
    """The ``daily`` parts of the dates ``flat`` holds, and of none before them (their probes need the day before)."""
    probes = flat.filter(F.col(IS_PROBE)).select("date", "requestId").distinct()
    seen_the_day_before = probes.select(F.date_add("date", 1).alias("date"), "requestId")
    first_seen = probes.join(seen_the_day_before, ["date", "requestId"], "left_anti").groupBy("date").agg(F.count(F.lit(1)).alias("probes"))
    counts = flat.groupBy("date").agg(
        F.count(F.lit(1)).alias("records"),
        F.min(F.unix_micros("time")).alias("firstUs"),
        F.max(F.unix_micros("time")).alias("lastUs"),
        F.count(F.when(~F.col(IS_PROBE), True)).alias("traffic"),
    )
    with_probes = counts.join(first_seen, "date", "left").select(
        *[F.coalesce(F.col("probes"), F.lit(0)).alias("probes") if n == "probes" else n for n in DAILY_SCHEMA.fieldNames()]
    )
    return with_probes


def _identities(flat: DataFrame) -> DataFrame:
    return (
        traffic(flat)
        .filter(F.col("principal").isNotNull())
        .groupBy(*IDENTITY_KEYS, "date")
        .agg(F.min("time").alias("first"), F.max("time").alias("last"), F.count(F.lit(1)).alias("events"))
        .select(*IDENTITY_SCHEMA.fieldNames())
    )


def _flat(store: DataFrame, dates: Iterable[date]) -> DataFrame:
    """The store's records of ``dates``, flattened: the filter is on the store's partition column, so only those
    dates' files are read (:func:`spark_audit.view.flatten`'s ``date`` is computed from the time, and a filter on it
    would read every file)."""
    chosen = sorted(dates)
    return flatten(store.filter(is_in("date", chosen)) if chosen else store.limit(0))


def build(store: DataFrame, root: str) -> None:
    """Every date's parts, from the whole store."""
    flat = flatten(store)
    _daily(flat).write.mode("overwrite").partitionBy("date").parquet(f"{root}/{DAILY}")
    _identities(flat).write.mode("overwrite").partitionBy("date").parquet(f"{root}/{IDENTITIES}")


def update(spark: SparkSession, store: DataFrame, root: str, work: str, pending: frozenset[date]) -> None:
    """The parts of ``pending`` (and of the day after each, whose probes seen first depend on it) recomputed."""
    if not pending:
        return
    daily_dates = pending | {d + DAY for d in pending}
    scoped = _flat(store, daily_dates | {d - DAY for d in daily_dates})
    rewrite_dates(spark, _daily(scoped), f"{work}/{DAILY}", f"{root}/{DAILY}", daily_dates)
    rewrite_dates(spark, _identities(_flat(store, pending)), f"{work}/{IDENTITIES}", f"{root}/{IDENTITIES}", pending)


def follow(spark: SparkSession, store: DataFrame, layout: Layout, state: TableState) -> Parts:
    """The parts brought up to date with the store: updated for the pending dates where they were kept, else written whole."""
    root = layout.table("parts")
    if state.daily and hadoop_fs.exists(spark, f"{root}/{DAILY}"):
        update(spark, store, root, layout.work("parts-update"), state.pending)
    else:
        build(store, root)
    return Parts.read(spark, root)


@dataclass(frozen=True)
class Parts:
    """The kept parts, read with their schemas (no job reads a footer)."""

    daily: DataFrame
    identities: DataFrame

    @classmethod
    def read(cls, spark: SparkSession, root: str) -> Parts:
        return cls(read_table(spark, DAILY_SCHEMA, f"{root}/{DAILY}"), read_table(spark, IDENTITY_SCHEMA, f"{root}/{IDENTITIES}"))

    def span(self) -> tuple[int | None, int | None, int]:
        """The store's first and last record's time (microseconds) and its records' number."""
        row = self.daily.agg(F.min("firstUs"), F.max("lastUs"), F.sum("records")).first()
        assert row is not None
        return (None if row[0] is None else int(row[0])), (None if row[1] is None else int(row[1])), int(row[2] or 0)

    def probes(self) -> DataFrame:
        return self.daily.agg(F.coalesce(F.sum("probes"), F.lit(0)).alias("n"))


def bound_dates(baseline: Baseline) -> frozenset[date]:
    """The dates a bound of the baseline falls inside (a bound at midnight splits no date)."""
    return frozenset(date_of(us) for us in (baseline.start_us, baseline.end_us) if us is not None and us % _DAY_US != 0)


def _sides(baseline: Baseline, bounds: frozenset[date]) -> tuple[Column, Column]:
    """Whether a part's whole date lies in the baseline's history, and whether it lies in the detection window."""
    if baseline.end_us is None:
        return F.lit(False), F.lit(False)
    start = F.unix_micros(F.to_timestamp(F.col("date")))
    outside = is_in("date", bounds) if bounds else F.lit(False)
    history = (start + F.lit(_DAY_US) <= F.lit(baseline.end_us)) & ~outside
    if baseline.start_us is not None:
        history = history & (start >= F.lit(baseline.start_us))
    return history, (start >= F.lit(baseline.end_us)) & ~outside


def identities(parts: Parts, store: DataFrame, baseline: Baseline) -> DataFrame:
    """:func:`spark_audit.identity_reports.identities` of the whole store, from the parts and the bounds' dates."""
    bounds = bound_dates(baseline)
    history, detection = _sides(baseline, bounds)
    whole_dates = parts.identities.filter(history | detection).select(*IDENTITY_KEYS, history.alias(IN_BASELINE), "first", "last", "events")
    # no bound inside a date (none, or at midnight): no records to read, and no flattened store to plan (a third of a
    # second of the driver's time for an empty frame)
    per_date = whole_dates.unionByName(identity_reports.identities(_flat(store, bounds), baseline)) if bounds else whole_dates
    return (
        per_date.groupBy(*IDENTITY_KEYS, IN_BASELINE)
        .agg(F.min("first").alias("first"), F.max("last").alias("last"), F.sum("events").alias("events"))
    )


def history(parts: Parts, store: DataFrame, baseline: Baseline) -> DataFrame:
    """One row ``n``: 1 when the baseline's history holds a record of traffic, else 0."""
    bounds = bound_dates(baseline)
    whole, _ = _sides(baseline, bounds)
    seen = parts.daily.filter(whole & (F.col("traffic") > 0)).select(F.lit(1).alias("one"))
    if bounds:
        split = traffic(_flat(store, bounds)).filter(baseline.history(F.unix_micros("time")))
        seen = seen.unionByName(split.select(F.lit(1).alias("one")))
    return seen.limit(1).agg(F.count(F.lit(1)).alias("n"))
