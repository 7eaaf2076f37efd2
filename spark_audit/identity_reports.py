"""The identity reports: who forwarded whose requests, and principals on a listener or from an address their
history never saw.

Each is a function from :func:`spark_audit.view.flatten`'s rows (or the job's tables) to a DataFrame, in
Spark SQL expressions only (spark_audit/report_basics.py says why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_audit.report_basics import in_order, micros, who
from spark_audit.view import requests, traffic


@dataclass(frozen=True)
class Baseline:
    """The history new behaviour is compared with: records in [start, end); the detection window is [end, ...)."""

    start_us: int | None
    end_us: int | None

    def history(self, time_us: Column) -> Column:
        if self.end_us is None:
            return F.lit(False)
        inside = time_us < F.lit(self.end_us)
        return inside if self.start_us is None else inside & (time_us >= F.lit(self.start_us))

    def detection(self, time_us: Column) -> Column:
        return F.lit(False) if self.end_us is None else time_us >= F.lit(self.end_us)


def impersonation(flat: DataFrame, *, ordered: bool = True, by: Sequence[str] = ()) -> DataFrame:
    """Who forwarded whose requests: forwardingPrincipal x principal, per ``by`` columns too (an incremental run
    keeps the pairs per date: spark_audit/report_writes.py).

    Columns: ``by``, forwardingPrincipal, principal, listeners (sorted), requests,
    denied, first, last.
    """
    pairs = (
        requests(flat)
        .filter(F.col("forwardingPrincipal").isNotNull())
        .groupBy(*by, "forwardingPrincipal", who().alias("principal"))
        .agg(
            F.sort_array(F.collect_set("listener")).alias("listeners"),
            F.count(F.lit(1)).alias("requests"),
            F.count(F.when(F.col("isDenial"), True)).alias("denied"),
            F.min("time").alias("first"),
            F.max("time").alias("last"),
        )
    )
    return in_order(pairs, ordered, "forwardingPrincipal", "principal")


def merged_impersonation(pairs: DataFrame) -> DataFrame:
    """:func:`impersonation` kept per date, merged over every date (unsorted): the listeners' union, the counts'
    sums, the first's min and the last's max, which is what grouping every request at once gives."""
    return pairs.groupBy("forwardingPrincipal", "principal").agg(
        F.sort_array(F.array_distinct(F.flatten(F.collect_list("listeners")))).alias("listeners"),
        F.sum("requests").alias("requests"),
        F.sum("denied").alias("denied"),
        F.min("first").alias("first"),
        F.max("last").alias("last"),
    )


#: Column of :func:`identities` rows: true for the baseline's history, false for the detection window.
IN_BASELINE = "inBaseline"


def identities(flat: DataFrame, baseline: Baseline) -> DataFrame:
    """Records that name a principal (requests and connection events alike; not probes), counted per principal,
    listener, client address and side of the baseline: what the two identity reports read.

    Columns: principal, listener, clientAddress, inBaseline, first, last, events. One pass over
    the records gives a table far smaller than them; records neither in the baseline nor in the
    detection window (before ``--baseline-start``) are left out.
    """
    us = micros()
    in_baseline = baseline.history(us)
    return (
        traffic(flat)
        .filter(F.col("principal").isNotNull() & (in_baseline | baseline.detection(us)))
        .groupBy("principal", "listener", "clientAddress", in_baseline.alias(IN_BASELINE))
        .agg(F.min("time").alias("first"), F.max("time").alias("last"), F.count(F.lit(1)).alias("events"))
    )


def _identities(frame: DataFrame, baseline: Baseline) -> DataFrame:
    return frame if IN_BASELINE in frame.columns else identities(frame, baseline)


def unusual_listeners(flat: DataFrame, baseline: Baseline, *, ordered: bool = True) -> DataFrame:
    """A principal with a history acting over a listener that history never saw.

    Columns: principal, listener, first, last, events, baselineListeners.
    A principal with no history at all is a first-seen pair instead.
    ``flat`` may be the records or their :func:`identities`.
    """
    rows = _identities(flat, baseline).filter(F.col("listener").isNotNull())
    history = (
        rows.filter(F.col(IN_BASELINE)).groupBy("principal").agg(F.sort_array(F.collect_set("listener")).alias("baselineListeners"))
    )
    recent = (
        rows.filter(~F.col(IN_BASELINE))
        .groupBy("principal", "listener")
        .agg(F.min("first").alias("first"), F.max("last").alias("last"), F.sum("events").alias("events"))
    )
    unusual = (
        recent.join(history, "principal")
        .filter(~F.array_contains("baselineListeners", F.col("listener")))
        .select("principal", "listener", "first", "last", "events", "baselineListeners")
    )
    return in_order(unusual, ordered, "first", "principal", "listener")


def first_seen_pairs(flat: DataFrame, baseline: Baseline, *, ordered: bool = True) -> DataFrame:
    """(principal, client address) pairs of the detection window that the baseline never saw.

    Columns: principal, clientAddress, first, last, events, listeners, date.
    ``flat`` may be the records or their :func:`identities`.
    """
    rows = _identities(flat, baseline).filter(F.col("clientAddress").isNotNull())
    known = rows.filter(F.col(IN_BASELINE)).select("principal", "clientAddress").distinct()
    recent = (
        rows.filter(~F.col(IN_BASELINE))
        .groupBy("principal", "clientAddress")
        .agg(
            F.min("first").alias("first"),
            F.max("last").alias("last"),
            F.sum("events").alias("events"),
            F.sort_array(F.collect_set("listener")).alias("listeners"),
        )
    )
    pairs = (
        recent.join(known, ["principal", "clientAddress"], "left_anti")
        .withColumn("date", F.to_date("first"))
        .select("principal", "clientAddress", "first", "last", "events", "listeners", "date")
    )
    return in_order(pairs, ordered, "first", "principal", "clientAddress")
