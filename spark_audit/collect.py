"""Bringing the (small) report results to the driver for the HTML page, the text report and summary.json."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, TimestampType

from spark_audit.report_data import Table

ISO_UTC = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"


def iso(column: Column) -> Column:
    """A timestamp as an RFC 3339 UTC string (the session time zone is UTC)."""
    return F.date_format(column, ISO_UTC)


def _plain_columns(frame: DataFrame) -> list[Column]:
    columns = []
    for f in frame.schema.fields:
        if isinstance(f.dataType, TimestampType):
            columns.append(iso(F.col(f.name)).alias(f.name))
        elif isinstance(f.dataType, DateType):
            columns.append(F.col(f.name).cast("string").alias(f.name))
        else:
            columns.append(F.col(f.name))
    return columns


def plain(frame: DataFrame) -> DataFrame:
    """Timestamps and dates as strings, so collected rows hold no local-time datetimes."""
    return frame.select(*_plain_columns(frame))


def rows(frame: DataFrame, limit: int | None = None) -> list[tuple[Any, ...]]:
    limited = plain(frame) if limit is None else plain(frame).limit(limit)
    return [tuple(row) for row in limited.collect()]


def table(frame: DataFrame, limit: int, columns: Sequence[str] | None = None, *, total: int | None = None) -> Table:
    """Up to ``limit`` rows of ``frame`` (in its order) for the HTML and text reports."""
    chosen = frame.select(*columns) if columns else frame
    return Table(columns=list(chosen.columns), rows=rows(chosen, limit), total=total if total is not None else frame.count())


def counted(frame: DataFrame, keys: Sequence[str], value: str) -> list[tuple[Any, ...]]:
    """``sum(value)`` per ``keys``, as tuples (keys..., total)."""
    return rows(frame.groupBy(*keys).agg(F.sum(value).alias("total")).orderBy(*keys))


#: Column of :func:`gather`'s union naming the part a row belongs to, and the column holding the row as JSON text.
_PART, _ROW = "part", "row"


def gather(parts: Mapping[str, DataFrame]) -> dict[str, list[tuple[Any, ...]]]:
    """Every part's rows, from one Spark query: each Spark query costs a job's fixed cost (planning, scheduling, a
    scan), which on a small table is most of its time, so the page's rows and counts come from one union.

    Each part's rows come back in its order (a sorted and limited part is one partition, and a union keeps its
    inputs' partitions in order); timestamps and dates as :func:`plain` gives them.
    """
    if not parts:
        return {}
    columns = {name: frame.columns for name, frame in parts.items()}
    # null fields kept: a row's tuple has every column
    as_json = {"ignoreNullFields": "false"}
    union: DataFrame | None = None
    for name, frame in parts.items():
        # one select per part: each new DataFrame is a round trip to the JVM and an analysis of its plan
        text = frame.select(F.lit(name).alias(_PART), F.to_json(F.struct(*_plain_columns(frame)), as_json).alias(_ROW))
        union = text if union is None else union.unionAll(text)
    assert union is not None
    found: dict[str, list[tuple[Any, ...]]] = {name: [] for name in parts}
    for part, row in union.collect():
        values = json.loads(row)
        found[part].append(tuple(values.get(c) for c in columns[part]))
    return found
