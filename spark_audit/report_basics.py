"""What the Spark job's reports share: how they name an unauthenticated principal, read a time, and pick the
records denials and bursts count.

Everything in the report modules (spark_audit/request_reports.py, denial_reports.py, identity_reports.py) is
Spark SQL expressions (no Python UDFs), so reports run in the JVM on the executors and need no Python code
shipped to a cluster. Times are compared as microseconds since the epoch so that no Python datetime (and so
no local time zone) is involved.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_audit.view import NO_OUTCOME, UNAUTHENTICATED, requests, resource_label

MICROS = 1_000_000


def micros(column: str = "time") -> Column:
    """``column`` (a timestamp) as microseconds since the epoch."""
    return F.unix_micros(F.col(column))


def in_order(frame: DataFrame, ordered: bool, *columns: str | Column) -> DataFrame:
    """``frame`` sorted by ``columns`` for a reader that shows it, or as it is for a write: a global sort in
    front of a write costs a sampling job and a shuffle of every row, and Parquet readers do not keep order."""
    return frame.orderBy(*columns) if ordered else frame


def who(column: str = "principal") -> Column:
    """The principal as the reports show it: :data:`spark_audit.view.UNAUTHENTICATED` where none was recorded."""
    return F.coalesce(F.col(column), F.lit(UNAUTHENTICATED))


def without_local(frame: DataFrame, include_local: bool) -> DataFrame:
    """``frame`` without the requests the proxy answered itself, unless ``include_local``."""
    return frame if include_local else frame.filter(F.col("stage") != F.lit("local"))


def closing_events(flat: DataFrame) -> DataFrame:
    """Each finished request once, plus every connection event: what denials and bursts count."""
    finished = requests(flat).filter(F.col("status") != F.lit(NO_OUTCOME))
    return finished.unionByName(flat.filter(F.col("isConnection")))


def described_resources() -> Column:
    """``topic:orders ALTER, topic:logs- ALTER (PREFIXED)``: each resource with its operation, and its pattern type
    where it is not LITERAL, so that a prefixed ACL binding reads differently from a literal one."""

    def one(r: Column) -> Column:
        kind = r["patternType"]
        pattern = F.when(kind.isNotNull() & (F.upper(kind) != F.lit("LITERAL")), F.concat(F.lit("("), kind, F.lit(")")))
        return F.concat_ws(" ", resource_label(r), r["operation"], pattern)

    return F.concat_ws(", ", F.transform("resources", one))
