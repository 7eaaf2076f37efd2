"""Every report and every summary.json count of the job, against an independent computation (tests/spark_audit/oracle.py).

The input is bench/audit's realistic generator with its edge cases turned up (outcomes without
intents, intents without outcomes, duplicates within and across files, malformed and blank lines,
the proxy's identity forwarding for everyone, brute-force bursts of failed logins), plus a file of
hand-written lines the generator does not make.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DateType, TimestampType

from spark_audit import daily_tables, table_state
from spark_audit.identity_reports import Baseline, identities
from spark_audit.ingest import read_store
from spark_audit.layout import REPORT_NAMES, Layout
from spark_audit.options import JobOptions, format_instant, parse_instant
from spark_audit.pipeline import ingest, run
from spark_audit.view import flatten, probe_requests, traffic
from tests.spark_audit.harness import bench_generator, edge_case_traffic
from tests.spark_audit.oracle import Input, Oracle
from tests.spark_audit.records import connection, request, write_jsonl

pytestmark = pytest.mark.spark


MIDNIGHT_EVE, MIDNIGHT_MORNING = "audit-998-20261121T230000Z-hand.jsonl", "audit-998-20261122T000000Z-hand.jsonl"


def _hand_written(directory: Path) -> None:
    """Lines the generator does not write: wrong types, a bad time, a line of spaces, an SSL mapping refusal."""
    auth_failure = connection(
        9001, "2026-11-22T23:59:00.000Z", "refused", client="198.51.100.9", listener="MTLS", mechanism="SSL", reason="ssl-principal-mapping"
    )
    wrong_type = request(9002, "2026-11-22T12:00:00.000Z", "typed", "outcome", status="SUCCESS")
    wrong_type["data"]["apiKey"] = "nineteen"
    bad_time = request(9003, "2026-11-22T12:00:00.000Z", "timed", "outcome", status="SUCCESS")
    bad_time["time"] = "yesterday"
    no_stage = request(9004, "2026-11-22T12:00:00.000Z", "staged", "outcome", status="SUCCESS")
    del no_stage["data"]["stage"]
    # an ACL change the controller refused for the whole cluster, with no intent
    acl = request(
        9005,
        "2026-11-22T22:00:00.000Z",
        "acl",
        "outcome",
        principal="User:newcomer",
        method="kafka.CreateAcls",
        api_key=30,
        subject="cluster:kafka-cluster",
        resources=[{"type": "CLUSTER", "name": "kafka-cluster", "patternType": "LITERAL", "operation": "ALTER"}],
        status="FAILURE",
        errors=[{"resource": "kafka-cluster", "errorCode": 31, "errorName": "CLUSTER_AUTHORIZATION_FAILED", "message": "m"}],
        client="198.51.100.7",
    )
    # failed logins 6 s apart, then one exactly a window (60 s) later: still the same episode
    logins = [
        connection(9100 + i, f"2026-11-22T20:00:{i * 6:02d}.000Z", "authentication-failed", principal="User:admin", client="198.51.100.50")
        for i in range(10)
    ]
    logins.append(connection(9110, "2026-11-22T20:01:54.000Z", "authentication-failed", principal="User:root", client="198.51.100.50"))
    write_jsonl(directory / "audit-999-hand.jsonl", [auth_failure, wrong_type, "   ", bad_time, no_stage, acl, acl, *logins])
    # requests at midnight: an intent whose outcome is written the next day, and one with two intents and no outcome
    write_jsonl(
        directory / MIDNIGHT_EVE,
        [
            request(9201, "2026-11-21T23:59:59.900Z", "midnight", "intent"),
            request(9202, "2026-11-21T23:59:30.000Z", "twice", "intent"),
            request(9203, "2026-11-21T23:59:31.000Z", "twice", "intent"),
        ],
    )
    write_jsonl(directory / MIDNIGHT_MORNING, [request(9204, "2026-11-22T00:00:00.100Z", "midnight", "outcome", status="SUCCESS")])


@pytest.fixture(scope="module")
def job(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Oracle, dict[str, Any]]:
    generate = bench_generator()
    directory = tmp_path_factory.mktemp("differential")
    source, out = directory / "audit", directory / "out"
    traffic = edge_case_traffic(days=2, nodes=2, principals=40, topics=60, addresses=50)
    counts = generate.write(source, 4000, seed=11, traffic=traffic)
    assert counts.malformed and counts.blank and counts.duplicates and counts.extra["lost_intents"] and counts.extra["lost_outcomes"]
    _hand_written(source)
    summary = run(None, str(out), spark=spark, options=JobOptions(input=str(source), html=False, print_report=False))
    return out, Oracle(Input.read(source)), summary


def _plain(frame: DataFrame) -> DataFrame:
    """Timestamps as microseconds and dates as ISO strings, so collected rows hold no local times."""
    columns = []
    for f in frame.schema.fields:
        if isinstance(f.dataType, TimestampType):
            columns.append(F.unix_micros(F.col(f.name)).alias(f.name))
        elif isinstance(f.dataType, DateType):
            columns.append(F.col(f.name).cast("string").alias(f.name))
        else:
            columns.append(F.col(f.name))
    return frame.select(*columns)


def _rows(spark: SparkSession, out: Path, name: str, columns: list[str]) -> list[tuple[Any, ...]]:
    frame = _plain(spark.read.parquet(str(out / "reports" / name)))
    arrays = {f.name for f in frame.schema.fields if isinstance(f.dataType, ArrayType)}
    return [tuple(tuple(row[c]) if c in arrays else row[c] for c in columns) for row in frame.select(*columns).collect()]


def test_requests(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    got = _rows(spark, out, "requests", ["principal", "method", "status", "count"])
    assert Counter({row[:3]: row[3] for row in got}) == oracle.requests_report()
    assert len(got) == len(oracle.requests_report())
    assert {status for _, _, status, _ in got} >= {"SUCCESS", "FAILURE", "ERROR", "REFUSED", "NO_OUTCOME"}


def test_who_did_what(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    columns = ["bucket", "date", "principal", "method", "resource", "operation", "requests", "denied"]
    got = Counter(_rows(spark, out, "who_did_what", columns))
    assert got == oracle.who_did_what()
    assert any(row[-1] for row in got)


def test_denials_and_their_ranking(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    columns = ["time", "principal", "clientAddress", "method", "subject", "errorCode", "errorName", "status"]
    denials = Counter(_rows(spark, out, "denials", columns))
    assert denials == oracle.denials()
    assert {row[6] for row in denials} >= {"SASL_AUTHENTICATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"}
    ranking = _rows(spark, out, "denial_ranking", ["dimension", "key", "denials", "first", "last", "rank"])
    assert len(ranking) == len(set(ranking))
    assert set(ranking) == oracle.denial_ranking()


def test_bursts(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    got = _rows(spark, out, "bursts", ["clientAddress", "kind", "start", "end", "date", "events", "peak", "principals"])
    assert len(got) == len(set(got))
    assert set(got) == oracle.bursts()
    assert any(kind == "authentication-failure" for _, kind, *_ in got)
    assert [row[5:] for row in got if row[0] == "198.51.100.50"] == [(11, 10, ("User:admin", "User:root"))]


def test_sensitive_changes(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    columns = [
        "time",
        "date",
        "category",
        "method",
        "principal",
        "clientAddress",
        "listener",
        "forwardingPrincipal",
        "resources",
        "status",
        "errorCode",
        "denied",
        "requestId",
    ]
    got = Counter(_rows(spark, out, "sensitive_changes", columns))
    assert got == oracle.sensitive_changes()
    assert {row[2] for row in got} == {"acl", "config", "scram-credentials", "quota"}


def test_identities(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    impersonation = _rows(
        spark, out, "impersonation", ["forwardingPrincipal", "principal", "listeners", "requests", "denied", "first", "last"]
    )
    assert len(impersonation) == len(set(impersonation)) and set(impersonation) == oracle.impersonation()
    unusual = _rows(spark, out, "unusual_listeners", ["principal", "listener", "first", "last", "events", "baselineListeners"])
    assert len(unusual) == len(set(unusual)) and set(unusual) == oracle.unusual_listeners()
    first_seen = _rows(spark, out, "first_seen_pairs", ["principal", "clientAddress", "first", "last", "events", "listeners", "date"])
    assert len(first_seen) == len(set(first_seen)) and set(first_seen) == oracle.first_seen_pairs()
    assert unusual and first_seen


def test_intents_without_outcome(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    columns = ["requestId", "time", "date", "principal", "clientAddress", "listener", "method", "subject", "resources"]
    got = _rows(spark, out, "intents_without_outcome", columns)
    assert got and len(got) == len(set(got))
    assert set(got) == oracle.intents_without_outcome()


def test_latency(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    columns = ["method", "requests", "totalP50", "totalP90", "totalP99", "totalMax", "upstreamP50", "upstreamP90", "upstreamP99"]
    got = {row[0]: row[1:] for row in _rows(spark, out, "latency", columns)}
    assert got == oracle.latency()


def test_summary_counts(job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, summary = job
    written = json.loads((out / "summary.json").read_text())
    assert written == summary
    expected = oracle.summary_counts()
    assert {key: summary[key] for key in expected} == expected
    assert expected["duplicates_dropped"] and expected["malformed"] and expected["bursts"] and not expected["baseline"]["empty"]


def test_quarantine_keeps_each_bad_line_and_where_it_came_from(spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]]) -> None:
    out, oracle, _ = job
    got = Counter((Path(row["origin"]).name, row["value"]) for row in spark.read.json(str(out / "quarantine")).collect())
    assert got == Counter(oracle.input.quarantine)


def _report(spark: SparkSession, out: Path, name: str) -> list[str]:
    """Every row of a report, in a fixed order."""
    frame = _plain(spark.read.parquet(str(out / "reports" / name)))
    return sorted(repr(tuple(tuple(v) if isinstance(v, list) else v for v in row)) for row in frame.collect())


def test_incremental_runs_report_what_the_full_run_reports(
    spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]], tmp_path: Path
) -> None:
    """The same input in two incremental runs: the first day, then the next day's files. The second run's
    ingest ends as a run that dies before its reports would; the run after it finds nothing new and still
    brings the kept tables and who-did-what up to date. Every report then holds what the full run over all
    the input holds, row for row, including the request whose intent (the first day, rewritten only as the
    day next to the new one) and outcome (the second day) straddle midnight."""
    out, _, summary = job
    source = out.parent / "audit"
    audit, incremental = tmp_path / "audit", tmp_path / "out"
    audit.mkdir()
    files = sorted(source.glob("*.jsonl"))
    first_day = [path for path in files if "-20261121T" in path.name]
    assert source / MIDNIGHT_EVE in first_day and source / MIDNIGHT_MORNING not in first_day
    for path in first_day:
        shutil.copy(path, audit / path.name)
    options = JobOptions(input=str(audit), incremental=True, html=False, print_report=False)
    layout = Layout(str(incremental))

    first = run(None, str(incremental), spark=spark, options=options)

    assert first["intents_without_outcome"] >= 2  # the intent before midnight waits for its outcome
    for path in files:
        if not (audit / path.name).exists():
            shutil.copy(path, audit / path.name)
    stats = ingest(spark, options, layout)
    assert stats.stored > 0
    assert table_state.load(layout.table_state).pending == {date(2026, 11, 22)}

    resumed = run(None, str(incremental), spark=spark, options=options)

    assert resumed["run"]["batches"] == 0
    assert table_state.load(layout.table_state).pending == frozenset()
    for name in REPORT_NAMES:
        assert _report(spark, incremental, name) == _report(spark, out, name), name
    counted = [
        *("records", "malformed", "requests", "denials", "authentication_failures", "sensitive_changes", "bursts"),
        *("first_seen_pairs", "unusual_listeners", "impersonation_pairs", "intents_without_outcome"),
        *("probes", "time_range", "baseline"),
        # merged from the alarm counts the incremental runs keep per date (so is authentication_failures, from the timeline)
        "denials_by",
        # who-did-what's rows summed, as the page reads them back from the report the runs kept partly
        "request_resources",
    ]
    assert {key: resumed[key] for key in counted} == {key: summary[key] for key in counted}
    # the chains' check over the chain fields the incremental runs kept, as over every file's text
    assert resumed["integrity"] == summary["integrity"]


def _one(frame: DataFrame) -> int:
    row = frame.first()
    assert row is not None
    return int(row[0])


def _sorted(frame: DataFrame) -> list[str]:
    return sorted(repr(tuple(row)) for row in _plain(frame).collect())


def test_the_per_date_parts_merge_to_what_a_scan_of_the_store_gives(
    spark: SparkSession, job: tuple[Path, Oracle, dict[str, Any]], tmp_path: Path
) -> None:
    """The parts an incremental run keeps per date (spark_audit/daily_tables.py), merged, against the same figures
    computed over the whole store, for baselines whose bounds fall at midnight (every date wholly on one side) and
    inside dates (those dates from the store), and after two dates' parts were recomputed."""
    out, _, summary = job
    store = read_store(spark, str(out / "records"))
    flat = flatten(store)
    layout = Layout(str(tmp_path))
    parts = daily_tables.follow(spark, store, layout, table_state.TableState())
    first_us, last_us, records = parts.span()
    assert (format_instant(first_us), format_instant(last_us), records) == (summary["time_range"]["first"], summary["time_range"]["last"], summary["records"])
    assert _one(parts.probes()) == probe_requests(flat).count() == summary["probes"]
    day = 86_400_000_000
    midnight = parse_instant("2026-11-22T00:00:00.000Z")
    baselines = [Baseline(None, midnight), Baseline(midnight - day, midnight + day), Baseline(midnight - 6 * 3600_000_000, midnight + 7 * 3600_000_000)]
    for _ in range(2):
        for baseline in baselines:
            assert _sorted(daily_tables.identities(parts, store, baseline)) == _sorted(identities(flat, baseline)), baseline
            scanned = traffic(flat).filter(baseline.history(F.unix_micros("time"))).limit(1).count()
            assert _one(daily_tables.history(parts, store, baseline)) == scanned, baseline
        # the parts of both dates recomputed, as after new records of them: nothing changes
        state = table_state.TableState(built=True, pending=frozenset({date(2026, 11, 21), date(2026, 11, 22)}), daily=True)
        parts = daily_tables.follow(spark, store, layout, state)
    assert _one(parts.probes()) == probe_requests(flat).count()
