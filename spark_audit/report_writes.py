"""Writing the reports, and what an incremental run keeps of them so that a rerun's work follows the dates it rewrote.

A report is written whole, its rows counted as they are written (``observe``: no job reads it back to count). An
incremental run keeps two kinds of report state between runs instead of recomputing them over the whole history:

- the reports of :data:`DATE_LOCAL`, whose rows of a date come from that date's request rows alone: the run rewrites
  only the dates whose request rows it rewrote (spark_audit/tables.py: the new records' dates and the days next to
  them), and keeps the rest;
- the alarms' counts per date (``_tables/alarm_counts``: the denial ranking's, the denials per denier, the
  timeline's): the run recounts the dates it rewrote, and merges every date's counts (sums, mins and maxes).

Either way the kept dates are what a full run computes: the request table changes only on the dates a run rewrites,
and the pending dates (spark_audit/table_state.py) are cleared only once every report is written, so a run that dies
leaves the next one the same dates to redo. The differential test holds the incremental runs' reports to a full
run's, row for row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from pyspark.sql import DataFrame, Observation, SparkSession
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
ALARM_COUNTS = "alarm_counts"
#: The alarm counts an incremental run keeps per date (``_tables/alarm_counts``), one table for the three aggregates
#: so that one Spark job rewrites them: ``part`` says which, and each uses the columns it needs.
ALARM_COUNTS_SCHEMA = StructType(
    [
        StructField("part", StringType()),
        StructField("dimension", StringType()),
        StructField("key", StringType()),
        StructField("bucket", TimestampType()),
        StructField("denials", LongType()),
        StructField("first", TimestampType()),
        StructField("last", TimestampType()),
        StructField("date", DateType()),
    ]
)
RANKING, DENIED_BY, TIMELINE = "ranking", "denied_by", "timeline"


@dataclass(frozen=True)
class AlarmCounts:
    """What the denial ranking report and the page's denied-by and timeline parts read: unranked counts."""

    #: :func:`spark_audit.denial_reports.denial_counts`: dimension, key, denials, first, last
    ranking: DataFrame
    #: :func:`spark_audit.denial_reports.denials_by`: deniedBy, denials
    denied_by: DataFrame
    #: :func:`spark_audit.denial_reports.timeline`: bucket, kind, count
    timeline: DataFrame


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
    tables.rewrite_dates(spark, frame, layout.work(f"{name}-update"), path, rewritten)
    return None


def _per_date(alarms: DataFrame, bucket: str) -> DataFrame:
    """The three aggregates of :class:`AlarmCounts` per date, in :data:`ALARM_COUNTS_SCHEMA`'s columns."""
    none_string, none_time = F.lit(None).cast("string"), F.lit(None).cast("timestamp")
    by = ("date",)
    ranking = denial_reports.denial_counts(alarms, by=by).select(
        F.lit(RANKING).alias("part"), "dimension", "key", none_time.alias("bucket"), "denials", "first", "last", "date"
    )
    denied_by = denial_reports.denials_by(alarms, ordered=False, by=by).select(
        F.lit(DENIED_BY).alias("part"), none_string.alias("dimension"), F.col("deniedBy").alias("key"), none_time.alias("bucket"),
        "denials", none_time.alias("first"), none_time.alias("last"), "date",
    )
    timeline = denial_reports.timeline(alarms, bucket, by=by).select(
        F.lit(TIMELINE).alias("part"), F.col("kind").alias("dimension"), none_string.alias("key"), "bucket",
        F.col("count").alias("denials"), none_time.alias("first"), none_time.alias("last"), "date",
    )
    return ranking.unionByName(denied_by).unionByName(timeline)


def alarm_counts(
    spark: SparkSession, alarms: DataFrame, layout: Layout, rewritten: frozenset[date] | None, bucket: str, *, incremental: bool, kept: bool
) -> AlarmCounts:
    """A batch run counts the alarms. An incremental run merges the counts it keeps per date: recounted for the dates
    ``rewritten`` where the last run kept them with this run's options (``kept``), else counted for every date."""
    if not incremental:
        return AlarmCounts(
            denial_reports.denial_counts(alarms), denial_reports.denials_by(alarms, ordered=False), denial_reports.timeline(alarms, bucket)
        )
    path = layout.table(ALARM_COUNTS)
    per_date = _per_date(alarms, bucket)
    if rewritten is None or not kept or not hadoop_fs.exists(spark, path):
        per_date.write.mode("overwrite").partitionBy("date").parquet(path)
    else:
        tables.rewrite_dates(spark, per_date, layout.work(f"{ALARM_COUNTS}-update"), path, rewritten)
    counts = tables.read_table(spark, ALARM_COUNTS_SCHEMA, path)

    def part(name: str) -> DataFrame:
        return counts.filter(F.col("part") == F.lit(name))

    # sums, mins and maxes: what counting every alarm at once gives
    return AlarmCounts(
        denial_reports.merged_counts(part(RANKING)),
        part(DENIED_BY).groupBy(F.col("key").alias("deniedBy")).agg(F.sum("denials").alias("denials")),
        part(TIMELINE).groupBy("bucket", F.col("dimension").alias("kind")).agg(F.sum("denials").alias("count")),
    )
