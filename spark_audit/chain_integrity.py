"""Is the audit trail whole? The writers' hash chains and signed checkpoints (docs/audit-schema.md), checked at scale.

The check reads the raw lines itself, not the record store: the hash is over a line's exact text, which parsing
and storing do not keep. Lines are grouped by writer (`source`) and ordered by `chainseq` with window functions,
`sha2` hashes each line in the executors; only the findings and the checkpoints (a few per file) reach the driver,
where the checkpoints' Ed25519 signatures are checked. The findings mean what `envelope-proxy audit verify` says.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import Window as SparkWindow
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from spark_audit.collect import gather
from spark_audit.read import KafkaSource, nonblank, read_files, read_kafka
from spark_audit.schema import CHECKPOINT_EVENT_TYPE

REASON_START = "start"
SHA256_BITS = 256
KEY_ID_HEX_DIGITS = 16
MAX_FINDINGS = 1000
"""Findings of one kind brought to the driver: a trail broken in more places than this is broken enough to say so."""
_SIGNED_PREFIX = b"envelope-proxy audit checkpoint v1\n"
"""The checkpoint message as the proxy signs it (proxy/audit/chain_format.py; a test pins the two together)."""
_KAFKA_ORIGIN = r"^(kafka:.*)@([0-9]+)$"


def checkpoint_message(source: str, seq: int, prev: str, time: str, data: Mapping[str, Any]) -> bytes:
    predecessor = data.get("predecessor") or {}
    fields = (
        source,
        str(seq),
        prev,
        time,
        str(data.get("reason")),
        str(data.get("records")),
        str(predecessor.get("source") or ""),
        str(predecessor.get("seq") or ""),
        str(predecessor.get("hash") or ""),
    )
    return _SIGNED_PREFIX + "\n".join(fields).encode("utf-8")


def load_public_keys(paths: Sequence[str]) -> dict[str, Ed25519PublicKey]:
    """`--chain-public-key` files by key id; ValueError naming the file that is not a PEM Ed25519 public key."""
    keys: dict[str, Ed25519PublicKey] = {}
    for path in paths:
        key = serialization.load_pem_public_key(Path(path).read_bytes())
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"{path}: not an Ed25519 public key")
        raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        keys[hashlib.sha256(raw).hexdigest()[:KEY_ID_HEX_DIGITS]] = key
    return keys


def raw_lines(spark: SparkSession, input_dir: str | None, kafka: KafkaSource | None) -> DataFrame:
    """value, origin (a file, or `kafka:<topic>/<partition>`) and the line's position in it."""
    if kafka is not None:
        return positioned(read_kafka(spark, kafka), kafka=True)
    assert input_dir is not None
    return positioned(read_files(spark, input_dir), kafka=False)


def positioned(lines: DataFrame, *, kafka: bool) -> DataFrame:
    """:func:`spark_audit.read.read_files`' or :func:`spark_audit.read.read_kafka`'s lines as :func:`raw_lines` gives
    them: a Kafka origin split into its partition and offset, a file's lines numbered as they are read."""
    origin, position = line_position(kafka=kafka)
    return lines.select("value", origin.alias("origin"), position.alias("position"))


def line_position(*, kafka: bool) -> tuple[Column, Column]:
    """A raw line's origin as the check names it, and its position there: a Kafka origin's partition and offset,
    or a file and the line's order in it (evaluate it before any filter, so that the order is the file's)."""
    if kafka:
        return F.regexp_extract("origin", _KAFKA_ORIGIN, 1), F.regexp_extract("origin", _KAFKA_ORIGIN, 2).cast("long")
    # A file is read in order within its partition: the id grows with the line (files bigger than a split are cut
    # into several partitions, whose ids still grow in file order).
    return F.col("origin"), F.monotonically_increasing_id()


#: The names :func:`top_level_fields` gives the top-level fields it reads, and the keys they are read from.
_KEYS = {"writer": "source", "chainseq": "chainseq", "prev": "chainprev", "time": "time", "type": "type"}


def chain_fields(lines: DataFrame) -> DataFrame:
    """Each nonblank line's chain fields (:func:`raw_lines`' rows in, a narrow row out): all the check reads of a
    line. An ingest keeps them from its staged parse (spark_audit/staged_parse.py), which reads the text once for them
    and the records alike; this reads them from the text alone: for a topic's incremental run, the files ingested
    before the chain fields were kept, and the check of a trail on its own (:func:`check_chains`)."""
    text = F.col("value")
    top_level = lines.filter(nonblank(text)).select("origin", "position", text, top_level_fields(text))
    return top_level.select(*[column.alias(name) for name, column in chain_columns(text).items()])


