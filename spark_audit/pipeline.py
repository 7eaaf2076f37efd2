"""One run of the job: ingest (batch or incremental) into the store, then report on the whole store."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_audit import (
    acl_hygiene,
    acl_page,
    burst_rewrite,
    chain_state,
    collect,
    daily_tables,
    denial_reports,
    identity_reports,
    page_parts,
    report_writes,
    request_reports,
    spark_jobs,
    staged_parse,
    table_state,
    tables,
)
from spark_audit.chain_integrity import CHAIN_FIELDS, chain_fields, chain_parts, conclude, load_public_keys, raw_lines
from spark_audit.collect import gather
from spark_audit.html_report import render
from spark_audit.ingest import CHAIN, IngestStats, ingest_batch, ingest_incremental, ingest_new_files, read_quarantine, read_store
from spark_audit.layout import Layout
from spark_audit.options import JobOptions, ReportOptions, format_instant
from spark_audit.read import read_files, read_kafka, stream_kafka
from spark_audit.report_data import ReportData, Table
from spark_audit.report_inputs import Sources, Window
from spark_audit.session import build_session
from spark_audit.table_state import TableState
from spark_audit.text_report import print_report
from spark_audit.view import probe_requests, traffic
from spark_audit.whatif import replay

#: Reports whose Parquet output is partitioned by ``date`` (they are long and have a time).
BY_DATE = frozenset({"who_did_what", "denials", "bursts", "sensitive_changes", "first_seen_pairs", "intents_without_outcome"})


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
        checkpoint = options.checkpoint or layout.default_checkpoint
        if options.kafka is not None:
            return ingest_incremental(stream_kafka(spark, options.kafka), layout, checkpoint)
        return ingest_new_files(spark, str(options.input), layout, checkpoint, max_files=options.max_files_per_trigger)
    lines = read_kafka(spark, options.kafka) if options.kafka is not None else read_files(spark, str(options.input))
    return ingest_batch(spark, lines, layout, kafka=options.kafka is not None)


def _frames(
    spark: SparkSession, sources: Sources, options: ReportOptions, window: Window, layout: Layout, counts: report_writes.Counts
) -> page_parts.Frames:
    """Every report's frame, unsorted: Parquet keeps no order, and a global sort before a write is a job of its own."""
    requests, alarms = sources.requests, sources.alarms
    return page_parts.Frames(
        requests=counts.requests,
        who_did_what=request_reports.who_did_what(
            requests, bucket=options.bucket, include_local=options.include_local, ordered=False, within_days=tables.within_days(options)
        ),
        denial_details=denial_reports.denial_details(alarms),
        denial_ranking=denial_reports.ranked(counts.ranking, ordered=False),
        bursts=denial_reports.bursts(alarms, window_seconds=options.burst_window_seconds, threshold=options.burst_threshold, ordered=False),
        change_details=request_reports.sensitive_change_details(requests, ordered=False),
        impersonation=counts.impersonation,
        unusual_listeners=identity_reports.unusual_listeners(sources.identities, window.baseline, ordered=False),
        first_seen_pairs=identity_reports.first_seen_pairs(sources.identities, window.baseline, ordered=False),
        intents_without_outcome=request_reports.intents_without_outcome(requests, before_us=window.outcomes_before(options), ordered=False),
        latency=counts.latency,
        alarms=alarms,
        denied_by=counts.denied_by,
        timeline=counts.timeline,
        quarantine=read_quarantine(spark, layout.quarantine),
        bucket=options.bucket,
    )


def _reports(frames: page_parts.Frames) -> dict[str, DataFrame]:
    """The Parquet reports and their frames."""
    return {
        "who_did_what": frames.who_did_what,
        "requests": frames.requests,
        "denials": denial_reports.denials(frames.alarms, ordered=False),
        "denial_ranking": frames.denial_ranking,
        "bursts": frames.bursts,
        "sensitive_changes": frames.change_details.select(*request_reports.SENSITIVE_CHANGE_COLUMNS),
        "impersonation": frames.impersonation,
        "unusual_listeners": frames.unusual_listeners,
        "first_seen_pairs": frames.first_seen_pairs,
        "intents_without_outcome": frames.intents_without_outcome,
        "latency": frames.latency,
    }


