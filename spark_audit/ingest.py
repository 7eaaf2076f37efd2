"""Turning raw lines into the record store and the quarantine, in batch or incremental mode.

Batch mode rebuilds the store from all the input. Incremental mode runs a
Structured Streaming query with ``trigger(availableNow=True)`` and a
checkpoint: each run reads only the files (or Kafka offsets) the checkpoint
has not seen, and stops when it has caught up.

Incremental de-duplication is an anti-join against the store's partitions
for the batch's dates, not streaming state with a watermark: a watermark
would drop a late-published audit file (a proxy restarted after a crash
publishes its old staging file), and an audit trail must not lose records.
Re-running a failed micro-batch is safe: records already stored are found
by the anti-join, and its quarantine directory (``batch=<n>``) is rewritten.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, StringType, StructField, StructType

from spark_audit.layout import Layout
from spark_audit.read import PROBLEM_COLUMN, deduplicate, deduplicate_rare, parse, quarantine_of, records_of
from spark_audit.schema import RECORD_SCHEMA

STORE_SCHEMA = StructType([*RECORD_SCHEMA.fields, StructField("date", DateType(), True)])
QUARANTINE_SCHEMA = StructType(
    [
        StructField("origin", StringType(), True),
        StructField(PROBLEM_COLUMN, StringType(), True),
        StructField("value", StringType(), True),
    ]
)


@dataclass
class IngestStats:
    """What one run read and stored (incremental: only the new input)."""

    mode: str
    batches: int = 0
    lines: int = 0
    origins: int = 0
    records: int = 0
    malformed: int = 0
    duplicates: int = 0
    stored: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_store(spark: SparkSession, path: str) -> DataFrame:
    """The stored records (empty when nothing was stored yet)."""
    try:
        return spark.read.schema(STORE_SCHEMA).parquet(path)
    except AnalysisException:
        return spark.createDataFrame([], STORE_SCHEMA)


def read_quarantine(spark: SparkSession, path: str) -> DataFrame:
    try:
        return spark.read.schema(QUARANTINE_SCHEMA).json(path)
    except AnalysisException:
        return spark.createDataFrame([], QUARANTINE_SCHEMA)


def _with_date(records: DataFrame) -> DataFrame:
    return records.withColumn("date", F.to_date("time"))


def _count(parsed: DataFrame) -> tuple[int, int, int, int]:
    """(lines, origins, records, malformed) of a parsed batch, in one pass."""
    row = parsed.agg(
        F.count(F.lit(1)),
        # files, or Kafka partitions (an origin is topic/partition@offset)
        F.count_distinct(F.regexp_replace("origin", r"@\d+$", "")),
        F.count(F.when(F.col(PROBLEM_COLUMN).isNull(), True)),
        F.count(F.when(F.col(PROBLEM_COLUMN).isNotNull(), True)),
    ).first()
    if row is None:
        return 0, 0, 0, 0
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def ingest_batch(spark: SparkSession, lines: DataFrame, layout: Layout) -> IngestStats:
    """Parse every line once into a Parquet staging area, then write the quarantine and rebuild the store from it.

    Nothing is cached: the staging copy is what later steps read, so memory does not grow
    with the input (Spark spills shuffles to its local directory).
    """
    staging = layout.work("parsed")
    parse(lines).write.mode("overwrite").parquet(staging)
    parsed = spark.read.parquet(staging)
    stats = IngestStats("batch", batches=1)
    stats.lines, stats.origins, stats.records, stats.malformed = _count(parsed)
    quarantine_of(parsed).write.mode("overwrite").json(layout.quarantine)
    _with_date(deduplicate_rare(records_of(parsed), layout.work("duplicated-ids"))).write.mode("overwrite").partitionBy("date").parquet(layout.records)
    stats.stored = read_store(spark, layout.records).count()
    stats.duplicates = stats.records - stats.stored
    return stats


class _BatchWriter:
    """The foreachBatch function of the incremental query; runs on the driver, so it can keep counts."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.stats = IngestStats("incremental")

    def __call__(self, lines: DataFrame, batch_id: int) -> None:
        spark = lines.sparkSession
        parsed = parse(lines).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            line_count, origins, records, malformed = _count(parsed)
            if malformed:
                quarantine_of(parsed).write.mode("overwrite").json(f"{self.layout.quarantine}/batch={batch_id}")
            fresh = _with_date(deduplicate(records_of(parsed)))
            dates = [row["date"] for row in fresh.select("date").distinct().collect()]
            stored_ids = read_store(spark, self.layout.records).filter(F.col("date").isin(dates)).select("id")
            new = fresh.join(stored_ids, "id", "left_anti").persist(StorageLevel.MEMORY_AND_DISK)
            try:
                stored = new.count()
                if stored:
                    new.write.mode("append").partitionBy("date").parquet(self.layout.records)
            finally:
                new.unpersist()
        finally:
            parsed.unpersist()
        self.stats.batches += 1
        self.stats.lines += line_count
        self.stats.origins += origins
        self.stats.records += records
        self.stats.malformed += malformed
        self.stats.stored += stored
        self.stats.duplicates += records - stored


def ingest_incremental(stream: DataFrame, layout: Layout, checkpoint: str) -> IngestStats:
    """Process what the checkpoint has not seen yet (``availableNow``), then stop."""
    writer = _BatchWriter(layout)
    query = stream.writeStream.foreachBatch(writer).trigger(availableNow=True).option("checkpointLocation", checkpoint).start()
    query.awaitTermination()
    return writer.stats