def top_level_fields(text: Column) -> Column:
    """The top-level fields :func:`chain_columns` reads, as columns named as :data:`_KEYS` says. One parse of the
    line for all of them (five get_json_object calls parse it five times). A repeated key reads as its last value,
    as the proxy's verifier reads it (envelope-proxy audit verify)."""
    return F.json_tuple(text, *_KEYS.values()).alias(*_KEYS)


def chain_columns(text: Column) -> dict[str, Column]:
    """A line's chain fields (:data:`CHAIN_FIELDS`) by name, from a row holding its ``origin``, ``position`` and
    :func:`top_level_fields`."""
    kind = F.col("type")
    return {
        "origin": F.col("origin"),
        "position": F.col("position"),
        "writer": F.col("writer"),
        # try_cast: a chainseq that is no number leaves the line unchained, as the verifier has it, where a cast
        # stops the run under ANSI mode (Spark 4's default)
        "seq": F.col("chainseq").try_cast("long"),
        "prev": F.col("prev"),
        "time": F.col("time"),
        "type": kind,
        "hash": F.sha2(text, SHA256_BITS),
        # only a checkpoint's text is read again (its signature): the rows stay narrow
        "value": F.when(kind == F.lit(CHECKPOINT_EVENT_TYPE), text),
    }


#: The schema of :func:`chain_fields`' rows, to read them back without a job reading a Parquet footer.
CHAIN_FIELDS = StructType(
    [
        StructField("origin", StringType()),
        StructField("position", LongType()),
        *[StructField(name, LongType() if name == "seq" else StringType()) for name in ("writer", "seq", "prev", "time", "type", "hash", "value")],
    ]
)


def _signature_holds(row: Mapping[str, Any], keys: Mapping[str, Ed25519PublicKey]) -> tuple[bool, dict[str, Any]]:
    try:
        data = json.loads(row["value"]).get("data") or {}
        key = keys.get(str(data.get("keyid")))
        if key is None:
            return False, data
        message = checkpoint_message(str(row["writer"]), int(row["seq"]), str(row["prev"]), str(row["time"]), data)
        key.verify(base64.b64decode(str(data.get("signature")), validate=True), message)
    except (InvalidSignature, binascii.Error, ValueError, AttributeError):
        return False, {}
    return True, data


def _ranges(pairs: list[tuple[int, int]]) -> list[list[int]]:
    return [[start, end] for start, end in sorted(pairs)]


#: The parts of :func:`chain_parts`, gathered by the caller in one query (spark_audit/collect.py).
COUNTS, FINDINGS = CHAIN_PARTS = ("chain_counts", "chain_findings")
#: The kinds of :func:`chain_parts`' findings rows, each a list in :func:`conclude`'s input; the last three
#: (LIMITED) are at most :data:`MAX_FINDINGS` each.
TOTAL, CHECKPOINT, ORIGIN, GAP, MODIFIED, REORDERED = "total", "checkpoint", "origin", "gap", "modified", "reordered"
LIMITED = (GAP, MODIFIED, REORDERED)
KINDS = (TOTAL, CHECKPOINT, ORIGIN, *LIMITED)
#: A finding row's fields after its kind and writer: three numbers (a seq, a range's ends, or a writer's records, last
#: and first seq), two times (or an origin), two hashes (a line's prev; a writer's last line's hash) and a checkpoint's
#: text. A writer's total carries its first line's prev and its last line's hash: spark_audit/chain_state.py joins a
#: rerun's new lines to the kept ones with them.
FINDING = (
    ("a", "long"),
    ("b", "long"),
    ("c", "long"),
    ("first", "string"),
    ("last", "string"),
    ("prev", "string"),
    ("hash", "string"),
    ("value", "string"),
)


def _finding(kind: str, when: Column, **given: Column) -> Column:
    fields = [F.lit(kind).alias("kind"), *[(given.get(name, F.lit(None))).cast(type_).alias(name) for name, type_ in FINDING]]
    return F.when(when, F.struct(*fields))