#: The reports the page's parts read back as written, not recompute from the sources: each is one scan in the
#: gathering query where recomputing it was its whole plan again (windows, joins, explodes, their exchanges and
#: compiled stages), for rows that are on disk already. The rest stay computed: the page reads columns of the
#: denials and the changes that their reports leave out.
READ_BACK = ("requests", "who_did_what", "denial_ranking", "bursts", "impersonation", "unusual_listeners", "first_seen_pairs", "intents_without_outcome", "latency")


def _read_report(spark: SparkSession, frame: DataFrame, path: str) -> DataFrame:
    """A written report in ``frame``'s columns and order (a partition column is read last), read with its schema:
    with the run's partition discovery on the driver (spark_audit/spark_jobs.py), no Spark job of its own."""
    return spark.read.schema(frame.schema).parquet(path).select(*frame.columns)


def _rows_part(name: str) -> str:
    return f"{name}_rows"


def _as_written(spark: SparkSession, frames: page_parts.Frames, layout: Layout) -> page_parts.Frames:
    """``frames`` with the reports of :data:`READ_BACK` read from their Parquet output (in the frames' columns and
    order: a partition column is read last). With their schema given (and the run's partition discovery on the
    driver, spark_audit/spark_jobs.py), reading starts no Spark job of its own.

    Who-did-what is read back in an incremental run too, where the run rewrote only some of its dates: a date's
    rows come from that date's request rows alone, :func:`spark_audit.report_writes.write_date_local` rewrote every date whose request rows
    changed, and the pending dates are cleared only once every report is written, so the kept dates are what a
    full run computes (the differential test holds the two to the same rows and the same ``request_resources``).
    Computed from the request table instead, its four parts were most of a rerun's page: 5.4 s over 3 days of
    300,000 records a day, 8.1 s over 9 (docs/performance.md)."""
    read_back: dict[str, Any] = {name: _read_report(spark, getattr(frames, name), layout.report(name)) for name in READ_BACK}
    return replace(frames, **read_back)


def _whatif(spark: SparkSession, flat: DataFrame, options: JobOptions, layout: Layout, top: int) -> tuple[dict[str, Any], dict[str, Table]]:
    assert options.whatif is not None
    result = replay(spark, flat, options.whatif)
    shown: dict[str, Table] = {}
    for name, frame, by_date in (("changes", result.changes, True), ("counts", result.counts, False)):
        total = report_writes.write(frame, layout.whatif(name), by_date=by_date)["rows"]
        written = spark.read.schema(frame.schema).parquet(layout.whatif(name))
        shown[f"whatif_{name}"] = collect.table(written.drop("date") if by_date else written, top, total=total)
    summary = {
        "authorizer": options.whatif.authorizer,
        "acls": len(options.whatif.acls),
        **result.stats,
        "outputs": {"changes": layout.whatif("changes"), "counts": layout.whatif("counts")},
    }
    result.release()
    return summary, shown


def _summary(
    options: JobOptions, layout: Layout, stats: IngestStats, window: Window, data: ReportData, counts: dict[str, Any], names: list[str]
) -> dict[str, Any]:
    def count(name: str) -> int:
        table = data.tables.get(name)
        return int(table.total or 0) if table is not None else 0

    ro = options.reports
    baseline_empty = counts.pop("baseline_empty")
    return {
        "generated_at": format_instant(int(datetime.now(UTC).timestamp() * 1_000_000)),
        "mode": stats.mode,
        "source": source_label(options),
        "time_range": {"first": format_instant(window.first_us), "last": format_instant(window.last_us)},
        **counts,
        "duplicates_dropped": stats.duplicates,
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
            "reports": {name: layout.report(name) for name in names},
            "summary": layout.summary,
            "html": layout.html if options.html else None,
        },
    }


