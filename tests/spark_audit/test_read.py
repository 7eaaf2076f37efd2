"""Reading audit lines: the explicit schema, the quarantine, de-duplication."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_audit.ingest import read_store
from spark_audit.layout import Layout
from spark_audit.options import JobOptions
from spark_audit.pipeline import ingest
from spark_audit.read import (
    MALFORMED,
    NO_ID,
    NO_STAGE,
    NO_TIME,
    NO_VERSION,
    UNSUPPORTED_VERSION,
    deduplicate,
    parse,
    quarantine_of,
    read_audit,
    read_files,
    records_of,
)
from spark_audit.schema import AUDIT_SCHEMA, CORRUPT_RECORD_COLUMN, DATA, SUPPORTED_SCHEMA_VERSIONS
from tests.spark_audit.records import connection, record_id, request, write_jsonl

pytestmark = pytest.mark.spark

QUARANTINE_SCHEMA = "origin string, problem string, value string"
#: A version no reader of the job knows yet: the next after the newest it reads.
FUTURE_VERSION = max(SUPPORTED_SCHEMA_VERSIONS) + 1


def test_schema_has_every_documented_field() -> None:
    assert AUDIT_SCHEMA.fieldNames() == [
        "specversion",
        "id",
        "type",
        "source",
        "time",
        "subject",
        "datacontenttype",
        "schemaversion",
        "data",
        CORRUPT_RECORD_COLUMN,
    ]
    assert DATA.fieldNames() == [
        "requestId",
        "stage",
        "methodName",
        "apiKey",
        "apiVersion",
        "authenticationInfo",
        "forwardingPrincipal",
        "requestMetadata",
        "resources",
        "authorizationInfo",
        "result",
        "timings",
        "upstream",
        "connection",
        "request",
        "probe",
    ]
    assert DATA["probe"].dataType.fieldNames() == ["command", "case"]  # type: ignore[attr-defined]
    assert DATA["connection"].dataType.fieldNames() == ["cause", "durationMs", "requests"]  # type: ignore[attr-defined]
    assert DATA["authorizationInfo"].dataType.fieldNames() == ["decision", "reason", "detail", "denied"]  # type: ignore[attr-defined]


def test_parse_quarantines_each_kind_of_bad_line_and_keeps_both_versions(spark: SparkSession) -> None:
    wrong_type = request(3, "2026-11-21T10:00:00.000Z", "r3", "intent")
    wrong_type["data"]["apiKey"] = "nineteen"
    future = request(4, "2026-11-21T10:00:00.000Z", "r4", "intent", version=FUTURE_VERSION)
    unversioned = request(5, "2026-11-21T10:00:00.000Z", "r5", "intent")
    del unversioned["schemaversion"]
    lines = [
        json.dumps(request(1, "2026-11-21T10:00:00.000Z", "r1", "intent", version=1)),
        json.dumps(connection(2, "2026-11-21T10:00:00.000Z", "authentication-failed", principal="User:eve")),
        json.dumps(wrong_type),
        json.dumps(future),
        "this is not json {{{",
        "{}",
        '{"id": "x", "schemaversion": 2}',
        '{"id": "y", "time": "2026-11-21T10:00:00Z", "schemaversion": 2, "data": {}}',
        "   ",
        "[1, 2]",
        json.dumps(unversioned),
        " \t \r",
    ]
    raw = spark.createDataFrame([(line, f"f:{i}") for i, line in enumerate(lines)], "value string, origin string")

    parsed = parse(raw)

    expected = spark.createDataFrame(
        [
            ("f:2", MALFORMED, json.dumps(wrong_type)),
            ("f:3", f"{UNSUPPORTED_VERSION} {FUTURE_VERSION}", json.dumps(future)),
            ("f:4", MALFORMED, "this is not json {{{"),
            ("f:5", NO_ID, "{}"),
            ("f:6", NO_TIME, '{"id": "x", "schemaversion": 2}'),
            ("f:7", NO_STAGE, '{"id": "y", "time": "2026-11-21T10:00:00Z", "schemaversion": 2, "data": {}}'),
            ("f:9", MALFORMED, "[1, 2]"),
            ("f:10", NO_VERSION, json.dumps(unversioned)),
        ],
        QUARANTINE_SCHEMA,
    )
    assertDataFrameEqual(quarantine_of(parsed), expected)
    good = records_of(parsed)
    assert sorted(r["id"] for r in good.select("id").collect()) == [record_id(1), record_id(2)]
    row = (
        good.filter(f"id = '{record_id(2)}'")
        .select("schemaversion", "data.stage", "data.result.errorCode", "data.connection.cause")
        .first()
    )
    assert row is not None and tuple(row) == (2, "authentication-failed", 58, None)


def test_files_dedupe_by_id_and_skip_staging_and_other_files(spark: SparkSession, tmp_path: Path) -> None:
    first = request(1, "2026-11-21T10:00:00.000Z", "r1", "intent")
    write_jsonl(tmp_path / "in" / "a.jsonl", [first, request(2, "2026-11-21T10:00:00.010Z", "r1", "outcome", status="SUCCESS"), "oops"])
    # the same record again in another file (a proxy that re-published after a crash)
    write_jsonl(tmp_path / "in" / "b.jsonl", [first])
    write_jsonl(tmp_path / "in" / ".staging" / "c.jsonl", [request(3, "2026-11-21T10:00:00.000Z", "r3", "intent"), "bad"])
    write_jsonl(tmp_path / "in" / "notes.txt", ["not json either"])

    records, malformed = read_audit(spark, str(tmp_path / "in"))

    assert sorted(r["id"] for r in records.select("id").collect()) == [record_id(1), record_id(2)]
    assert malformed == 1
    quarantined = quarantine_of(parse(read_files(spark, str(tmp_path / "in")))).collect()
    assert [(Path(r["origin"].removeprefix("file:")).name, r["value"]) for r in quarantined] == [("a.jsonl", "oops")]


def test_deduplicate_keeps_one_record_per_id(spark: SparkSession) -> None:
    lines = [json.dumps(request(1, "2026-11-21T10:00:00.000Z", "r1", "intent"))] * 3 + [
        json.dumps(request(2, "2026-11-21T10:00:01.000Z", "r1", "outcome", status="SUCCESS"))
    ]
    raw = spark.createDataFrame([(line, "x") for line in lines], "value string, origin string")
    assert deduplicate(records_of(parse(raw))).count() == 2


def test_version_1_sample_file(spark: SparkSession, tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "fixtures" / "audit-sample.jsonl"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "audit-1-20261121T100000Z-0.jsonl").write_bytes(sample.read_bytes())

    records, malformed = read_audit(spark, str(tmp_path / "in"))

    assert (records.count(), malformed) == (5, 1)
    assert {r["schemaversion"] for r in records.select("schemaversion").collect()} == {1}


def test_empty_directory(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    records, malformed = read_audit(spark, str(tmp_path / "in"))
    assert (records.count(), malformed) == (0, 0)


def test_hand_made_records_match_the_proxys_schema() -> None:
    """The fixtures are shaped like what the proxy writes (proxy/audit/record.schema.json), not only like what the job reads."""
    from proxy.audit.cloudevents import SCHEMA_VERSION
    from tests.audit_records import schema_errors
    from tests.spark_audit.scenario import RECORDS
    from tests.spark_audit.test_probes import probe_records
    from tests.spark_audit.test_whatif import HISTORY

    # the proxy's schema names only the versions it writes now; the fixtures keep older versions (the job reads
    # them all), so their shape is checked under the version the proxy writes
    problems = {r["id"]: schema_errors({**r, "schemaversion": SCHEMA_VERSION}) for r in [*RECORDS, *HISTORY, *probe_records()]}
    assert {k: v for k, v in problems.items() if v} == {}


def test_a_repeated_record_is_stored_once_even_where_its_line_holds_a_nan(spark: SparkSession, tmp_path: Path) -> None:
    """A NaN, which json_tuple (the chain fields' reader) refuses and Spark's JSON reader takes, does not hide a
    repeated record: the batch ingest finds repeated ids among the parsed records, and stores the record once."""
    outcome = request(1, "2026-11-21T10:00:00.010Z", "r1", "outcome", status="SUCCESS", upstream_ms=float("nan"))
    write_jsonl(tmp_path / "in" / "a.jsonl", [outcome, request(2, "2026-11-21T10:00:00.000Z", "r1", "intent")])
    write_jsonl(tmp_path / "in" / "b.jsonl", [outcome])
    assert "NaN" in (tmp_path / "in" / "b.jsonl").read_text()
    layout = Layout(str(tmp_path / "out"))

    stats = ingest(spark, JobOptions(input=str(tmp_path / "in"), print_report=False), layout)

    assert (stats.records, stats.duplicates, stats.malformed) == (3, 1, 0)
    assert sorted(r["id"] for r in read_store(spark, layout.records).select("id").collect()) == [record_id(1), record_id(2)]
