"""What the reports read: the store's time window, and the small tables a run writes from the store first.

Both are made once a run, before any report (spark_audit/pipeline.py): the window from what the ingest observed or
the per-date parts an incremental run keeps, the sources by building or updating the kept request table
(spark_audit/tables.py) and writing the identities.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_audit import daily_tables, identity_reports, tables
from spark_audit.ingest import IngestStats
from spark_audit.layout import Layout
from spark_audit.options import ReportOptions
from spark_audit.table_state import TableState
from spark_audit.view import flatten


@dataclass(frozen=True)
class Window:
    first_us: int | None
    last_us: int | None
    baseline: identity_reports.Baseline

    @classmethod
    def of(
        cls, spark: SparkSession, store: DataFrame, stats: IngestStats, options: ReportOptions, parts: daily_tables.Parts | None
    ) -> tuple[Window, int]:
        """The store's time span and its records' number: observed as a batch run wrote the store, merged from the
        per-date parts an incremental run keeps, else one query over the store."""
        if stats.mode == "batch":
            first_us, last_us, count = stats.first_us, stats.last_us, stats.stored
        elif parts is not None:
            first_us, last_us, count = parts.span()
        else:
            bounds = store.agg(F.min(F.unix_micros("time")), F.max(F.unix_micros("time")), F.count(F.lit(1))).first()
            assert bounds is not None
            first_us = None if bounds[0] is None else int(bounds[0])
            last_us = None if bounds[1] is None else int(bounds[1])
            count = int(bounds[2])
        end = options.baseline_end_us
        if end is None and last_us is not None:
            end = last_us - options.detection_window_seconds * 1_000_000
        return cls(first_us, last_us, identity_reports.Baseline(options.baseline_start_us, end)), count

    def outcomes_before(self, options: ReportOptions) -> int | None:
        """Intents written before this instant (the newest record's less the grace) have had time for an outcome."""
        return None if self.last_us is None else self.last_us - options.outcome_grace_seconds * 1_000_000


@dataclass(frozen=True)
class Sources:
    """What the reports read: the flat view of the store, and small tables written from it.

    Nothing is cached, so memory does not grow with the store: ``flat`` is a projection of the
    store (each report reads only the columns it needs), the request table is kept
    between runs under ``_tables/`` (spark_audit/tables.py), and the identities are Parquet under ``_work/``.
    """

    #: every record, flattened on read
    flat: DataFrame
    #: each request's row (:func:`spark_audit.view.request_rows`) and the alarming connection events, in the columns reports read
    requests: DataFrame
    #: the request rows and connection events that are a denial or an authentication failure:
    #: everything the denial reports, the bursts and the denial timeline look at
    alarms: DataFrame
    #: the records that name a principal, counted per principal, listener, address and side of
    #: the baseline (:func:`spark_audit.identity_reports.identities`): what the identity reports read
    identities: DataFrame
    #: the dates whose request rows this run rewrote; None when it rewrote every date
    rewritten: frozenset[date] | None

    @classmethod
    def write(
        cls,
        spark: SparkSession,
        store: DataFrame,
        layout: Layout,
        baseline: identity_reports.Baseline,
        state: TableState,
        parts: daily_tables.Parts | None,
    ) -> Sources:
        follows = parts is not None and state.built and tables.kept(spark, layout)
        kept = tables.update(spark, store, layout, state.pending) if follows else tables.build(spark, store, layout)
        flat = flatten(store)
        identities = identity_reports.identities(flat, baseline) if parts is None else daily_tables.identities(parts, store, baseline)
        identities.write.mode("overwrite").parquet(layout.work("identities"))
        # read with its schema: without one, Spark runs a job to read a file's footer
        return cls(
            flat, kept.requests, kept.alarms, spark.read.schema(identities.schema).parquet(layout.work("identities")), kept.rewritten
        )
