"""The table the reports read, kept between runs and partitioned by date.

``requests`` holds each request's row (:func:`spark_audit.view.request_rows`, :data:`REQUEST_ROW` true)
and the connection events that are a denial or an authentication failure (:data:`REQUEST_ROW` false):
one table, so one Spark job writes it. The alarms (the request rows and connection events that are a
denial or an authentication failure) are its :data:`ALARM` partitions: the table is partitioned by date and
by whether a row is an alarm, so the reports that read only the alarms (a tenth of the rows, or less) read
only their files, not the whole table and a filter. It holds no
probes (:func:`spark_audit.view.traffic`). A batch run
writes it from the whole store. An incremental run rewrites only the dates its new records
carry (``spark_audit/table_state.py`` keeps them until the tables follow the store), and patches
the day before and after each of them: a request whose intent and outcome straddle midnight
has its row on one side and records on both.

A request's records are taken to lie within :data:`PAIRING_HORIZON` of one another: the proxy
writes an outcome within ``controller.forward.timeout.ms`` of its intent (two minutes by
default), far less than an hour. So the requests a new record belongs to are found among the
stored records of its date and the hour on either side of it, not in the whole history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_audit import hadoop_fs
from spark_audit.ingest import empty_frame
from spark_audit.layout import Layout
from spark_audit.options import ReportOptions
from spark_audit.request_reports import LATENCY_SKETCH_K
from spark_audit.view import REPORT_COLUMNS, REQUEST_ROW, flatten, request_rows, traffic

PAIRING_HORIZON = timedelta(hours=1)
REQUESTS = "requests"
DAY = timedelta(days=1)
#: The table's second partition column: the row is a denial or an authentication failure.
ALARM = "alarm"
PARTITIONS = ("date", ALARM)


def _alarming() -> Column:
    return F.col("isDenial") | F.col("isAuthFailure")


def _with_alarm(rows: DataFrame) -> DataFrame:
    return rows.withColumn(ALARM, F.coalesce(_alarming(), F.lit(False)))


def _connection_alarms(reported: DataFrame) -> DataFrame:
    return reported.filter(F.col("isConnection") & _alarming()).withColumn(REQUEST_ROW, F.lit(False))


def read_table(spark: SparkSession, schema: StructType, path: str) -> DataFrame:
    """A date-partitioned table, or an empty frame of ``schema`` where nothing was written yet."""
    try:
        return spark.read.schema(schema).parquet(path)
    except AnalysisException:
        return empty_frame(spark, schema)


def date_of(micros: int) -> date:
    """The UTC date of an instant in microseconds since the epoch (a record's ``date`` is its time's, in UTC)."""
    # integer arithmetic: a float of the seconds could round an instant just before midnight into the next day
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)).date()


def is_in(column: str, dates: Iterable[date]) -> Column:
    """``column`` (a date) is one of ``dates``: on a partition column, only those dates' files are read."""
    return F.col(column).isin(*[F.lit(d) for d in sorted(dates)])


def kept(spark: SparkSession, layout: Layout) -> bool:
    """The table is there to be updated (an operator may have removed it: then it is rebuilt)."""
    return hadoop_fs.exists(spark, layout.table(REQUESTS))


def replace_partitions(spark: SparkSession, staging: str, target: str, dates: Iterable[date]) -> None:
    """Each ``date=<d>`` of ``target`` replaced by that of ``staging``, or removed where ``staging`` has none."""
    for day in sorted(dates):
        name = f"date={day.isoformat()}"
        hadoop_fs.move(spark, f"{staging}/{name}", f"{target}/{name}")


def rewrite_dates(spark: SparkSession, frame: DataFrame, staging: str, target: str, dates: frozenset[date]) -> None:
    """The partitions of ``dates`` of the date-partitioned ``target`` replaced by ``frame``'s rows of those dates
    (written to ``staging`` first), or removed where it has none. Each date is written by one task, so in one file:
    a rerun adds no more files than dates, where each of the last shuffle's tasks would write one into every date
    (the reports are small, and every later run reads each of their files)."""
    if dates:
        frame.filter(is_in("date", dates)).repartition("date").write.mode("overwrite").partitionBy("date").parquet(staging)
        replace_partitions(spark, staging, target, dates)


@dataclass(frozen=True)
class Tables:
    requests: DataFrame
    #: the request rows and connection events that are a denial or an authentication failure: a filter of ``requests``
    alarms: DataFrame
    #: the dates whose request rows this run rewrote; None when it wrote the table whole
    rewritten: frozenset[date] | None


def _schema(store: DataFrame) -> StructType:
    return _with_alarm(request_rows(flatten(store).select(*REPORT_COLUMNS))).schema


