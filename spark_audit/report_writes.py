"""Writing the reports, and what an incremental run keeps of them so that a rerun's work follows the dates it rewrote.

A report is written whole, its rows counted as they are written (``observe``: no job reads it back to count). An
incremental run keeps two kinds of report state between runs instead of recomputing them over the whole history:

- the reports of :data:`DATE_LOCAL`, whose rows of a date come from that date's request rows alone: the run rewrites
  only the dates whose request rows it rewrote (spark_audit/tables.py: the new records' dates and the days next to
  them), and keeps the rest;
- counts per date (``_tables/date_counts``: the requests per principal, method and status, the impersonation pairs,
  the denial ranking's counts, the denials per denier, the timeline's, and the latency's KLL sketches per method):
  the run recounts the dates it rewrote, and merges every date's counts (sums, mins, maxes, the listeners' unions and
  the sketches' merge).

Either way the kept dates are what a full run computes (the latency percentiles within their sketches' stated error
where an API has more outcomes than a sketch keeps exactly: spark_audit/request_reports.py): the request table changes
only on the dates a run rewrites, and the pending dates (spark_audit/table_state.py) are cleared only once every report
is written, so a run that dies leaves the next one the same dates to redo. The differential test holds the incremental runs' reports to a full
run's, row for row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, DateType, DoubleType, LongType, StringType, StructField, StructType, TimestampType

from spark_audit import denial_reports, hadoop_fs, identity_reports, request_reports, tables
from spark_audit.layout import Layout
from spark_audit.options import ReportOptions
from spark_audit.table_state import TableState

#: Reports whose rows of a date come from that date's request rows alone.
DATE_LOCAL = ("who_did_what", "denials", "sensitive_changes")
#: A report a rerun rewrites for some dates too: :func:`intents_dates` says which.
INTENTS = "intents_without_outcome"
#: What a report's write observes beside its rows: the requests report's sum of its counts is the summary's number of requests.
SUMMED = {"requests": "count"}
COUNTS = "date_counts"
#: The counts an incremental run keeps per date (``_tables/date_counts``), one table for the six aggregates so that one
#: Spark job rewrites them: ``part`` says which, and each uses the columns it needs.
COUNTS_SCHEMA = StructType(
    [
        StructField("part", StringType()),
        StructField("dimension", StringType()),
        StructField("key", StringType()),
        StructField("bucket", TimestampType()),
        StructField("principal", StringType()),
        StructField("method", StringType()),
        StructField("status", StringType()),
        StructField("forwardingPrincipal", StringType()),
        StructField("listeners", ArrayType(StringType())),
        StructField("requests", LongType()),
        StructField("denials", LongType()),
        StructField("first", TimestampType()),
        StructField("last", TimestampType()),
        # the latency part's (spark_audit/request_reports.py latency_sketches)
        StructField("totalMax", DoubleType()),
        StructField("totalSketch", BinaryType()),
        StructField("upstreamSketch", BinaryType()),
        StructField("upstreamCount", LongType()),
        StructField("date", DateType()),
    ]
)
RANKING, DENIED_BY, TIMELINE, REQUESTS, IMPERSONATION, LATENCY = "ranking", "denied_by", "timeline", "requests", "impersonation", "latency"


@dataclass(frozen=True)
class Counts:
    """The aggregates over the whole history that the reports and the page read, unsorted (and the ranking unranked)."""

    #: :func:`spark_audit.denial_reports.denial_counts`: dimension, key, denials, first, last
    ranking: DataFrame
    #: :func:`spark_audit.denial_reports.denials_by`: deniedBy, denials
    denied_by: DataFrame
    #: :func:`spark_audit.denial_reports.timeline`: bucket, kind, count
    timeline: DataFrame
    #: :func:`spark_audit.request_reports.requests_by_principal_method_outcome`: principal, method, status, count
    requests: DataFrame
    #: :func:`spark_audit.identity_reports.impersonation`: forwardingPrincipal, principal, listeners, requests, denied, first, last
    impersonation: DataFrame
    #: the latency report (:func:`spark_audit.request_reports.latency`), unsorted: from the merged per-date sketches
    latency: DataFrame


def write(frame: DataFrame, path: str, *, by_date: bool, summed: str | None = None, one_file_per_date: bool = False) -> dict[str, int]:
    """Write a report; its rows (and the sum of the column ``summed``) are counted as they are written
    (``observe``), so no Spark job reads it back to count them. An incremental run writes each date of a
    date-partitioned report in one task, so one file (``one_file_per_date``): every later run reads them all, where
    each task of the last shuffle would write a file into every date."""
    observation = Observation("rows")
    metrics = [F.count(F.lit(1)).alias("rows"), *([F.sum(summed).alias(summed)] if summed is not None else [])]
    observed = frame.observe(observation, *metrics)
    if by_date and one_file_per_date:
        observed = observed.repartition("date")
    writer = observed.write.mode("overwrite")
    if by_date:
        writer = writer.partitionBy("date")
    writer.parquet(path)
    return {name: int(value or 0) for name, value in observation.get.items()}


def write_date_local(
    spark: SparkSession,
    name: str,
    frame: DataFrame,
    layout: Layout,
    rewritten: frozenset[date] | None,
    options: ReportOptions,
    state: TableState,
    *,
    incremental: bool,
) -> dict[str, int] | None:
    """Write a report of :data:`DATE_LOCAL` (or :data:`INTENTS`): whole (its rows counted as they are written), or,
    where the kept partitions were computed with these options, only the dates ``rewritten`` (then None: the rows of
    the kept dates are not counted here). A report's ``date`` is its rows' (who-did-what's where its buckets divide a
    day, else it is written whole), so the filter on it reads only those dates' partitions of the request table."""
    path = layout.report(name)
    if rewritten is None or not keeps_dates(spark, name, layout, options, state):
        return write(frame, path, by_date=True, one_file_per_date=incremental)
    tables.rewrite_dates(spark, frame, layout.work(f"{name}-update"), path, rewritten)
    return None


