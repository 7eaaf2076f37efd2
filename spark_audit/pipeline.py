"""One run of the job: ingest (batch or incremental) into the store, then report on the whole store."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_audit import (
    acl_hygiene,
    acl_page,
    collect,
    denial_reports,
    explain,
    hadoop_fs,
    identity_reports,
    report_basics,
    request_reports,
    table_state,
    tables,
)
from spark_audit.chain_integrity import check_chains, load_public_keys, raw_lines
from spark_audit.html_report import render
from spark_audit.ingest import IngestStats, ingest_batch, ingest_incremental, read_quarantine, read_store
from spark_audit.layout import Layout
from spark_audit.options import JobOptions, ReportOptions, format_instant
from spark_audit.read import read_files, read_kafka, stream_files, stream_kafka
from spark_audit.report_data import ReportData
from spark_audit.session import build_session
from spark_audit.table_state import TableState
from spark_audit.text_report import print_report
from spark_audit.view import flatten, probe_requests, traffic
from spark_audit.whatif import replay

#: Reports whose Parquet output is partitioned by ``date`` (they are long and have a time).
BY_DATE = frozenset({"who_did_what", "bursts", "sensitive_changes", "first_seen_pairs", "intents_without_outcome"})


def _seconds_label(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}" + ("s" if count != 1 else "")
    return f"{seconds} seconds"


def source_label(options: JobOptions) -> str:
    if options.kafka is not None:
        return f"kafka:{options.kafka.topic}@{options.kafka.bootstrap_servers}"
    return f"files:{options.input}"


def ingest(spark: SparkSession, options: JobOptions, layout: Layout) -> IngestStats:
    if options.incremental:
        if options.kafka is not None:
            stream = stream_kafka(spark, options.kafka)
        else:
            stream = stream_files(spark, str(options.input), max_files_per_trigger=options.max_files_per_trigger)
        return ingest_incremental(stream, layout, options.checkpoint or layout.default_checkpoint, files=options.kafka is None)
    lines = read_kafka(spark, options.kafka) if options.kafka is not None else read_files(spark, str(options.input))
    return ingest_batch(spark, lines, layout)


@dataclass(frozen=True)
class Window:
    first_us: int | None
    last_us: int | None
    baseline: identity_reports.Baseline

    @classmethod
    def of(cls, flat: DataFrame, options: ReportOptions) -> Window:
        bounds = flat.agg(F.min(F.unix_micros("time")), F.max(F.unix_micros("time"))).first()
        first_us = None if bounds is None or bounds[0] is None else int(bounds[0])
        last_us = None if bounds is None or bounds[1] is None else int(bounds[1])
        end = options.baseline_end_us
        if end is None and last_us is not None:
            end = last_us - options.detection_window_seconds * 1_000_000
        return cls(first_us, last_us, identity_reports.Baseline(options.baseline_start_us, end))


@dataclass(frozen=True)
class Sources:
    """What the reports read: the flat view of the store, and small tables written from it.

    Nothing is cached, so memory does not grow with the store: ``flat`` is a projection of the
    store (each report reads only the columns it needs), the request and alarm tables are kept
    between runs under ``_tables/`` (spark_audit/tables.py), and the identities are Parquet under ``_work/``.
    """

    #: every record, flattened on read
    flat: DataFrame
    #: each request's row (:func:`spark_audit.view.request_rows`), in the columns reports read
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
        cls, spark: SparkSession, store: DataFrame, layout: Layout, baseline: identity_reports.Baseline, state: TableState, *, incremental: bool
    ) -> Sources:
        follows = incremental and state.built and tables.kept(spark, layout)
        kept = tables.update(spark, store, layout, state.pending) if follows else tables.build(spark, store, layout)
        flat = flatten(store)
        identity_reports.identities(flat, baseline).write.mode("overwrite").parquet(layout.work("identities"))
        return cls(flat, kept.requests, kept.alarms, spark.read.parquet(layout.work("identities")), kept.rewritten)


def _report_frames(sources: Sources, options: ReportOptions, window: Window) -> dict[str, DataFrame]:
    grace_before = None if window.last_us is None else window.last_us - options.outcome_grace_seconds * 1_000_000
    requests, alarms = sources.requests, sources.alarms
    return {
        "requests": request_reports.requests_by_principal_method_outcome(requests, include_local=options.include_local),
        "denials": denial_reports.denials(alarms),
        "denial_ranking": denial_reports.denial_ranking(alarms),
        "bursts": denial_reports.bursts(alarms, window_seconds=options.burst_window_seconds, threshold=options.burst_threshold),
        "sensitive_changes": request_reports.sensitive_changes(requests),
        "impersonation": identity_reports.impersonation(requests),
        "unusual_listeners": identity_reports.unusual_listeners(sources.identities, window.baseline),
        "first_seen_pairs": identity_reports.first_seen_pairs(sources.identities, window.baseline),
        "intents_without_outcome": request_reports.intents_without_outcome(requests, before_us=grace_before),
        "latency": request_reports.latency(requests),
    }


def _who_did_what(spark: SparkSession, sources: Sources, options: ReportOptions, layout: Layout, state: TableState) -> DataFrame:
    """The who-did-what report; where the kept partitions were computed with these options, only the dates
    whose request rows this run rewrote (a bucket that divides a day stays within its date)."""
    bucket = f"{options.bucket_seconds} seconds"
    path = layout.report("who_did_what")
    rewritten = sources.rewritten
    if (
        rewritten is None
        or state.report_options != tables.date_partitioned_options(options)
        or tables.DAY.total_seconds() % options.bucket_seconds != 0
        or not hadoop_fs.exists(spark, path)
    ):
        return _write(spark, request_reports.who_did_what(sources.requests, bucket=bucket, include_local=options.include_local), path, by_date=True)
    frame = request_reports.who_did_what(
        sources.requests.filter(F.col("date").isin(*[F.lit(d) for d in sorted(rewritten)])),
        bucket=bucket,
        include_local=options.include_local,
    )
    if not rewritten:
        return spark.read.schema(frame.schema).parquet(path)
    staging = layout.work("who_did_what-update")
    frame.write.mode("overwrite").partitionBy("date").parquet(staging)
    tables.replace_partitions(spark, staging, path, rewritten)
    return spark.read.schema(frame.schema).parquet(path)


def _write(spark: SparkSession, frame: DataFrame, path: str, *, by_date: bool) -> DataFrame:
    """Write a report and read it back: later steps use the small Parquet output, not the lineage."""
    writer = frame.write.mode("overwrite")
    if by_date:
        writer = writer.partitionBy("date")
    writer.parquet(path)
    return spark.read.schema(frame.schema).parquet(path)


def _denial_timeline(flat: DataFrame, bucket: str) -> list[tuple[str, str, int]]:
    events = report_basics.closing_events(flat).filter(F.col("isDenial") | F.col("isAuthFailure"))
    kind = F.when(F.col("isAuthFailure"), F.lit(denial_reports.AUTHENTICATION_FAILURE)).otherwise(F.lit(denial_reports.DENIAL))
    grouped = events.groupBy(F.window("time", bucket)["start"].alias("bucket"), kind.alias("kind")).count()
    return [(str(b), str(k), int(c)) for b, k, c in collect.rows(grouped.orderBy("bucket", "kind"))]


def _collect(
    spark: SparkSession, sources: Sources, written: dict[str, DataFrame], options: ReportOptions, layout: Layout
) -> ReportData:
    top = options.top
    alarms = sources.alarms
    who = written["who_did_what"]
    ranking = written["denial_ranking"].filter(F.col("rank") <= 10).orderBy("dimension", "rank")
    ranked: dict[str, list[tuple[str, int]]] = {}
    for dimension, key, denials in collect.rows(ranking.select("dimension", "key", "denials")):
        ranked.setdefault(str(dimension), []).append((str(key), int(denials)))
    latency = collect.rows(written["latency"].select("method", "totalP50", "totalP90", "totalP99", "totalMax").limit(25))
    tables = {
        "requests": collect.table(written["requests"], max(top, 50)),
        "who_did_what": collect.table(
            who.orderBy(F.desc("requests"), "bucket", "principal", "method", "resource")
            .drop("date")
            .withColumnRenamed("requests", "requests on this resource")
            .withColumnRenamed("denied", "denied on this resource"),
            top,
        ),
        # the page's words for them: who denied, why, what changed (the Parquet reports keep every column)
        "denials": explain.denial_table(denial_reports.denial_details(alarms), top),
        "bursts": collect.table(written["bursts"].drop("date"), top),
        "sensitive_changes": explain.change_table(request_reports.sensitive_change_details(sources.requests), top),
        "impersonation": collect.table(written["impersonation"], top),
        "unusual_listeners": collect.table(written["unusual_listeners"], top),
        "first_seen_pairs": collect.table(written["first_seen_pairs"].drop("date"), top),
        "intents_without_outcome": collect.table(written["intents_without_outcome"].drop("date"), top),
        "latency": collect.table(written["latency"], top),
        "quarantine": collect.table(read_quarantine(spark, layout.quarantine).select("origin", "problem", "value"), min(top, 10)),
    }
    for name in ("whatif_counts", "whatif_changes"):
        if name in written:
            tables[name] = collect.table(written[name].drop("date") if name == "whatif_changes" else written[name], top)
    bucket = f"{options.bucket_seconds} seconds"
    denied_by = [(str(by), int(n)) for by, n in collect.rows(denial_reports.denials_by(alarms))]
    return ReportData(
        summary={},
        denied_by=denied_by,
        bucket=_seconds_label(options.bucket_seconds),
        activity=[(str(b), str(p), int(n)) for b, p, n in collect.counted(who, ["bucket", "principal"], "requests")],
        heat=[(str(p), str(m), int(n)) for p, m, n in collect.counted(who, ["principal", "method"], "requests")],
        denial_timeline=_denial_timeline(alarms, bucket),
        ranking=ranked,
        latency=[(str(m), float(a), float(b), float(c), float(d)) for m, a, b, c, d in latency],
        tables=tables,
    )


def _summary(
    options: JobOptions,
    layout: Layout,
    stats: IngestStats,
    window: Window,
    written: dict[str, DataFrame],
    data: ReportData,
    store_count: int,
    quarantined: int,
    baseline_empty: bool,
) -> dict[str, Any]:
    def count(name: str) -> int:
        table = data.tables.get(name)
        return int(table.total or 0) if table is not None else 0

    ro = options.reports
    summary: dict[str, Any] = {
        "generated_at": format_instant(int(datetime.now(UTC).timestamp() * 1_000_000)),
        "mode": stats.mode,
        "source": source_label(options),
        "time_range": {"first": format_instant(window.first_us), "last": format_instant(window.last_us)},
        "records": store_count,
        "malformed": quarantined,
        "duplicates_dropped": stats.duplicates,
        "requests": sum(int(row[3]) for row in collect.rows(written["requests"])),
        # who_did_what's rows: a request counts once per resource it names (a CreateTopics of two topics twice)
        "request_resources": sum(n for _, _, n in data.activity),
        "denials_by": dict(data.denied_by),
        "denials": count("denials"),
        "sensitive_changes": count("sensitive_changes"),
        "bursts": count("bursts"),
        "first_seen_pairs": count("first_seen_pairs"),
        "unusual_listeners": count("unusual_listeners"),
        "impersonation_pairs": count("impersonation"),
        "intents_without_outcome": count("intents_without_outcome"),
        "baseline": {
            "start": format_instant(window.baseline.start_us),
            "end": format_instant(window.baseline.end_us),
            "empty": baseline_empty,
        },
        "bucket": _seconds_label(ro.bucket_seconds),
        "burst_window": _seconds_label(ro.burst_window_seconds),
        "burst_threshold": ro.burst_threshold,
        "run": stats.as_dict(),
        "outputs": {
            "records": layout.records,
            "quarantine": layout.quarantine,
            "reports": {name: layout.report(name) for name in written if not name.startswith("whatif")},
            "summary": layout.summary,
            "html": layout.html if options.html else None,
        },
    }
    return summary


def _write_text(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def report(spark: SparkSession, options: JobOptions, layout: Layout, stats: IngestStats) -> dict[str, Any]:
    """Every report over the whole store, written as Parquet, summary.json and report.html."""
    store = read_store(spark, layout.records)
    window = Window.of(flatten(store), options.reports)
    state = table_state.load(layout.table_state)
    sources = Sources.write(spark, store, layout, window.baseline, state, incremental=stats.mode == "incremental")
    flat = sources.flat
    written = {"who_did_what": _who_did_what(spark, sources, options.reports, layout, state)}
    for name, frame in _report_frames(sources, options.reports, window).items():
        written[name] = _write(spark, frame, layout.report(name), by_date=name in BY_DATE)
    table_state.save(layout.table_state, TableState(built=True, report_options=tables.date_partitioned_options(options.reports)))
    whatif_summary: dict[str, Any] | None = None
    if options.whatif is not None:
        result = replay(spark, flat, options.whatif)
        written["whatif_changes"] = _write(spark, result.changes, layout.whatif("changes"), by_date=True)
        written["whatif_counts"] = _write(spark, result.counts, layout.whatif("counts"), by_date=False)
        whatif_summary = {
            "authorizer": options.whatif.authorizer,
            "acls": len(options.whatif.acls),
            **result.stats,
            "outputs": {"changes": layout.whatif("changes"), "counts": layout.whatif("counts")},
        }
        result.release()
    acls = None if options.acls is None else acl_hygiene.run(spark, flat, options.acls, layout, window.last_us, options.reports.top)
    data = _collect(spark, sources, written, options.reports, layout)
    auth_failures = report_basics.closing_events(sources.alarms).filter(F.col("isAuthFailure")).count()
    baseline_empty = traffic(flat).filter(window.baseline.history(F.unix_micros("time"))).limit(1).count() == 0
    quarantined = read_quarantine(spark, layout.quarantine).count()
    summary = _summary(options, layout, stats, window, written, data, store.count(), quarantined, baseline_empty)
    summary["authentication_failures"] = auth_failures
    # left out of every report above: the summary says how many there were
    summary["probes"] = probe_requests(flat).count()
    lines = raw_lines(spark, options.input, options.kafka)
    summary["integrity"] = check_chains(lines, load_public_keys(options.chain_public_keys))
    if whatif_summary is not None:
        summary["whatif"] = whatif_summary
    data = replace(data, summary=summary)
    if acls is not None:
        summary["acl_hygiene"] = acls.summary
        data = replace(data, tables={**data.tables, **acls.tables}, sections=[acl_page.section(summary, acls.tables)])
    _write_text(layout.summary, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if options.html:
        _write_text(layout.html, render(data))
    if options.print_report:
        print_report(data)
        if options.html:
            print(f"HTML report: {layout.html}")
    return summary


def run(
    input_dir: str | None,
    output_dir: str,
    master: str = "local[*]",
    *,
    spark: SparkSession | None = None,
    options: JobOptions | None = None,
    jars: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run the job and return the summary (also written to ``<output_dir>/summary.json``).

    Uses ``spark`` when given, else a session for ``master``; the session is
    not stopped. ``input_dir`` fills ``options.input`` when options name no source.
    """
    chosen = options or JobOptions()
    if chosen.input is None and chosen.kafka is None:
        chosen = replace(chosen, input=input_dir)
    session = spark if spark is not None else build_session(master, jars=jars)
    session.conf.set("spark.sql.session.timeZone", "UTC")
    layout = Layout(output_dir)
    stats = ingest(session, chosen, layout)
    return report(session, chosen, layout, stats)
