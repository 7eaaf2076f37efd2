"""The whole job: outputs on disk, the summary, the command line and its entry points."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_audit import denial_reports, identity_reports, job, request_reports
from spark_audit.cli import main
from spark_audit.options import parse_instant
from tests.spark_audit.records import write_jsonl
from tests.spark_audit.scenario import RECORDS, flat_of

REPO_ROOT = Path(__file__).resolve().parents[2]
REPORTS = (
    "bursts",
    "denial_ranking",
    "denials",
    "first_seen_pairs",
    "impersonation",
    "intents_without_outcome",
    "latency",
    "requests",
    "sensitive_changes",
    "unusual_listeners",
    "who_did_what",
)


def audit_dir(tmp_path: Path) -> Path:
    source = tmp_path / "audit"
    write_jsonl(source / "audit-1-20261119T090000Z-000001.jsonl", RECORDS[:3])
    # one malformed line, and one record published twice
    write_jsonl(source / "audit-1-20261121T100000Z-000002.jsonl", [*RECORDS[3:], "this is not json {{{", RECORDS[5]])
    write_jsonl(source / ".staging" / "audit-1-20261121T110000Z-000003.jsonl", ["{still being written"])
    return source


@pytest.mark.spark
def test_cli_run_writes_every_output(spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, out = audit_dir(tmp_path), tmp_path / "out"
    acls = write_jsonl(
        tmp_path / "acls.jsonl",
        [{"principal": "User:alice", "operation": "CREATE", "resourceType": "CLUSTER", "resourceName": "kafka-cluster"}],
    )

    status = main(
        [
            "--input",
            str(source),
            "--output",
            str(out),
            "--master",
            "local[2]",
            "--baseline-end",
            "2026-11-20T00:00:00Z",
            "--burst-threshold",
            "3",
            "--bucket",
            "15 minutes",
            # the documented plug-in example, shipped to the executors
            "--py-file",
            str(REPO_ROOT / "docs" / "examples" / "forwarding_guard.py"),
            "--whatif-authorizer",
            "forwarding_guard:ForwardingGuard",
            "--whatif-property",
            "forwarding.guard.allowed.forwarders=User:someone-else",
            "--whatif-acls",
            str(acls),
        ]
    )

    assert status == 0
    summary = json.loads((out / "summary.json").read_text())
    assert {
        key: summary[key] for key in ("records", "malformed", "duplicates_dropped", "requests", "denials", "authentication_failures")
    } == {
        "records": len(RECORDS),
        "malformed": 1,
        "duplicates_dropped": 1,
        "requests": 11,
        "denials": 7,
        "authentication_failures": 3,
    }
    assert {
        key: summary[key] for key in ("sensitive_changes", "bursts", "first_seen_pairs", "unusual_listeners", "intents_without_outcome")
    } == {
        "sensitive_changes": 2,
        "bursts": 1,
        "first_seen_pairs": 3,
        "unusual_listeners": 1,
        "intents_without_outcome": 1,
    }
    assert summary["time_range"] == {"first": "2026-11-19T09:00:00.000Z", "last": "2026-11-21T10:02:00.000Z"}
    # Each report on disk is its function's result over the flat view of every record (test_reports.py checks
    # the functions against hand-made expectations): the small tables the job reports from change nothing.
    flat = flat_of(spark, [*RECORDS, "this is not json {{{", RECORDS[5]])
    baseline = identity_reports.Baseline(None, parse_instant("2026-11-20T00:00:00Z"))
    expected = {
        "requests": request_reports.requests_by_principal_method_outcome(flat),
        "who_did_what": request_reports.who_did_what(flat, bucket="15 minutes"),
        "denials": denial_reports.denials(flat),
        "denial_ranking": denial_reports.denial_ranking(flat),
        "bursts": denial_reports.bursts(flat, threshold=3),
        "sensitive_changes": request_reports.sensitive_changes(flat),
        "impersonation": identity_reports.impersonation(flat),
        "unusual_listeners": identity_reports.unusual_listeners(flat, baseline),
        "first_seen_pairs": identity_reports.first_seen_pairs(flat, baseline),
        # the newest record minus the default 60 s of grace
        "intents_without_outcome": request_reports.intents_without_outcome(flat, before_us=parse_instant("2026-11-21T10:01:00Z")),
        "latency": request_reports.latency(flat),
    }
    for name, frame in expected.items():
        assert frame.count() > 0, name
        assertDataFrameEqual(spark.read.parquet(str(out / "reports" / name)).select(*frame.columns), frame)
    assert summary["baseline"] == {"start": None, "end": "2026-11-20T00:00:00.000Z", "empty": False}
    # alice's CreateAcls came through User:proxy, which the guard does not accept as a forwarder
    assert (summary["whatif"]["authorizer"], summary["whatif"]["acls"]) == ("forwarding_guard:ForwardingGuard", 1)
    changes = spark.read.parquet(str(out / "whatif" / "changes"))
    assert ("User:alice", "kafka.CreateAcls", "ALLOWED", "DENIED") in {(r.principal, r.method, r.old, r.new) for r in changes.collect()}

    assert sorted(p.name for p in (out / "records").glob("date=*")) == ["date=2026-11-19", "date=2026-11-21"]
    assert sorted(p.name for p in (out / "reports").iterdir()) == sorted(REPORTS)
    assert sorted(p.name for p in (out / "reports" / "who_did_what").glob("date=*")) == ["date=2026-11-19", "date=2026-11-21"]
    assert (out / "whatif" / "changes").is_dir() and (out / "whatif" / "counts").is_dir()
    quarantined = spark.read.json(str(out / "quarantine")).collect()
    assert [(Path(r["origin"]).name, r["problem"], r["value"]) for r in quarantined] == [
        ("audit-1-20261121T100000Z-000002.jsonl", "malformed JSON or a field of the wrong type", "this is not json {{{")
    ]

    page = (out / "report.html").read_text()
    assert page.count("<svg") >= 5
    assert "User:mallory" in page and "10.0.0.9" in page
    # self-contained: nothing to fetch, nothing to run
    assert not re.search(r"<script|<link|<img|@import|url\(|src=", page)
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}

    stdout = capsys.readouterr().out
    assert "malformed lines: 1" in stdout
    assert f"HTML report: {out / 'report.html'}" in stdout
    assert any(line.split() == ["User:carol", "kafka.CreateTopics", "NO_OUTCOME", "1"] for line in stdout.splitlines())
    # main() did not stop the session it did not create
    assert spark.range(3).count() == 3


@pytest.mark.spark
def test_run_keeps_the_callers_api(spark: SparkSession, tmp_path: Path) -> None:
    """envelope_proxy/demo.py calls run(input, output) and reads the summary it returns."""
    summary = job.run(str(audit_dir(tmp_path)), str(tmp_path / "out"), spark=spark)
    assert (summary["records"], summary["malformed"], summary["duplicates_dropped"]) == (len(RECORDS), 1, 1)
    assert summary["outputs"]["html"] == str(tmp_path / "out" / "report.html")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--input", "{missing}"], "--input: {missing} does not exist"),
        (["--input", "{file}"], "--input: {file} is not a directory"),
        (["--input", "{tmp}", "--output", "{file}"], "--output: {file} is not a directory"),
        (["--input", "{tmp}", "--output", "{file}/reports"], "--output: cannot create {file}/reports"),
        (["--input", "{tmp}", "--py-file", "{missing}"], "--py-file: {missing} is not a .py or .zip file"),
        (["--input", "{tmp}", "--whatif-authorizer", "no.such:Thing"], "--whatif-authorizer no.such:Thing: "),
        (["--kafka-bootstrap-servers", "h:1", "--kafka-topic", "t", "--kafka-jars", "{missing}"], "--kafka-jars: no jars in {missing}"),
        ([], "an input is needed"),
        (["--kafka-topic", "audit"], "--kafka-bootstrap-servers and --kafka-topic go together"),
        (["--input", "{tmp}", "--kafka-topic", "t", "--kafka-bootstrap-servers", "h:1"], "either --input or a Kafka topic"),
        (["--input", "{tmp}", "--bucket", "fortnight"], "--bucket: 'fortnight' is not a duration"),
        (["--input", "{tmp}", "--burst-window", "30ms"], "--burst-window: '30ms' is not a duration"),
        (["--input", "{tmp}", "--baseline-end", "yesterday"], "--baseline-end: 'yesterday' is not an ISO 8601 time"),
        (["--input", "{tmp}", "--burst-threshold", "0"], "--burst-threshold must be at least 1"),
        (["--input", "{tmp}", "--whatif-acls", "{missing}"], "cannot read"),
        (["--input", "{tmp}", "--whatif-property", "novalue"], "--whatif-property: expected key=value"),
    ],
)
def test_bad_arguments_exit_2_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    names = {"missing": tmp_path / "nope", "tmp": tmp_path, "file": tmp_path / "audit.jsonl"}
    names["file"].write_text("{}\n")
    argv = [a.format(**names) for a in extra]
    output = [] if "--output" in argv else ["--output", str(tmp_path / "out")]

    assert main([*argv, *output]) == 2

    assert message.format(**names) in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "command",
    [["-m", "spark_audit"], [str(REPO_ROOT / "spark_audit" / "job.py")]],
    ids=["python -m spark_audit", "script path (spark-submit style)"],
)
def test_command_line_entry_points(command: list[str], tmp_path: Path) -> None:
    # A missing input directory exits before Spark starts: this checks imports, parsing and the exit status only.
    missing = tmp_path / "nope"
    proc = subprocess.run(
        [sys.executable, *command, "--input", str(missing), "--output", str(tmp_path / "out")],
        cwd=REPO_ROOT if command[0] == "-m" else tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert str(missing) in proc.stderr
