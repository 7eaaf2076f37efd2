"""The audit job: read, clean, report and persist the proxy's audit records.

Run it with ``python -m spark_audit --input DIR --output DIR`` or
``spark-submit spark_audit/job.py --input DIR --output DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

try:
    from spark_audit.schema import AUDIT_SCHEMA, CORRUPT_RECORD_COLUMN
except ModuleNotFoundError:  # run as a script: ``spark-submit spark_audit/job.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from spark_audit.schema import AUDIT_SCHEMA, CORRUPT_RECORD_COLUMN

#: Kafka error codes that mean an authentication/authorization failure.
AUTHORIZATION_ERROR_CODES: dict[int, str] = {
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    58: "SASL_AUTHENTICATION_FAILED",
    65: "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
}

#: Names for the top-level error codes a denial report is likely to show
#: (the authorization failures plus the codes the proxy refuses with).
KAFKA_ERROR_NAMES: dict[int, str] = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    7: "REQUEST_TIMED_OUT",
    35: "UNSUPPORTED_VERSION",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    **AUTHORIZATION_ERROR_CODES,
}

#: Stages that close a request (one of them per request).
FINAL_STAGES = ("outcome", "refused")

REQUESTS_COLUMNS = ("principal", "method", "status", "count")
DENIALS_COLUMNS = (
    "time",
    "principal",
    "clientAddress",
    "method",
    "subject",
    "errorCode",
    "errorName",
    "status",
)

#: At most this many denials are printed (all are counted and summarised).
MAX_PRINTED_DENIALS = 200


# --------------------------------------------------------------------------- session


def build_session(master: str = "local[*]") -> SparkSession:
    """Create (or reuse) a small local-friendly SparkSession."""
    if master.startswith("local"):
        # Keep the JVM off the network (and quiet about the hostname lookup).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(master)
        .appName("spark_audit")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        # Audit times are UTC; derive dates (and print times) in UTC.
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


# --------------------------------------------------------------------------- reading


def load_raw(spark: SparkSession, input_dir: str) -> DataFrame:
    """Read every ``*.jsonl`` file directly in ``input_dir`` with the explicit schema.

    Malformed lines come back with all fields null and their raw text in
    :data:`CORRUPT_RECORD_COLUMN`. Files under ``.staging/`` (and any other
    sub-directory) are not read. The result is cached: Spark refuses queries
    on raw JSON that only reference the corrupt-record column otherwise.
    """
    return (
        spark.read.schema(AUDIT_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD_COLUMN)
        .option("pathGlobFilter", "*.jsonl")
        .option("recursiveFileLookup", "false")
        .json(input_dir)
        .cache()
    )


def split_raw(raw: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Split a :func:`load_raw` frame into (well-formed records, malformed lines).

    The records are not de-duplicated yet and have no corrupt-record column;
    the malformed frame has a single ``value`` column with the raw line.
    """
    corrupt = F.col(CORRUPT_RECORD_COLUMN)
    records = raw.filter(corrupt.isNull()).drop(CORRUPT_RECORD_COLUMN)
    malformed = raw.filter(corrupt.isNotNull()).select(corrupt.alias("value"))
    return records, malformed


def deduplicate(records: DataFrame) -> DataFrame:
    """Keep one record per CloudEvents ``id``."""
    return records.dropDuplicates(["id"])


def read_audit(spark: SparkSession, input_dir: str) -> tuple[DataFrame, int]:
    """Read the audit records in ``input_dir``.

    Returns the well-formed, de-duplicated records and the number of
    malformed lines that were dropped.
    """
    records, malformed = split_raw(load_raw(spark, input_dir))
    return deduplicate(records), malformed.count()


# --------------------------------------------------------------------------- reports


def _final_records(df: DataFrame) -> DataFrame:
    """Records that close a request (stage ``outcome`` or ``refused``)."""
    return df.filter(F.col("data.stage").isin(*FINAL_STAGES))


def requests_by_principal_method_outcome(df: DataFrame) -> DataFrame:
    """Count requests by principal, method and result status.

    Only ``outcome`` and ``refused`` records are counted, once per
    ``data.requestId``. Columns: principal, method, status, count; sorted by
    the first three.
    """
    requests = _final_records(df).select(
        F.col("data.requestId").alias("requestId"),
        F.col("data.authenticationInfo.principal").alias("principal"),
        F.col("data.methodName").alias("method"),
        F.col("data.result.status").alias("status"),
    )
    return requests.dropDuplicates(["requestId"]).groupBy("principal", "method", "status").count().orderBy("principal", "method", "status")


def _is_auth_code(code: Column) -> Column:
    return code.isin(*AUTHORIZATION_ERROR_CODES)


def _error_name(code: Column) -> Column:
    names = F.create_map(*[item for c, n in sorted(KAFKA_ERROR_NAMES.items()) for item in (F.lit(c), F.lit(n))])
    return F.try_element_at(names, code)


def is_denial() -> Column:
    """Boolean column: the record is a denial (``docs/audit-schema.md``).

    ``result.status`` is ``REFUSED``, or ``result.errorCode`` or any
    ``result.errors[*].errorCode`` is an authorization failure.
    """
    result = F.col("data.result")
    return F.coalesce(
        (result["status"] == F.lit("REFUSED"))
        | _is_auth_code(result["errorCode"])
        | F.exists(result["errors"], lambda e: _is_auth_code(e["errorCode"])),
        F.lit(False),
    )


