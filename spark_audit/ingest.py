"""Turning raw lines into the record store and the quarantine, in batch or incremental mode.

Both modes read and parse each line of files once, into a staged table (spark_audit/staged_parse.py), and write its
parse once more, by kind and date (:func:`_single_write`): the store's files are those. Batch mode
rebuilds the store from all the input. Incremental mode reads only the files its manifest has
not seen (spark_audit/file_manifest.py), or for a Kafka topic runs a Structured Streaming query
with ``trigger(availableNow=True)`` over the offsets its checkpoint has not seen, and adds the
records to the store by moving the files it wrote into the store's date partitions.

Incremental de-duplication looks up the new ids among the stored ids of the new records'
dates, not in streaming state with a watermark: a watermark would drop a late-published audit
file (a proxy restarted after a crash publishes its old staging file), and an audit trail must
not lose records. Re-running a failed micro-batch is safe: records already stored are found
by that lookup, and its quarantine directory (``batch=<n>``) is rewritten.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, StringType, StructField, StructType

from spark_audit import file_manifest, hadoop_fs, staged_parse, table_state
from spark_audit.chain_integrity import chain_fields, positioned
from spark_audit.layout import Layout
from spark_audit.read import PROBLEM_COLUMN, QUARANTINE_COLUMNS, RARE_DUPLICATES, deduplicate, parse, read_paths
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

    #: the Spark job groups this run's streaming query ran its micro-batches in (its run id)
    job_groups: list[str] = field(default_factory=list)
    #: the time span of the records this run read (microseconds since the epoch; None before any record)
    first_us: int | None = None
    last_us: int | None = None

    def span(self, first_us: int | None, last_us: int | None) -> None:
        """Widen the time span by that of one more write's records."""
        if first_us is not None:
            self.first_us = first_us if self.first_us is None else min(self.first_us, first_us)
        if last_us is not None:
            self.last_us = last_us if self.last_us is None else max(self.last_us, last_us)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in ("first_us", "last_us", "job_groups")}


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty frame of ``schema``, made in the JVM.

    ``spark.createDataFrame([], schema)`` would scan an empty Python RDD, and its tasks start
    Python workers (about 50 MiB each) that stay for the rest of the run.
    """
    return spark.range(0).select(*[F.lit(None).cast(field.dataType).alias(field.name) for field in schema.fields])


def read_store(spark: SparkSession, path: str) -> DataFrame:
    """The stored records (empty when nothing was stored yet)."""
    try:
        return spark.read.schema(STORE_SCHEMA).parquet(path)
    except AnalysisException:
        return empty_frame(spark, STORE_SCHEMA)


def read_quarantine(spark: SparkSession, path: str) -> DataFrame:
    try:
        return spark.read.schema(QUARANTINE_SCHEMA).json(path)
    except AnalysisException:
        return empty_frame(spark, QUARANTINE_SCHEMA)


#: Names of the observed time span of a write's records (microseconds since the epoch).
FIRST_US, LAST_US = "firstUs", "lastUs"

#: Every Parquet read here names its schema: without one, Spark runs a job to read a file's footer.
#: Where a batch's single write puts each parsed line (``_work/ingest/kind=<kind>/date=<date>/``).
KIND = "kind"
RECORD, REPEATED, QUARANTINED = "record", "repeated", "quarantined"


def _origin_source() -> Column:
    """The file, or the Kafka partition, a line came from (a Kafka origin is ``kafka:<topic>/<partition>@<offset>``)."""
    return F.regexp_replace("origin", r"@\d+$", "")


def _origins(spark: SparkSession, lines: DataFrame) -> int:
    """Files (or Kafka partitions) read: the file listing when there is one, so no pass over the lines."""
    files = lines.inputFiles()
    if files:
        return len(files)
    row = lines.agg(F.count_distinct(_origin_source())).first()
    return 0 if row is None else int(row[0])


def _move_files(spark: SparkSession, source: str, target: str) -> None:
    """Move every ``date=<d>/`` file under ``source`` into the same partition of ``target`` (an append by renames)."""
    path, fs = hadoop_fs.file_system(spark, source)
    for day, files in hadoop_fs.date_partitions(spark, source):
        into = path(f"{target}/date={day.isoformat()}")
        fs.mkdirs(into)
        for part in files:
            if not fs.rename(part.getPath(), path(into, part.getPath().getName())):
                raise OSError(f"could not move {part.getPath()} into {into}")


def _partition_dates(spark: SparkSession, source: str) -> set[date]:
    """The dates of the ``date=<d>/`` partitions under ``source`` that hold a file."""
    return {day for day, files in hadoop_fs.date_partitions(spark, source) if files}


def _repeated_ids_of_batch(ids: DataFrame) -> DataFrame:
    """Ids seen more than once among the records' ids (the staged parse holds them)."""
    return ids.filter(F.col("id").isNotNull()).groupBy("id").count().filter(F.col("count") > 1).select("id")