def _store_parts(store: DataFrame, flat: DataFrame, window: Window, kept: daily_tables.Parts | None, quarantine: DataFrame) -> dict[str, DataFrame]:
    """The summary's counts over the store that no report gives: probes, the baseline's history, and in
    incremental mode (from the per-date parts it keeps) the quarantine (which grows across runs)."""
    if kept is not None:
        return {
            "probes": kept.probes(),
            "history": daily_tables.history(kept, store, window.baseline),
            "quarantined": quarantine.agg(F.count(F.lit(1)).alias("n")),
        }
    history = traffic(flat).filter(window.baseline.history(F.unix_micros("time")))
    return {
        "probes": probe_requests(flat).agg(F.count(F.lit(1)).alias("n")),
        "history": history.select("time").limit(1).agg(F.count(F.lit(1)).alias("n")),
    }


def chain_fields_of_run(spark: SparkSession, options: JobOptions, layout: Layout, stats: IngestStats) -> DataFrame:
    """The narrow table the hash chains' check reads: the chain fields of a batch run's staged parse (its columns of
    ``_work/staged``, spark_audit/staged_parse.py), those an incremental run over files kept for every file it
    ingested, or for an incremental run over a topic those of its text, written here. The check's counts and its
    findings each read the table again (spark_audit/chain_integrity.py): reading the text itself again for each part
    was most of a large run's report time."""
    if stats.mode == "batch":
        return staged_parse.chain_fields(staged_parse.read(spark, layout.work(staged_parse.STAGED)))
    if options.kafka is None:
        return tables.read_table(spark, CHAIN_FIELDS, layout.table(CHAIN))
    path = layout.work(CHAIN)
    chain_fields(raw_lines(spark, None, options.kafka)).write.mode("overwrite").parquet(path)
    return spark.read.schema(CHAIN_FIELDS).parquet(path)