def chain_parts(fields: DataFrame) -> dict[str, DataFrame]:
    """What :func:`conclude` needs, as two small frames: counts, and every finding (each writer's totals and
    checkpoints, and at most :data:`MAX_FINDINGS` gaps, modified and reordered lines), from :func:`chain_fields`' rows.

    The findings come from one shuffle of the chained lines by writer and two sorts: every window below is
    partitioned by writer, and all of them sit in one branch of the plan, so they share the exchange. (As separate
    parts, each pruned to its own columns, they had an exchange and a read of ``fields`` each: four shuffles of every
    chained line, 13 to 16 s for a million lines in a warm session on two cores, against 5 to 8 s now:
    docs/performance.md.)
    The counts are taken before the exchange and only chained lines are shuffled: lines without a chain never reach
    it."""
    counts = fields.agg(
        F.count(F.when(F.col("writer").isNull(), True)).alias("unreadable"),
        F.count(F.when(F.col("writer").isNotNull() & F.col("seq").isNull(), True)).alias("unchained"),
    )
    chained = fields.filter(F.col("seq").isNotNull()).repartition("writer")
    # Kafka delivers at least once: the same line twice is one record, its first copy read. Two lines at one place
    # (different hashes): one was altered.
    place = SparkWindow.partitionBy("writer", "seq").orderBy("origin", "position")
    whole_place = place.rowsBetween(SparkWindow.unboundedPreceding, SparkWindow.unboundedFollowing)
    copies = chained.select(
        "*",
        F.row_number().over(place).alias("copy"),
        (F.min("hash").over(whole_place) != F.max("hash").over(whole_place)).alias("conflict"),
    )
    one = copies.filter(F.col("copy") == 1)
    by_seq = SparkWindow.partitionBy("writer").orderBy("seq")
    whole_writer = by_seq.rowsBetween(SparkWindow.unboundedPreceding, SparkWindow.unboundedFollowing)
    read_order = SparkWindow.partitionBy("writer", "origin").orderBy("position").rowsBetween(SparkWindow.unboundedPreceding, -1)
    linked = one.select(
        "writer",
        "seq",
        "prev",
        "time",
        "type",
        "value",
        "conflict",
        F.lag("seq").over(by_seq).alias("before_seq"),
        F.lag("hash").over(by_seq).alias("before_hash"),
        F.count(F.lit(1)).over(whole_writer).alias("records"),
        F.max("seq").over(whole_writer).alias("last_seq"),
        F.min("time").over(whole_writer).alias("first_time"),
        F.max("time").over(whole_writer).alias("last_time"),
        F.last("hash").over(whole_writer).alias("last_hash"),
        F.col("origin"),
        F.max("seq").over(read_order).alias("highest_before"),
    )
    seq, before = F.col("seq"), F.coalesce(F.col("before_seq"), F.lit(0))
    findings = [
        _finding(
            TOTAL,
            F.col("before_seq").isNull(),
            a=F.col("records"),
            b=F.col("last_seq"),
            c=seq,
            first=F.col("first_time"),
            last=F.col("last_time"),
            prev=F.col("prev"),
            hash=F.col("last_hash"),
        ),
        # the first line of each writer read from each origin
        _finding(ORIGIN, F.col("highest_before").isNull(), first=F.col("origin")),
        _finding(CHECKPOINT, F.col("type") == F.lit(CHECKPOINT_EVENT_TYPE), a=seq, prev=F.col("prev"), first=F.col("time"), value=F.col("value")),
        _finding(GAP, seq > before + 1, a=before + 1, b=seq - 1),
        # a broken link: the line before was modified
        _finding(MODIFIED, (F.col("before_seq") == seq - 1) & (F.col("prev") != F.col("before_hash")), a=seq - 1),
        _finding(MODIFIED, F.col("conflict"), a=seq),
        _finding(REORDERED, seq < F.col("highest_before"), a=seq),
    ]
    found = linked.select("writer", F.explode(F.array_compact(F.array(*findings))).alias("found")).select("writer", "found.*").distinct()
    # at most MAX_FINDINGS of each limited kind (the first by writer and place); totals and checkpoints are few
    rank = F.row_number().over(SparkWindow.partitionBy("kind").orderBy("writer", "a", "b"))
    kept = found.withColumn("rank", rank).filter(~F.col("kind").isin(*LIMITED) | (F.col("rank") <= MAX_FINDINGS)).drop("rank")
    return {COUNTS: counts, FINDINGS: kept.select("kind", "writer", *[name for name, _ in FINDING])}