def _repeated_ids_against_store(
    spark: SparkSession, layout: Layout, *, known: DataFrame | None, lines: DataFrame | None
) -> tuple[DataFrame, list[Any], int]:
    """Ids of the new records seen twice among them or already stored, the new records' dates, and their origins'
    number.

    Only the store's partitions for the dates the new records carry are read, and only their ``id``
    column: the cost follows the new input, not the history. Files: the new records' ids and dates are ``known``
    (the staged parse holds them, spark_audit/staged_parse.py); their origins are the files listed, counted by the
    caller. A topic's micro-batch: the ids and dates come from a pass over its ``lines``, whose origins (Kafka
    partitions) are counted from the same small table, as a micro-batch has no file listing; it keeps the blank
    lines (no id, no date), so a partition of blank lines counts as read, as in batch mode.
    """
    if known is None:
        assert lines is not None, "the new ids, or the lines to find them in"
        record = F.from_json("value", "id string, time timestamp")
        new = lines.select(record["id"].alias("id"), F.to_date(record["time"]).alias("date"), _origin_source().alias("origin"))
        new.write.mode("overwrite").parquet(layout.work("new-ids"))
        new_ids = spark.read.schema(new.schema).parquet(layout.work("new-ids"))
        row = new_ids.agg(F.collect_set("date"), F.count_distinct("origin")).first()
        dates, origins = ([], 0) if row is None else (list(row[0]), int(row[1]))
    else:
        new_ids = known
        row = new_ids.agg(F.collect_set("date")).first()
        dates, origins = ([], 0) if row is None else (list(row[0]), 0)
    ids = new_ids.filter(F.col("id").isNotNull()).select("id").unionAll(_stored_ids(spark, layout, dates))
    return ids.groupBy("id").count().filter(F.col("count") > 1).select("id"), dates, origins


def _stored_ids(spark: SparkSession, layout: Layout, dates: list[Any]) -> DataFrame:
    return read_store(spark, layout.records).filter(F.col("date").isin(dates)).select("id")


def _observed_kinds(frame: DataFrame) -> tuple[DataFrame, Observation]:
    """``frame`` counting its rows per kind, and the time span of its records, as the write goes:
    no second pass over what it wrote."""
    observation = Observation("ingest")
    stored = F.col(KIND) != F.lit(QUARANTINED)
    counted = frame.observe(
        observation,
        *[F.count(F.when(F.col(KIND) == F.lit(kind), True)).alias(kind) for kind in (RECORD, REPEATED, QUARANTINED)],
        F.min(F.when(stored, F.unix_micros("time"))).alias(FIRST_US),
        F.max(F.when(stored, F.unix_micros("time"))).alias(LAST_US),
    )
    return counted, observation


def _counted(frame: DataFrame) -> tuple[DataFrame, Observation]:
    observation = Observation("rows")
    return frame.observe(observation, F.count(F.lit(1)).alias("rows")), observation