def _write_text(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def report(spark: SparkSession, options: JobOptions, layout: Layout, stats: IngestStats) -> dict[str, Any]:
    """Every report over the whole store, written as Parquet, summary.json and report.html."""
    ro = options.reports
    store = read_store(spark, layout.records)
    state = table_state.load(layout.table_state)
    incremental = stats.mode == "incremental"
    parts = daily_tables.follow(spark, store, layout, state) if incremental else None
    window, store_count = Window.of(spark, store, stats, ro, parts)
    sources = Sources.write(spark, store, layout, window.baseline, state, parts)
    flat = sources.flat
    # kept per date by the last run where it was incremental with these options (the timeline's bucket is one)
    kept = state.daily and state.report_options == tables.date_partitioned_options(ro)
    kept_counts = report_writes.counts(spark, sources.requests, sources.alarms, layout, sources.rewritten, ro, incremental=incremental, kept=kept)
    frames = _frames(spark, sources, ro, window, layout, kept_counts)
    reports = _reports(frames)
    outcomes_before = window.outcomes_before(ro)
    rewrites = {name: sources.rewritten for name in report_writes.DATE_LOCAL}
    rewrites[report_writes.INTENTS] = report_writes.intents_dates(sources.rewritten, state.outcomes_before_us, outcomes_before)
    written: dict[str, dict[str, int]] = {}
    for name, frame in reports.items():
        # sources.rewritten is None where the request table was written whole (every batch run)
        if name == burst_rewrite.BURSTS and sources.rewritten is not None and report_writes.keeps_dates(spark, name, layout, ro, state):
            # its rows counted in the gathering query, as a date-local report's
            burst_rewrite.rewrite(spark, sources.alarms, layout, sources.rewritten, ro, span=(window.first_us, window.last_us))
            continue
        observed = (
            report_writes.write_date_local(spark, name, frame, layout, rewrites[name], ro, state, incremental=incremental)
            if name in rewrites
            else report_writes.write(
                frame, layout.report(name), by_date=name in BY_DATE, summed=report_writes.SUMMED.get(name), one_file_per_date=incremental
            )
        )
        if observed is not None:
            written[name] = observed
    totals = {name: observed["rows"] for name, observed in written.items()}
    # a report rewritten for some dates only: its rows counted in the gathering query (who-did-what's by its page part)
    partly = {name: layout.report(name) for name in reports if name not in written and name != "who_did_what"}
    table_state.save(
        layout.table_state,
        TableState(built=True, report_options=tables.date_partitioned_options(ro), daily=incremental, outcomes_before_us=outcomes_before),
    )
    whatif_summary: dict[str, Any] | None = None
    whatif_tables: dict[str, Table] = {}
    acls = None
    with spark_jobs.as_configured(spark):
        if options.whatif is not None:
            whatif_summary, whatif_tables = _whatif(spark, flat, options, layout, ro.top)
        if options.acls is not None:
            acls = acl_hygiene.run(spark, flat, options.acls, layout, window.last_us, ro.top)
    # the page's rows, the summary's counts and the chains' findings: one Spark query (a rerun over files checks its
    # new lines' chains and joins them to what the last run kept: spark_audit/chain_state.py)
    chains = chain_state.Check.of(spark, layout.table(CHAIN), layout.table(chain_state.STATE_FILE)) if incremental and options.kafka is None else None
    fields = chains.fields(spark) if chains is not None else chain_fields_of_run(spark, options, layout, stats)
    frames = _as_written(spark, frames, layout)
    page = page_parts.parts(frames, ro.top)
    # an incremental run's newest denials and changes looked for on the newest dates first (their partitions alone
    # are read), where its history is longer: on every date again only where those held too few
    # (page_parts.newest_found). A batch run reads every date anyway, and that second query would be a job more.
    since = page_parts.newest_since(window.first_us, window.last_us) if incremental else None
    on_every_date = {name: page[name] for name in page_parts.NEWEST}
    if since is not None:
        newer = F.col("date") >= F.lit(since)
        page.update(page_parts.newest(frames.denial_details.filter(newer), frames.change_details.filter(newer), ro.top))
    wanted = {
        **page,
        **_store_parts(store, flat, window, parts, frames.quarantine),
        **chain_parts(fields),
        **{_rows_part(name): _read_report(spark, reports[name], path).agg(F.count(F.lit(1))) for name, path in partly.items()},
    }
    found = gather(wanted)
    if chains is not None:
        found.update(chains.finish(spark, found))
    if since is not None:
        found.update(gather({name: on_every_date[name] for name in page_parts.newest_found(found, ro.top)}))
    totals.update({name: int(found[_rows_part(name)][0][0]) for name in partly})
    quarantined = stats.malformed if stats.mode == "batch" else int(found["quarantined"][0][0])
    totals["quarantine"] = quarantined
    data = page_parts.finish(page, found, totals, ro.top, _seconds_label(ro.bucket_seconds))
    data = replace(data, tables={**data.tables, **whatif_tables})
    ((_, request_resources, _),) = found["who_total"]
    counts: dict[str, Any] = {
        "records": store_count,
        "malformed": quarantined,
        "requests": written["requests"]["count"],
        # who_did_what's rows: a request counts once per resource it names (a CreateTopics of two topics twice)
        "request_resources": int(request_resources or 0),
        "baseline_empty": int(found["history"][0][0]) == 0,
    }
    summary = _summary(options, layout, stats, window, data, counts, list(reports))
    summary["authentication_failures"] = page_parts.authentication_failures(found)
    # left out of every report above: the summary says how many there were
    summary["probes"] = int(found["probes"][0][0])
    summary["integrity"] = conclude(found, load_public_keys(options.chain_public_keys))
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
    with spark_jobs.counted(session) as jobs:
        stats = ingest(session, chosen, layout)
        summary = report(session, chosen, layout, stats)
    # scratch as large as the store (a batch run's chain check read it): the store and the chain table hold it now
    staged_parse.remove(session, layout.work(staged_parse.STAGED))
    jobs.add_groups(session, stats.job_groups)
    summary["spark_jobs"] = jobs.count
    _write_text(layout.summary, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if chosen.print_report:
        print(f"Spark jobs: {jobs.count}")
    return summary