def check_chains(lines: DataFrame, keys: Mapping[str, Ed25519PublicKey]) -> dict[str, Any]:
    """The integrity section of summary.json: per writer, what is verified, missing, modified, reordered, signed.

    Straight from the lines, which the counts and the findings each read again: the tests' oracle for what the job
    finds from the chain fields it wrote."""
    return conclude(gather(chain_parts(chain_fields(lines))), keys)


def findings_by_kind(found: Mapping[str, Sequence[Sequence[Any]]]) -> dict[str, list[list[Any]]]:
    """:func:`chain_parts`' findings rows as gathered, by their kind (every kind present, maybe empty)."""
    of_kind: dict[str, list[list[Any]]] = {kind: [] for kind in KINDS}
    for row in found[FINDINGS]:
        of_kind[row[0]].append(list(row))
    return of_kind


def conclude(found: Mapping[str, Sequence[Sequence[Any]]], keys: Mapping[str, Ed25519PublicKey]) -> dict[str, Any]:
    """:func:`check_chains`'s result from the gathered rows of :func:`chain_parts`."""
    ((unreadable, unchained),) = found[COUNTS]
    of_kind = {kind: [row[1:] for row in rows] for kind, rows in findings_by_kind(found).items()}
    writers: dict[str, dict[str, Any]] = {}
    for name, records, last_seq, _, first_time, last_time, *_ in of_kind[TOTAL]:
        writers[name] = {
            "writer": name,
            "records": int(records),
            "last_seq": int(last_seq),
            "time_span": {"first": first_time, "last": last_time},
            "missing": [],
            "modified": [],
            "reordered": [],
            "bad_signatures": [],
            "checkpoints": 0,
            "last_checkpoint": None,
        }
    for name, start, end, *_ in of_kind[GAP]:
        writers[name]["missing"].append((int(start), int(end)))
    for name, seq, *_ in of_kind[MODIFIED]:
        writers[name]["modified"].append(int(seq))
    for name, seq, *_ in of_kind[REORDERED]:
        writers[name]["reordered"].append(int(seq))
    checkpoints = [
        {"writer": name, "seq": seq, "prev": prev, "time": time, "value": value} for name, seq, _, _, time, _, prev, _, value in of_kind[CHECKPOINT]
    ]
    claimed_ends = _check_checkpoints(checkpoints, keys, writers)
    for name, writer in writers.items():
        end = max(writer["last_checkpoint"] or 0, claimed_ends.get(name, 0))
        if end > writer["last_seq"]:
            writer["missing"].append((writer["last_seq"] + 1, end))
        _conclude(writer)
    broken = unreadable > 0 or any(writer["status"] == "broken" for writer in writers.values())
    return {
        "status": "broken" if broken else "whole",
        "signatures_checked": bool(keys),
        "unreadable": int(unreadable),
        "unchained": int(unchained),
        "writers": [writers[name] for name in sorted(writers)],
    }


def _check_checkpoints(rows: Sequence[Mapping[str, Any]], keys: Mapping[str, Ed25519PublicKey], writers: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Count the good signatures per writer, note the bad; what signed starts say their predecessors' ends were."""
    claimed_ends: dict[str, int] = {}
    if not keys:
        return claimed_ends
    for row in sorted(rows, key=lambda r: (r["writer"], r["seq"])):
        writer = writers[row["writer"]]
        holds, data = _signature_holds(row, keys)
        if not holds:
            writer["bad_signatures"].append(int(row["seq"]))
            continue
        writer["checkpoints"] += 1
        writer["last_checkpoint"] = int(row["seq"])
        predecessor = data.get("predecessor") or {}
        if data.get("reason") == REASON_START and isinstance(predecessor.get("source"), str) and isinstance(predecessor.get("seq"), int):
            claimed_ends[predecessor["source"]] = max(claimed_ends.get(predecessor["source"], 0), predecessor["seq"])
    return claimed_ends


def _conclude(writer: dict[str, Any]) -> None:
    writer["missing"] = _ranges(writer["missing"])
    for kind in ("modified", "reordered", "bad_signatures"):
        writer[kind] = sorted(set(writer[kind]))
    found = [start for start, _ in writer["missing"]] + writer["modified"] + writer["reordered"] + writer["bad_signatures"]
    writer["first_break"] = min(found) if found else None
    writer["status"] = "broken" if found else "whole"
    signed = writer["last_checkpoint"] or 0
    writer["unsigned_tail"] = [signed + 1, writer["last_seq"]] if writer["last_seq"] > signed else None
    writer["verified"] = writer["records"] - len(writer["modified"])
