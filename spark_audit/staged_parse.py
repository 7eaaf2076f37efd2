"""One read of the new audit text for everything an ingest takes from it: the parse, the chain fields, the ids.

An ingest needs three things from each new line: its parse (the store and the quarantine, spark_audit/read.py), its
hash-chain fields (spark_audit/chain_integrity.py) and, before it writes the store, the ids of all the new records,
because a repeated id is flagged as the store is written (spark_audit/ingest.py). Reading the text once for the
chain fields and the ids and again to parse it cost about one and a half times a parse: the text's read and the
row's assembly are most of a pass, and the fields' few extra expressions are little beside the parse
(docs/performance.md).

So each nonblank line is read and parsed once here, with its chain fields beside the parse in the same row, and
written to a staged Parquet table (``_work/staged``). The chain table, the ids and the store's write then read
their columns from it: a columnar read of what they need, not the text again.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DateType, StringType, StructField, StructType

from spark_audit import hadoop_fs
from spark_audit.chain_integrity import CHAIN_FIELDS, chain_columns, line_position, top_level_fields
from spark_audit.read import PARSED, PROBLEM_COLUMN, is_checkpoint, nonblank, parsed_columns, parsed_line
from spark_audit.schema import RECORD_SCHEMA

#: Where an ingest stages the parsed lines (under the output's ``_work``).
STAGED = "staged"
#: The chain fields' columns in the staged table: the prefix keeps them apart from the record's own ``time``,
#: ``type``, ``origin`` and ``value``.
_CHAIN_PREFIX = "chain_"
#: True for a checkpoint line: its chain fields count, its record does not (spark_audit/read.py :func:`parse`).
_CHECKPOINT = "checkpoint"

#: The staged table's rows, to read it back without a job reading a Parquet footer: :func:`parsed`'s columns (the
#: record, its problem, origin and quarantined text), whether it is a checkpoint, the record's date, and the chain
#: fields (a test holds :func:`write`'s rows to it).
STAGED_SCHEMA = StructType(
    [
        *RECORD_SCHEMA.fields,
        *[StructField(name, StringType(), True) for name in (PROBLEM_COLUMN, "origin", "value")],
        StructField(_CHECKPOINT, BooleanType(), True),
        StructField("date", DateType(), True),
        *[StructField(f"{_CHAIN_PREFIX}{field.name}", field.dataType, True) for field in CHAIN_FIELDS.fields],
    ]
)


def _staged_rows(lines: DataFrame, *, kafka: bool) -> DataFrame:
    text = F.col("value")
    origin, position = line_position(kafka=kafka)
    # the position first: a file's line order is its order as read, before the blank lines are skipped
    located = lines.select(text, F.col("origin"), origin.alias(f"{_CHAIN_PREFIX}origin"), position.alias("position"))
    rows = located.filter(nonblank(text)).select(
        text, "origin", f"{_CHAIN_PREFIX}origin", "position", top_level_fields(text), parsed_line(text)
    )
    chain = chain_columns(text) | {"origin": F.col(f"{_CHAIN_PREFIX}origin")}
    parsed = F.col(PARSED)
    return rows.select(
        *parsed_columns(parsed, text),
        is_checkpoint(parsed).alias(_CHECKPOINT),
        F.to_date(parsed["time"]).alias("date"),
        *[column.alias(f"{_CHAIN_PREFIX}{name}") for name, column in chain.items()],
    )


def write(spark: SparkSession, lines: DataFrame, target: str, *, kafka: bool) -> DataFrame:
    """Parse ``lines`` (a file's or a topic's raw lines) once into ``target``, and return the staged table."""
    _staged_rows(lines, kafka=kafka).write.mode("overwrite").parquet(target)
    return read(spark, target)


def read(spark: SparkSession, target: str) -> DataFrame:
    """The staged table at ``target``."""
    return spark.read.schema(STAGED_SCHEMA).parquet(target)


def remove(spark: SparkSession, target: str) -> None:
    """The staged table is scratch: the store, the quarantine and the chain table hold what it held."""
    hadoop_fs.delete(spark, target)


def parsed(staged: DataFrame) -> DataFrame:
    """:func:`spark_audit.read.parse`'s rows: every nonblank line but the checkpoints, parsed."""
    return staged.filter(~F.col(_CHECKPOINT)).select(*RECORD_SCHEMA.fieldNames(), PROBLEM_COLUMN, "origin", "value")


def chain_fields(staged: DataFrame) -> DataFrame:
    """:func:`spark_audit.chain_integrity.chain_fields`' rows: every nonblank line's chain fields."""
    return staged.select(*[F.col(f"{_CHAIN_PREFIX}{name}").alias(name) for name in CHAIN_FIELDS.fieldNames()])


def record_ids(staged: DataFrame) -> DataFrame:
    """The id and date of every record (a line neither quarantined nor a checkpoint): the ids that may repeat."""
    return staged.filter(F.col(PROBLEM_COLUMN).isNull() & ~F.col(_CHECKPOINT)).select("id", "date")
