"""The page's rows, the summary's counts and the report tables' first rows: small frames gathered in one Spark query
(:func:`spark_audit.collect.gather`), then finished on the driver into :class:`spark_audit.report_data.ReportData`.

The frames are small aggregates or a sorted ``limit`` of the few rows the page shows, each a branch of that one
query: of the kept request table and the store, or of a report this run has just written in full
(spark_audit/pipeline.py's ``READ_BACK``), read with its schema, so that no branch computes a report a second time
and none is a Spark job of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_audit import denial_reports, explain, tables
from spark_audit.report_data import ReportData, Table

#: Rows the page's ranking charts show per dimension.
RANKED = 10
#: APIs the latency chart shows.
LATENCY_CHART = 25
#: Rows of the requests table the page shows at least (it is the one table a reader scans whole).
REQUESTS_SHOWN = 50
#: Quarantined lines the page shows at most.
QUARANTINE_SHOWN = 10


@dataclass(frozen=True)
class Frames:
    """The reports' frames as computed from the sources (unsorted), and what the page needs beside them."""

    requests: DataFrame
    who_did_what: DataFrame
    denial_details: DataFrame
    denial_ranking: DataFrame
    bursts: DataFrame
    change_details: DataFrame
    impersonation: DataFrame
    unusual_listeners: DataFrame
    first_seen_pairs: DataFrame
    intents_without_outcome: DataFrame
    latency: DataFrame
    #: the alarm rows (the request table's denials and authentication failures)
    alarms: DataFrame
    #: :func:`spark_audit.denial_reports.denials_by` and :func:`spark_audit.denial_reports.timeline` of the alarms
    denied_by: DataFrame
    timeline: DataFrame
    quarantine: DataFrame
    bucket: str


def _who_sums(*extra: Column) -> tuple[Column, ...]:
    """What the parts over who-did-what sum: both of its counts, even where the page shows only the requests."""
    return (*extra, F.sum("requests").alias("requests"), F.sum("denied").alias("denied"))


def _who_parts(who: DataFrame) -> dict[str, DataFrame]:
    """Who-did-what's total, activity and heat map, each a sum of one aggregate per bucket, principal and method.
    Each sums every column of that aggregate, so that Spark prunes none of them and plans it once for the three
    (ReuseExchange): the report (which grows with the history) is read once for them, not three times."""
    grouped = who.groupBy("bucket", "principal", "method").agg(*_who_sums(F.count(F.lit(1)).alias("rows")))
    rows = F.coalesce(F.sum("rows"), F.lit(0)).alias("rows")
    return {
        "who_total": grouped.agg(*_who_sums(rows)),
        "activity": grouped.groupBy("bucket", "principal").agg(*_who_sums(rows)),
        "heat": grouped.groupBy("principal", "method").agg(*_who_sums(rows)),
    }


def parts(frames: Frames, top: int) -> dict[str, DataFrame]:
    """Every small frame the page and the summary read, by name."""
    f = frames
    who = f.who_did_what
    return {
        "requests": f.requests.orderBy("principal", "method", "status").limit(max(top, REQUESTS_SHOWN)),
        "who_did_what": who.orderBy(F.desc("requests"), "bucket", "principal", "method", "resource")
        .drop("date")
        .withColumnRenamed("requests", "requests on this resource")
        .withColumnRenamed("denied", "denied on this resource")
        .limit(top),
        **_who_parts(who),
        **newest(f.denial_details, f.change_details, top),
        "ranking": f.denial_ranking.filter(F.col("rank") <= RANKED).select("dimension", "rank", "key", "denials"),
        "denied_by": f.denied_by,
        "timeline": f.timeline,
        "bursts": f.bursts.orderBy("start", "clientAddress", "kind").drop("date").limit(top),
        "impersonation": f.impersonation.orderBy("forwardingPrincipal", "principal").limit(top),
        "unusual_listeners": f.unusual_listeners.orderBy("first", "principal", "listener").limit(top),
        "first_seen_pairs": f.first_seen_pairs.orderBy("first", "principal", "clientAddress").drop("date").limit(top),
        "intents_without_outcome": f.intents_without_outcome.orderBy("time", "requestId").drop("date").limit(top),
        "latency": f.latency.orderBy(F.desc("totalP99"), "method").limit(max(top, LATENCY_CHART)),
        "quarantine": f.quarantine.select("origin", "problem", "value").limit(min(top, QUARANTINE_SHOWN)),
    }