def denials(df: DataFrame) -> DataFrame:
    """The denied requests, sorted by time.

    Columns: time, principal, clientAddress, method, subject, errorCode,
    errorName, status. The error shown is the top-level ``result.errorCode``
    when it is an authorization failure, else the first per-resource
    authorization failure, else (a refusal) the top-level code.
    """
    result = F.col("data.result")
    top_code = result["errorCode"]
    first_auth_error = F.try_element_at(F.filter(result["errors"], lambda e: _is_auth_code(e["errorCode"])), F.lit(1))
    error_code = (
        F.when(_is_auth_code(top_code), top_code).when(first_auth_error.isNotNull(), first_auth_error["errorCode"]).otherwise(top_code)
    )
    error_name = (
        F.when(_is_auth_code(top_code), _error_name(top_code))
        .when(
            first_auth_error.isNotNull(),
            F.coalesce(
                first_auth_error["errorName"],
                _error_name(first_auth_error["errorCode"]),
            ),
        )
        .otherwise(_error_name(top_code))
    )
    return (
        _final_records(df)
        .filter(is_denial())
        .select(
            F.col("time"),
            F.col("data.authenticationInfo.principal").alias("principal"),
            F.col("data.requestMetadata.clientAddress").alias("clientAddress"),
            F.col("data.methodName").alias("method"),
            F.col("subject"),
            error_code.alias("errorCode"),
            error_name.alias("errorName"),
            result["status"].alias("status"),
            F.col("id"),
        )
        .orderBy("time", "id")
        .drop("id")
    )


# --------------------------------------------------------------------------- output


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Render rows as a plain-text table with a header and a rule."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return str(value)


def print_report(
    requests_rows: Sequence[Sequence[Any]],
    denial_rows: Sequence[Sequence[Any]],
    denial_count: int,
    malformed_count: int,
    out: TextIO | None = None,
) -> None:
    """Print the human-readable report."""
    stream = out if out is not None else sys.stdout
    print("Requests by principal x method x outcome", file=stream)
    print(format_table(REQUESTS_COLUMNS, requests_rows), file=stream)
    print(file=stream)
    print(f"Denials ({denial_count})", file=stream)
    print(format_table(DENIALS_COLUMNS, denial_rows), file=stream)
    if denial_count > len(denial_rows):
        print(f"... {denial_count - len(denial_rows)} more", file=stream)
    print(file=stream)
    print(f"malformed lines: {malformed_count}", file=stream)


def run(
    input_dir: str,
    output_dir: str,
    master: str = "local[*]",
    *,
    spark: SparkSession | None = None,
) -> dict[str, int]:
    """Run the whole job and return the summary.

    Writes ``<output_dir>/records/`` (Parquet, partitioned by ``date``),
    ``<output_dir>/quarantine/`` (malformed lines, text) and
    ``<output_dir>/summary.json``; prints the report to stdout. Uses
    ``spark`` when given, else :func:`build_session` with ``master``; the
    session is not stopped.
    """
    session = spark if spark is not None else build_session(master)
    raw = load_raw(session, input_dir)
    try:
        well_formed, malformed = split_raw(raw)
        records = deduplicate(well_formed)

        malformed_count = malformed.count()
        well_formed_count = well_formed.count()
        records_count = records.count()

        out = output_dir.rstrip("/")
        records.withColumn("date", F.to_date("time")).write.mode("overwrite").partitionBy("date").parquet(f"{out}/records")
        malformed.write.mode("overwrite").text(f"{out}/quarantine")

        requests_rows = [tuple(r) for r in requests_by_principal_method_outcome(records).collect()]
        denials_df = denials(records)
        denial_count = denials_df.count()
        printable = denials_df.limit(MAX_PRINTED_DENIALS).withColumn("time", F.date_format("time", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"))
        denial_rows = [tuple(r) for r in printable.collect()]

        summary = {
            "records": records_count,
            "malformed": malformed_count,
            "duplicates_dropped": well_formed_count - records_count,
            "requests": sum(int(r[3]) for r in requests_rows),
            "denials": denial_count,
        }
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2, sort_keys=True)
            f.write("\n")

        print_report(requests_rows, denial_rows, denial_count, malformed_count)
        return summary
    finally:
        raw.unpersist()


# --------------------------------------------------------------------------- CLI


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="spark_audit",
        description="Summarise kafka-envelope-proxy audit records with Spark.",
    )
    parser.add_argument("--input", required=True, metavar="DIR", help="directory of *.jsonl audit files")
    parser.add_argument("--output", required=True, metavar="DIR", help="output directory")
    parser.add_argument(
        "--master",
        default="local[*]",
        metavar="URL",
        help="Spark master (default: local[*])",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    args = parse_args(argv)
    input_dir: str = args.input
    if "://" not in input_dir and not os.path.isdir(input_dir):
        print(f"spark_audit: input directory does not exist: {input_dir}", file=sys.stderr)
        return 2

    # Stop the session only if this call created it (not when embedded).
    owns_session = SparkSession.getActiveSession() is None
    spark = build_session(args.master)
    try:
        run(input_dir, args.output, args.master, spark=spark)
    finally:
        if owns_session:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