def _tables(spark: SparkSession, schema: StructType, layout: Layout, rewritten: frozenset[date] | None) -> Tables:
    table = read_table(spark, schema, layout.table(REQUESTS))
    # a filter on a partition column: only the alarms' files are read
    return Tables(table, table.filter(F.col(ALARM)), rewritten)


def _rows(reported: DataFrame) -> DataFrame:
    """The table's rows for ``reported`` records: each request's row, and the alarming connection events."""
    return _with_alarm(request_rows(reported).unionByName(_connection_alarms(reported)))


def build(spark: SparkSession, store: DataFrame, layout: Layout) -> Tables:
    """The table from the whole store."""
    # probes are left out before the columns are cut to REPORT_COLUMNS, which has no isProbe: the table holds traffic
    reported = traffic(flatten(store)).select(*REPORT_COLUMNS)
    rows = _rows(reported)
    rows.write.mode("overwrite").partitionBy(*PARTITIONS).parquet(layout.table(REQUESTS))
    # the written rows' schema, not _schema's: analysing the request rows' plan once more cost a third of a second
    return _tables(spark, rows.schema, layout, None)


def midnight(day: date) -> datetime:
    """The instant ``day`` begins, in UTC (a record's ``date`` is its time's, in UTC)."""
    return datetime.combine(day, time(), tzinfo=UTC)


def days_from(first: date, last: date) -> frozenset[date]:
    """Every date from ``first`` to ``last``, both included."""
    return frozenset(first + DAY * n for n in range((last - first).days + 1))


def _near(days: Iterable[date]) -> Column:
    """Records within the pairing horizon of one of ``days`` (the days themselves included)."""
    ranges = []
    for day in days:
        start = midnight(day)
        ranges.append((F.col("time") >= F.lit(start - PAIRING_HORIZON)) & (F.col("time") < F.lit(start + DAY + PAIRING_HORIZON)))
    near = ranges[0]
    for each in ranges[1:]:
        near = near | each
    return near


def update(spark: SparkSession, store: DataFrame, layout: Layout, dates: frozenset[date]) -> Tables:
    """The table brought up to date after new records of ``dates`` joined the store.

    1. The stored records of ``dates`` and of the hour on either side of them are flattened, and the
       requests with a record on one of ``dates`` picked (``_work/touched-requests``).
    2. Their rows are computed from those records: all of a request's records are among them.
    3. The table's partitions of ``dates`` get those rows and the alarming connection events of ``dates``;
       in the partitions of the days next to them the rows of those requests are replaced, the rest
       (other requests' rows, connection events) is kept.
    """
    if not dates:
        return _tables(spark, _schema(store), layout, frozenset())
    neighbours = frozenset(d + step for d in dates for step in (-DAY, DAY)) - dates
    rewritten = dates | neighbours
    scoped = traffic(flatten(store.filter(is_in("date", rewritten)).filter(_near(dates)))).select(*REPORT_COLUMNS)
    touched_path = layout.work("touched-requests")
    touched_ids = scoped.filter(is_in("date", dates) & ~F.col("isConnection")).select("requestId").distinct()
    touched_ids.write.mode("overwrite").parquet(touched_path)
    touched = spark.read.schema(touched_ids.schema).parquet(touched_path)
    rows = _with_alarm(
        request_rows(scoped.join(touched, "requestId", "left_semi")).unionByName(_connection_alarms(scoped.filter(is_in("date", dates))))
    )
    # the new rows' schema, not _schema's: analysing the request rows' plan once more cost a third of a second (as in build)
    schema = rows.schema
    old = read_table(spark, schema, layout.table(REQUESTS)).filter(is_in("date", neighbours))
    kept = old.filter(F.col(REQUEST_ROW)).join(touched, "requestId", "left_anti").unionByName(old.filter(~F.col(REQUEST_ROW)))
    staged = layout.work("requests-update")
    rows.unionByName(kept).write.mode("overwrite").partitionBy(*PARTITIONS).parquet(staged)
    replace_partitions(spark, staged, layout.table(REQUESTS), rewritten)
    return _tables(spark, schema, layout, rewritten)


def within_days(options: ReportOptions) -> bool:
    """Every time bucket falls within one day: the bucket divides a day."""
    return DAY.total_seconds() % options.bucket_seconds == 0


def date_partitioned_options(options: ReportOptions) -> dict[str, int | bool]:
    """The report options a date-partitioned report's kept partitions depend on."""
    return {
        "bucketSeconds": options.bucket_seconds,
        "includeLocal": options.include_local,
        "burstWindowSeconds": options.burst_window_seconds,
        "burstThreshold": options.burst_threshold,
        # the kept counts' latency sketches are of this size: another size (or counts kept before them) are counted again
        "latencySketchK": LATENCY_SKETCH_K,
    }
