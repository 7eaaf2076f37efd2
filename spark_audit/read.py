"""Reading audit lines (files or a Kafka topic, batch or streaming) and telling records from junk.

Every source is first reduced to raw lines: a ``value`` (the text) and an
``origin`` (file path, or ``kafka:<topic>/<partition>@<offset>``). One parser
then turns lines into records, so files and Kafka quarantine the same lines
for the same reasons, and the quarantine can say where a bad line came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_audit.schema import AUDIT_SCHEMA, CHECKPOINT_EVENT_TYPE, CORRUPT_RECORD_COLUMN, RECORD_SCHEMA, SUPPORTED_SCHEMA_VERSIONS

#: Column of a parsed line saying why it is quarantined (null for a good record).
PROBLEM_COLUMN = "problem"
QUARANTINE_COLUMNS = ("origin", PROBLEM_COLUMN, "value")

MALFORMED = "malformed JSON or a field of the wrong type"
NO_ID = "no id"
NO_TIME = "no time"
NO_STAGE = "no data.stage"
NO_VERSION = "no schemaversion"
UNSUPPORTED_VERSION = "unsupported schemaversion"


@dataclass(frozen=True)
class KafkaSource:
    """A Kafka topic holding one audit record per message value."""

    bootstrap_servers: str
    topic: str
    #: Extra source options, e.g. ``kafka.security.protocol``; Spark's own names.
    options: Mapping[str, str] = field(default_factory=dict)

    def reader_options(self, *, streaming: bool) -> dict[str, str]:
        options = {
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "subscribe": self.topic,
            "startingOffsets": "earliest",
            # A topic whose old segments were deleted must not stop the audit.
            "failOnDataLoss": "false",
        }
        if not streaming:
            options["endingOffsets"] = "latest"
        options.update(self.options)
        return options


# --------------------------------------------------------------------------- raw lines


def read_files(spark: SparkSession, path: str) -> DataFrame:
    """The lines of every ``*.jsonl`` file directly in ``path``.

    ``.staging/`` and other sub-directories are not read: the proxy writes
    there and renames complete files into ``path``.
    """
    lines = spark.read.option("pathGlobFilter", "*.jsonl").option("recursiveFileLookup", "false").text(path)
    return lines.select("value", F.col("_metadata.file_path").alias("origin"))


def read_paths(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The lines of the files ``paths`` names (incremental mode: the files its manifest does not hold yet)."""
    return spark.read.text(paths).select("value", F.col("_metadata.file_path").alias("origin"))


def _kafka_lines(frame: DataFrame) -> DataFrame:
    origin = F.format_string("kafka:%s/%d@%d", F.col("topic"), F.col("partition"), F.col("offset"))
    return frame.select(F.col("value").cast("string").alias("value"), origin.alias("origin"))


def read_kafka(spark: SparkSession, source: KafkaSource) -> DataFrame:
    """Every message of the topic, from the earliest offset to the latest."""
    return _kafka_lines(spark.read.format("kafka").options(**source.reader_options(streaming=False)).load())


def stream_kafka(spark: SparkSession, source: KafkaSource) -> DataFrame:
    """The topic as a streaming source; the checkpoint remembers the offsets already read."""
    return _kafka_lines(spark.readStream.format("kafka").options(**source.reader_options(streaming=True)).load())


# --------------------------------------------------------------------------- parsing


def _problem(parsed: Column) -> Column:
    version_ok = parsed["schemaversion"].isin(*SUPPORTED_SCHEMA_VERSIONS)
    return (
        F.when(parsed[CORRUPT_RECORD_COLUMN].isNotNull(), F.lit(MALFORMED))
        .when(parsed["id"].isNull() | (F.trim(parsed["id"]) == ""), F.lit(NO_ID))
        .when(parsed["time"].isNull(), F.lit(NO_TIME))
        .when(parsed["data"]["stage"].isNull(), F.lit(NO_STAGE))
        .when(parsed["schemaversion"].isNull(), F.lit(NO_VERSION))
        .when(~F.coalesce(version_ok, F.lit(False)), F.concat(F.lit(f"{UNSUPPORTED_VERSION} "), parsed["schemaversion"].cast("string")))
    )


#: What JSON counts as whitespace: a line of nothing else is blank, and skipped as Spark's JSON reader skips it.
JSON_WHITESPACE = " \t\r\n"


def nonblank(text: Column) -> Column:
    """True for a line with something besides JSON whitespace in it."""
    return F.trim(text, F.lit(JSON_WHITESPACE)) != F.lit("")


#: The column :func:`parsed_line` puts a line's parse in.
PARSED = "parsed"


def parsed_line(text: Column) -> Column:
    """A line's parse: the record's fields and, for a line the schema does not fit, its corrupt-record column."""
    return F.from_json(text, AUDIT_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD_COLUMN}).alias(PARSED)


def is_checkpoint(parsed: Column) -> Column:
    """True for a parsed checkpoint: it vouches for the trail (spark_audit/chain_integrity.py reads it from the raw
    lines), and no report counts it."""
    return parsed["type"].eqNullSafe(F.lit(CHECKPOINT_EVENT_TYPE))


def parsed_columns(parsed: Column, text: Column) -> list[Column]:
    """:func:`parse`'s columns of a parsed line (``origin`` as the line's)."""
    problem = _problem(parsed)
    return [
        *[parsed[name].alias(name) for name in RECORD_SCHEMA.fieldNames()],
        problem.alias(PROBLEM_COLUMN),
        F.col("origin"),
        F.when(problem.isNotNull(), text).alias("value"),
    ]


def parse(lines: DataFrame) -> DataFrame:
    """Parse raw lines into record columns plus ``problem``, ``origin`` and ``value``.

    Blank lines are skipped, as Spark's JSON reader does, and so are checkpoints (:func:`is_checkpoint`). ``value`` is
    kept only for quarantined lines, so caching the result does not hold every line twice.
    """
    text = F.col("value")
    rows = lines.filter(nonblank(text)).select(text, F.col("origin"), parsed_line(text))
    rows = rows.filter(~is_checkpoint(F.col(PARSED)))
    return rows.select(*parsed_columns(F.col(PARSED), text))


def records_of(parsed: DataFrame) -> DataFrame:
    """The good records of a :func:`parse` result, in the record schema (not yet de-duplicated)."""
    return parsed.filter(F.col(PROBLEM_COLUMN).isNull()).select(*RECORD_SCHEMA.fieldNames())


def quarantine_of(parsed: DataFrame) -> DataFrame:
    """The quarantined lines of a :func:`parse` result: origin, problem and the raw text."""
    return parsed.filter(F.col(PROBLEM_COLUMN).isNotNull()).select(*QUARANTINE_COLUMNS)


def deduplicate(records: DataFrame) -> DataFrame:
    """One record per CloudEvents ``id`` (the proxy may write a record twice after a crash)."""
    return records.dropDuplicates(["id"])


#: Most repeated ids a batch ingest broadcasts (about 100 bytes each) to flag their records as it parses;
#: more, and it joins them with a shuffle (spilling, so memory stays bounded either way).
RARE_DUPLICATES = 200_000


def read_audit(spark: SparkSession, path: str) -> tuple[DataFrame, int]:
    """The de-duplicated records of the audit files in ``path`` and the number of quarantined lines."""
    parsed = parse(read_files(spark, path))
    return deduplicate(records_of(parsed)), quarantine_of(parsed).count()