def _single_write(
    spark: SparkSession,
    parsed: DataFrame,
    layout: Layout,
    stats: IngestStats,
    *,
    ids: DataFrame | None,
    quarantine: str,
    new_ids: DataFrame | None = None,
    lines: DataFrame | None = None,
) -> None:
    """Write every parsed line once (:func:`spark_audit.read.parse`'s rows), then put its records into the store.

    1. The ids seen more than once are found first, from the ids alone (``_work/duplicated-ids``):
       in batch mode among ``ids`` (the records', from the staged parse), in incremental mode among the new
       records' (``new_ids``, with their dates; or from a pass of its own over the raw ``lines`` of a topic's
       micro-batch) and those already in the store's partitions for their dates.
    2. One pass writes every parsed line to ``_work/ingest`` partitioned by kind and date:
       clean records whose id is seen once (``record``), clean records of a repeated id
       (``repeated``), and quarantined lines (``quarantined``, with their origin and text).
    3. The few ``repeated`` records are de-duplicated, and in incremental mode those already
       stored are dropped (``_work/repeated``).
    4. Batch mode: the ``record`` partitions become the store by a rename. Incremental mode:
       their files are moved into the store's date partitions, an append by renames. The kept
       repeated records are moved in the same way, and the quarantine is written to
       ``quarantine`` from its small partition.

    Re-running an incremental batch after a failure is safe: what was moved in already is found
    in the store in step 1 and dropped in step 3. Nothing is cached: Spark spills its sort and
    shuffles to its local directory.
    """
    work = layout.work("ingest")
    dates: list[Any] = []
    incremental = ids is None
    if ids is None:
        repeated_ids, dates, origins = _repeated_ids_against_store(spark, layout, known=new_ids, lines=lines)
        stats.origins += origins
    else:
        repeated_ids = _repeated_ids_of_batch(ids)
    counted_ids, ids_seen = _counted(repeated_ids)
    counted_ids.write.mode("overwrite").parquet(layout.work("duplicated-ids"))
    repeated_count = int(ids_seen.get["rows"])
    if repeated_count == 0:
        flagged = parsed.withColumn("_repeated", F.lit(None).cast("boolean"))
    else:
        repeated = spark.read.schema(repeated_ids.schema).parquet(layout.work("duplicated-ids")).withColumn("_repeated", F.lit(True))
        flagged = parsed.join(F.broadcast(repeated) if repeated_count <= RARE_DUPLICATES else repeated, "id", "left")
    kind = (
        F.when(F.col(PROBLEM_COLUMN).isNotNull(), F.lit(QUARANTINED))
        .when(F.col("_repeated").isNotNull(), F.lit(REPEATED))
        .otherwise(F.lit(RECORD))
    )
    columns: list[Column | str] = [*RECORD_SCHEMA.fieldNames(), PROBLEM_COLUMN, F.when(F.col(PROBLEM_COLUMN).isNotNull(), F.col("origin")).alias("origin"), "value"]
    written, observation = _observed_kinds(flagged.select(*columns, F.to_date("time").alias("date"), kind.alias(KIND)))
    written.write.mode("overwrite").partitionBy(KIND, "date").parquet(work)
    observed = observation.get
    counts = {k: int(observed[k]) for k in (RECORD, REPEATED, QUARANTINED)}
    stats.span(observed[FIRST_US], observed[LAST_US])
    records = counts[RECORD] + counts[REPEATED]
    kept = counts[RECORD]
    if counts[REPEATED]:
        source = f"{work}/{KIND}={REPEATED}"
        once = deduplicate(spark.read.schema(STORE_SCHEMA).option("basePath", source).parquet(source))
        if incremental:
            once = once.join(_stored_ids(spark, layout, dates), "id", "left_anti")
        once, kept_once = _counted(once)
        once.write.mode("overwrite").partitionBy("date").parquet(layout.work("repeated"))
        kept += int(kept_once.get["rows"])
    if incremental:
        # before the store changes: the kept tables (spark_audit/tables.py) must follow it on these dates
        moving = _partition_dates(spark, f"{work}/{KIND}={RECORD}")
        if counts.get(REPEATED):
            moving |= _partition_dates(spark, layout.work("repeated"))
        table_state.add_pending(layout.table_state, moving)
        _move_files(spark, f"{work}/{KIND}={RECORD}", layout.records)
    else:
        hadoop_fs.move(spark, f"{work}/{KIND}={RECORD}", layout.records)
    if counts[REPEATED]:
        _move_files(spark, layout.work("repeated"), layout.records)
    if counts[QUARANTINED]:
        spark.read.schema(QUARANTINE_SCHEMA).parquet(f"{work}/{KIND}={QUARANTINED}").select(*QUARANTINE_COLUMNS).write.mode("overwrite").json(quarantine)
    elif not incremental:
        empty_frame(spark, QUARANTINE_SCHEMA).write.mode("overwrite").json(quarantine)
    stats.lines += sum(counts.values())
    stats.records += records
    stats.malformed += counts[QUARANTINED]
    stats.stored += kept
    stats.duplicates += records - kept


def ingest_batch(spark: SparkSession, lines: DataFrame, layout: Layout, *, kafka: bool) -> IngestStats:
    """Rebuild the store and the quarantine from all the lines (:func:`_single_write`).

    The text is read once, into the staged parse (spark_audit/staged_parse.py, ``_work/staged``): the repeated ids
    are found from its ids, the store is written from its parse, and the hash chains' check reads its chain fields
    (spark_audit/pipeline.py)."""
    stats = IngestStats("batch", batches=1)
    table_state.invalidate(layout.table_state)
    stats.origins = _origins(spark, lines)
    staged = staged_parse.write(spark, lines, layout.work(staged_parse.STAGED), kafka=kafka)
    _single_write(spark, staged_parse.parsed(staged), layout, stats, ids=staged_parse.record_ids(staged), quarantine=layout.quarantine)
    return stats


