"""Writing the reports, and what an incremental run keeps of them so that a rerun's work follows the dates it rewrote.

A report is written whole, its rows counted as they are written (``observe``: no job reads it back to count). An
incremental run keeps two kinds of report state between runs instead of recomputing them over the whole history:

- the reports of :data:`DATE_LOCAL`, whose rows of a date come from that date's request rows alone: the run rewrites
  only the dates whose request rows it rewrote (spark_audit/tables.py: the new records' dates and the days next to
  them), and keeps the rest;
- the denial ranking's counts per date (``_tables/denial_counts``): the run recounts the dates it rewrote, and ranks
  the merge of every date's counts.

Either way the kept dates are what a full run computes: the request table changes only on the dates a run rewrites,
and the pending dates (spark_audit/table_state.py) are cleared only once every report is written, so a run that dies
leaves the next one the same dates to redo. The differential test holds the incremental runs' reports to a full
run's, row for row.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType, TimestampType

from spark_audit import denial_reports, hadoop_fs, tables
from spark_audit.layout import Layout
from spark_audit.options import ReportOptions
from spark_audit.table_state import TableState

#: Reports whose rows of a date come from that date's request rows alone.
DATE_LOCAL = ("who_did_what", "sensitive_changes")
#: What a report's write observes beside its rows: the requests report's sum of its counts is the summary's number of requests.
SUMMED = {"requests": "count"}
DENIAL_COUNTS = "denial_counts"
DENIAL_COUNTS_SCHEMA = StructType(
    [
        StructField("dimension", StringType()),
        StructField("key", StringType()),
        StructField("denials", LongType()),
        StructField("first", TimestampType()),
        StructField("last", TimestampType()),
        StructField("date", DateType()),
    ]
)


def write(frame: DataFrame, path: str, *, by_date: bool, summed: str | None = None) -> dict[str, int]:
    """Write a report; its rows (and the sum of the column ``summed``) are counted as they are written
    (``observe``), so no Spark job reads it back to count them."""
    observation = Observation("rows")
    metrics = [F.count(F.lit(1)).alias("rows"), *([F.sum(summed).alias(summed)] if summed is not None else [])]
    writer = frame.observe(observation, *metrics).write.mode("overwrite")
    if by_date:
        writer = writer.partitionBy("date")
    writer.parquet(path)
    return {name: int(value or 0) for name, value in observation.get.items()}


def _on(dates: Iterable[date]) -> Column:
    return F.col("date").isin(*[F.lit(d) for d in sorted(dates)])


def _rewrite_dates(spark: SparkSession, frame: DataFrame, path: str, staging: str, dates: frozenset[date]) -> None:
    """The partitions of ``dates`` of the date-partitioned ``path`` replaced by ``frame``'s rows of those dates."""
    if dates:
        frame.filter(_on(dates)).write.mode("overwrite").partitionBy("date").parquet(staging)
        tables.replace_partitions(spark, staging, path, dates)


def write_date_local(
    spark: SparkSession,
    name: str,
    frame: DataFrame,
    layout: Layout,
    rewritten: frozenset[date] | None,
    options: ReportOptions,
    state: TableState,
) -> dict[str, int] | None:
    """Write a report of :data:`DATE_LOCAL`: whole (its rows counted as they are written), or, where the kept
    partitions were computed with these options, only the dates ``rewritten`` (then None: the rows of the kept dates
    are not counted here). Who-did-what's buckets must divide a day to stay within a date."""
    path = layout.report(name)
    if (
        rewritten is None
        or state.report_options != tables.date_partitioned_options(options)
        or (name == "who_did_what" and tables.DAY.total_seconds() % options.bucket_seconds != 0)
        or not hadoop_fs.exists(spark, path)
    ):
        return write(frame, path, by_date=True)
    _rewrite_dates(spark, frame, path, layout.work(f"{name}-update"), rewritten)
    return None


def denial_ranking(spark: SparkSession, alarms: DataFrame, layout: Layout, rewritten: frozenset[date] | None, *, incremental: bool, kept: bool) -> DataFrame:
    """The denial ranking's frame. A batch run ranks the alarms. An incremental run ranks the merge of the counts it
    keeps per date: recounted for the dates ``rewritten`` where the last run kept them (``kept``), else counted for
    every date."""
    if not incremental:
        return denial_reports.denial_ranking(alarms, ordered=False)
    path = layout.table(DENIAL_COUNTS)
    per_date = denial_reports.denial_counts(alarms, by=("date",)).select(*DENIAL_COUNTS_SCHEMA.fieldNames())
    if rewritten is None or not kept or not hadoop_fs.exists(spark, path):
        per_date.write.mode("overwrite").partitionBy("date").parquet(path)
    else:
        _rewrite_dates(spark, per_date, path, layout.work(f"{DENIAL_COUNTS}-update"), rewritten)
    counts = tables.read_table(spark, DENIAL_COUNTS_SCHEMA, path)
    return denial_reports.ranked(denial_reports.merged_counts(counts), ordered=False)
