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
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, StringType, StructField, StructType

from spark_audit.layout import Layout
from spark_audit.read import PROBLEM_COLUMN, QUARANTINE_COLUMNS, RARE_DUPLICATES, deduplicate, parse, quarantine_of, records_of
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


#: Where a batch's single write puts each parsed line (``_work/ingest/kind=<kind>/date=<date>/``).
KIND = "kind"
RECORD, REPEATED, QUARANTINED = "record", "repeated", "quarantined"


def _move(spark: SparkSession, source: str, target: str) -> bool:
    """Replace ``target`` by the directory ``source`` (Hadoop's file system: local, HDFS...); False when ``source`` is absent."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path
    src, dst = path(source), path(target)
    fs = src.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    fs.delete(dst, True)
    if not fs.exists(src):
        return False
    fs.mkdirs(dst.getParent())
    if not fs.rename(src, dst):
        raise OSError(f"could not move {source} to {target}")
    return True


def _origins(spark: SparkSession, lines: DataFrame) -> int:
    """Files (or Kafka partitions) read: the file listing when there is one, so no pass over the lines."""
    files = lines.inputFiles()
    if files:
        return len(files)
    origin = F.regexp_replace("origin", r"@\d+$", "")
    row = lines.agg(F.count_distinct(origin)).first()
    return 0 if row is None else int(row[0])


def ingest_batch(spark: SparkSession, lines: DataFrame, layout: Layout) -> IngestStats:
    """Parse every line once and write it once; the store, the quarantine and the counts come from that write.

    1. The ids seen more than once are found first, from the ids alone (``_work/duplicated-ids``).
    2. One pass parses every line and writes it to ``_work/ingest`` partitioned by kind and date:
       clean records whose id is seen once (``record``), clean records of a repeated id
       (``repeated``), and quarantined lines (``quarantined``, with their origin and text).
    3. The ``record`` partitions become the store by a rename; the few ``repeated`` records are
       de-duplicated and appended; the quarantine is written from its small partition.

    Nothing is cached: Spark spills its sort and shuffles to its local directory.
    """
    work = layout.work("ingest")
    stats = IngestStats("batch", batches=1)
    stats.origins = _origins(spark, lines)
    ids = lines.filter(F.trim("value") != "").select(F.from_json("value", "id string")["id"].alias("id"))
    ids.filter(F.col("id").isNotNull()).groupBy("id").count().filter(F.col("count") > 1).select("id").write.mode("overwrite").parquet(
        layout.work("duplicated-ids")
    )
    repeated = spark.read.parquet(layout.work("duplicated-ids")).withColumn("_repeated", F.lit(True))
    parsed = parse(lines)
    flagged = parsed.join(F.broadcast(repeated) if repeated.count() <= RARE_DUPLICATES else repeated, "id", "left")
    kind = (
        F.when(F.col(PROBLEM_COLUMN).isNotNull(), F.lit(QUARANTINED))
        .when(F.col("_repeated").isNotNull(), F.lit(REPEATED))
        .otherwise(F.lit(RECORD))
    )
    columns: list[Column | str] = [*RECORD_SCHEMA.fieldNames(), PROBLEM_COLUMN, F.when(F.col(PROBLEM_COLUMN).isNotNull(), F.col("origin")).alias("origin"), "value"]
    flagged.select(*columns, F.to_date("time").alias("date"), kind.alias(KIND)).write.mode("overwrite").partitionBy(KIND, "date").parquet(work)
    counts = {str(k): int(n) for k, n in spark.read.parquet(work).groupBy(KIND).count().collect()}
    stats.lines = sum(counts.values())
    stats.records = counts.get(RECORD, 0) + counts.get(REPEATED, 0)
    stats.malformed = counts.get(QUARANTINED, 0)
    _move(spark, f"{work}/{KIND}={RECORD}", layout.records)
    if counts.get(REPEATED):
        repeated_records = spark.read.schema(STORE_SCHEMA).option("basePath", f"{work}/{KIND}={REPEATED}").parquet(f"{work}/{KIND}={REPEATED}")
        deduplicate(repeated_records).write.mode("append").partitionBy("date").parquet(layout.records)
    if counts.get(QUARANTINED):
        spark.read.parquet(f"{work}/{KIND}={QUARANTINED}").select(*QUARANTINE_COLUMNS).write.mode("overwrite").json(layout.quarantine)
    else:
        spark.createDataFrame([], QUARANTINE_SCHEMA).write.mode("overwrite").json(layout.quarantine)
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