#: Dates the page's newest denials and changes are looked for on first: the newest and the day before it.
NEWEST_DATES = 2
#: The page's parts that list the newest rows of a table that grows with the history.
NEWEST = ("denials", "sensitive_changes")


def newest(denial_details: DataFrame, change_details: DataFrame, top: int) -> dict[str, DataFrame]:
    """The parts of :data:`NEWEST`: the newest ``top`` denials and sensitive changes."""
    return {"denials": explain.newest_denials(denial_details, top), "sensitive_changes": explain.newest_changes(change_details, top)}


def newest_since(first_us: int | None, last_us: int | None) -> date | None:
    """The first of the :data:`NEWEST_DATES` newest dates, where the history holds older dates too (else None: every
    date is read anyway)."""
    if first_us is None or last_us is None:
        return None
    since = tables.date_of(last_us) - timedelta(days=NEWEST_DATES - 1)
    return since if tables.date_of(first_us) < since else None


def newest_found(found: Mapping[str, Sequence[Sequence[Any]]], top: int) -> list[str]:
    """The parts of :data:`NEWEST` whose newest dates held fewer than ``top`` rows: the older dates may hold more of
    the newest, so they are gathered again over every date. A part that found ``top`` rows has the newest of all: a
    row's date is its time's, so every row of an older date is older than each row found."""
    return [name for name in NEWEST if len(found[name]) < top]


def authentication_failures(found: Mapping[str, Sequence[Sequence[Any]]]) -> int:
    """The closing events that are authentication failures: the timeline's counts of that kind, summed. The timeline
    groups every denial and authentication failure once by its time's bucket; a window drops a row without a time,
    and there is none: the ingest quarantines a record without one (``NO_TIME``)."""
    return sum(int(count) for _, kind, count in found["timeline"] if kind == denial_reports.AUTHENTICATION_FAILURE)


def _in_order(rows: Sequence[Sequence[Any]], keys: int = -1) -> list[Sequence[Any]]:
    """Rows sorted by their first ``keys`` columns (all but the last by default) as Spark sorts them: nulls first,
    strings by code point.

    The gathered parts are aggregates in no order: a sort in Spark would be a range partitioning, which samples
    its input in a job of its own."""
    return sorted(rows, key=lambda row: [(value is not None, value) for value in row[:keys]])


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], limit: int, total: int) -> Table:
    return Table(columns=list(columns), rows=[tuple(r) for r in rows[:limit]], total=total)


def finish(
    p: Mapping[str, DataFrame], found: Mapping[str, Sequence[Sequence[Any]]], totals: Mapping[str, int], top: int, bucket_label: str
) -> ReportData:
    """The page's data from :func:`parts` ``p`` and their gathered rows; ``totals`` are the written reports' row
    counts (observed as they were written)."""
    ranked: dict[str, list[tuple[str, int]]] = {}
    for dimension, _, key, denials in sorted(found["ranking"], key=lambda row: (row[0], row[1])):
        ranked.setdefault(str(dimension), []).append((str(key), int(denials)))
    ((who_rows, _, _),) = found["who_total"]
    tables = {
        name: _table(p[name].columns, found[name], top if name not in ("requests",) else max(top, REQUESTS_SHOWN), totals[name])
        for name in ("requests", "bursts", "impersonation", "unusual_listeners", "first_seen_pairs", "intents_without_outcome", "latency")
    }
    tables["who_did_what"] = _table(p["who_did_what"].columns, found["who_did_what"], top, int(who_rows))
    tables["denials"] = explain.denial_table_of(found["denials"], totals["denials"])
    tables["sensitive_changes"] = Table(explain.CHANGE_COLUMNS, explain.change_rows(found["sensitive_changes"]), totals["sensitive_changes"])
    tables["quarantine"] = _table(p["quarantine"].columns, found["quarantine"], top, totals["quarantine"])
    latency = [(str(m), float(a), float(b), float(c), float(d)) for m, _, a, b, c, d, *_ in found["latency"][:LATENCY_CHART]]
    return ReportData(
        summary={},
        denied_by=sorted(((str(by), int(n)) for by, n in found["denied_by"]), key=lambda row: (-row[1], row[0])),
        bucket=bucket_label,
        activity=[(str(b), str(p_), int(n)) for b, p_, _, n, _ in _in_order(found["activity"], keys=2)],
        heat=[(str(p_), str(m), int(n)) for p_, m, _, n, _ in _in_order(found["heat"], keys=2)],
        denial_timeline=[(str(b), str(k), int(c)) for b, k, c in _in_order(found["timeline"])],
        ranking=ranked,
        latency=latency,
        tables=tables,
    )