def keeps_dates(spark: SparkSession, name: str, layout: Layout, options: ReportOptions, state: TableState) -> bool:
    """A date-partitioned report's kept partitions hold for this run: written by a run with the same options that
    they depend on (who-did-what's dates only where its buckets divide a day), and still there."""
    return (
        state.report_options == tables.date_partitioned_options(options)
        and (name != "who_did_what" or tables.within_days(options))
        and hadoop_fs.exists(spark, layout.report(name))
    )


def intents_dates(rewritten: frozenset[date] | None, kept_before_us: int | None, before_us: int | None) -> frozenset[date] | None:
    """The dates of the intents-without-outcome report a run rewrites (None: all of them). Its rows of a date are
    that date's request rows without an outcome written before an instant (the newest record's time less the grace),
    which moves between runs: beside the dates whose request rows changed, the dates from the earlier of the two
    instants to the later (and the day after, for a request whose records straddle midnight) are rewritten."""
    if rewritten is None or kept_before_us is None or before_us is None:
        return None
    low, high = sorted((kept_before_us, before_us))
    first, last = tables.date_of(low), tables.date_of(high) + tables.DAY
    return rewritten | tables.days_from(first, last)


def _per_date(requests: DataFrame, alarms: DataFrame, bucket: str, include_local: bool) -> DataFrame:
    """The aggregates of :class:`Counts` per date, in :data:`COUNTS_SCHEMA`'s columns."""
    by = ("date",)
    ranking = denial_reports.denial_counts(alarms, by=by).select("dimension", "key", "denials", "first", "last", "date")
    denied_by = denial_reports.denials_by(alarms, ordered=False, by=by).select(F.col("deniedBy").alias("key"), "denials", "date")
    timeline = denial_reports.timeline(alarms, bucket, by=by).select(
        F.col("kind").alias("dimension"), "bucket", F.col("count").alias("denials"), "date"
    )
    counted = request_reports.requests_by_principal_method_outcome(requests, include_local=include_local, ordered=False, by=by)
    pairs = identity_reports.impersonation(requests, ordered=False, by=by).withColumnRenamed("denied", "denials")
    parts = {
        RANKING: ranking,
        DENIED_BY: denied_by,
        TIMELINE: timeline,
        REQUESTS: counted.withColumnRenamed("count", "requests"),
        IMPERSONATION: pairs,
        LATENCY: request_reports.latency_sketches(requests, by=by),
    }
    framed = [
        frame.select(*(F.col(f.name) if f.name in frame.columns else F.lit(None).cast(f.dataType).alias(f.name) for f in COUNTS_SCHEMA.fields[1:]))
        .withColumn("part", F.lit(name))
        for name, frame in parts.items()
    ]
    union = framed[0]
    for frame in framed[1:]:
        union = union.unionByName(frame)
    return union


def counts(
    spark: SparkSession,
    requests: DataFrame,
    alarms: DataFrame,
    layout: Layout,
    rewritten: frozenset[date] | None,
    options: ReportOptions,
    *,
    incremental: bool,
    kept: bool,
) -> Counts:
    """A batch run counts over the request table. An incremental run merges the counts it keeps per date: recounted
    for the dates ``rewritten`` where the last run kept them with this run's options (``kept``), else counted for
    every date."""
    bucket, include_local = options.bucket, options.include_local
    if not incremental:
        return Counts(
            denial_reports.denial_counts(alarms),
            denial_reports.denials_by(alarms, ordered=False),
            denial_reports.timeline(alarms, bucket),
            request_reports.requests_by_principal_method_outcome(requests, include_local=include_local, ordered=False),
            identity_reports.impersonation(requests, ordered=False),
            request_reports.latency(requests, ordered=False),
        )
    path = layout.table(COUNTS)
    if rewritten is None or not kept or not hadoop_fs.exists(spark, path):
        # one file per date, as a rerun's rewrite writes them (spark_audit/tables.py)
        _per_date(requests, alarms, bucket, include_local).repartition("date").write.mode("overwrite").partitionBy("date").parquet(path)
    else:
        # the rewritten dates' rows alone: a filter on the kept table's partition column
        def of_dates(frame: DataFrame) -> DataFrame:
            return frame.filter(tables.is_in("date", rewritten))

        per_date = _per_date(of_dates(requests), of_dates(alarms), bucket, include_local)
        tables.rewrite_dates(spark, per_date, layout.work(f"{COUNTS}-update"), path, rewritten)
    kept_counts = tables.read_table(spark, COUNTS_SCHEMA, path)

    def part(name: str) -> DataFrame:
        return kept_counts.filter(F.col("part") == F.lit(name))

    # sums, mins, maxes and unions: what counting every row at once gives
    return Counts(
        denial_reports.merged_counts(part(RANKING)),
        part(DENIED_BY).groupBy(F.col("key").alias("deniedBy")).agg(F.sum("denials").alias("denials")),
        part(TIMELINE).groupBy("bucket", F.col("dimension").alias("kind")).agg(F.sum("denials").alias("count")),
        request_reports.merged_requests(part(REQUESTS).withColumnRenamed("requests", "count")),
        identity_reports.merged_impersonation(part(IMPERSONATION).withColumnRenamed("denials", "denied")),
        request_reports.latency_of_sketches(part(LATENCY), merge=True, ordered=False),
    )