class _BatchWriter:
    """The foreachBatch function of the incremental query; runs on the driver, so it can keep counts."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.stats = IngestStats("incremental")
        self.batch_ids: list[int] = []

    def __call__(self, lines: DataFrame, batch_id: int) -> None:
        spark = lines.sparkSession
        self.stats.batches += 1
        self.batch_ids.append(batch_id)
        quarantine = f"{self.layout.quarantine}/batch={batch_id}"
        _single_write(spark, parse(lines), self.layout, self.stats, ids=None, quarantine=quarantine, lines=lines)


def ingest_incremental(stream: DataFrame, layout: Layout, checkpoint: str) -> IngestStats:
    """A Kafka topic: process the offsets the checkpoint has not seen yet (``availableNow``), then stop."""
    writer = _BatchWriter(layout)
    query = stream.writeStream.foreachBatch(writer).trigger(availableNow=True).option("checkpointLocation", checkpoint).start()
    query.awaitTermination()
    writer.stats.job_groups.append(str(query.runId))
    return writer.stats


#: The kept chain fields of the ingested files (``_tables/chain/batch=<n>``): the hash chains' check reads them,
#: not every audit file's text again (spark_audit/chain_integrity.py).
CHAIN = "chain"


def keep_chain_fields(spark: SparkSession, files: list[file_manifest.AuditFile], target: str) -> None:
    """The chain fields of ``files``' lines, written to ``target``: for the files a checkpoint from before the kept
    chain fields holds, once (the new files' are kept from their staged parse). A line's position is its order within
    its file, as the check over the text has it."""
    lines = read_paths(spark, [file_manifest.readable(f) for f in files])
    chain_fields(positioned(lines, kafka=False)).write.mode("overwrite").parquet(target)


def ingest_new_files(spark: SparkSession, input_path: str, layout: Layout, checkpoint: str, *, max_files: int | None = None) -> IngestStats:
    """Files: ingest each listed file the manifest does not hold (spark_audit/file_manifest.py), ``max_files`` a batch.

    Each batch is ingested as a micro-batch was (:func:`_single_write`), its quarantine in ``batch=<n>``; the manifest
    is replaced after the batch's records are in the store. The origins are the files read, empty ones included,
    as a batch run counts the files it lists.
    """
    stats = IngestStats("incremental")
    listed = file_manifest.list_files(spark, input_path)
    before = file_manifest.with_sizes(file_manifest.load(spark, checkpoint), listed)
    if not before.chain_kept:
        # a checkpoint from before the kept chain fields: those of the files already ingested, once
        held = [f for f in listed if f.key in before.files]
        if held:
            keep_chain_fields(spark, held, f"{layout.table(CHAIN)}/batch=before-{before.next_batch}")
        before = replace(before, chain_kept=True)
    manifest = before
    new = file_manifest.new_files(listed, manifest)
    step = max_files or max(len(new), 1)
    for start in range(0, len(new), step):
        chunk = new[start : start + step]
        stats.batches += 1
        paths = [file_manifest.readable(f) for f in chunk]
        # the text read once (spark_audit/staged_parse.py): the chain fields kept, the ids and the store from there
        staged_at = layout.work(staged_parse.STAGED)
        staged = staged_parse.write(spark, read_paths(spark, paths), staged_at, kafka=False)
        staged_parse.chain_fields(staged).write.mode("overwrite").parquet(f"{layout.table(CHAIN)}/batch={manifest.next_batch}")
        quarantine = f"{layout.quarantine}/batch={manifest.next_batch}"
        _single_write(spark, staged_parse.parsed(staged), layout, stats, ids=None, quarantine=quarantine, new_ids=staged_parse.record_ids(staged))
        staged_parse.remove(spark, staged_at)
        manifest = file_manifest.after_batch(manifest, listed, chunk)
        file_manifest.save(spark, checkpoint, manifest)
    if not new:
        # nothing to read, but files the input no longer lists leave the manifest
        pruned = file_manifest.after_batch(before, listed, [])
        if pruned.files != before.files or hadoop_fs.read_text(spark, f"{checkpoint}/{file_manifest.MANIFEST}") is None:
            file_manifest.save(spark, checkpoint, replace(pruned, next_batch=before.next_batch))
    stats.origins = len(new)
    return stats
