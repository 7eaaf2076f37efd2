"""The HTML page and its charts, without Spark."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from spark_audit import svg
from spark_audit.html_report import render
from spark_audit.options import format_instant, parse_duration, parse_instant
from spark_audit.report_data import ReportData, Table

SUMMARY = {
    "records": 12,
    "requests": 5,
    "denials": 2,
    "malformed": 1,
    "source": "files:/var/log/envelope-proxy",
    "time_range": {"first": "2026-11-21T10:00:00.000Z", "last": "2026-11-21T11:00:00.000Z"},
    "baseline": {"start": None, "end": "2026-11-20T11:00:00.000Z", "empty": True},
    "whatif": {"authorizer": "StandardAuthorizer", "acls": 2, "decisions": 4, "changed": 1},
}


def data(**overrides: object) -> ReportData:
    values: dict[str, object] = {
        "summary": SUMMARY,
        "activity": [("2026-11-21T10:00:00.000Z", "User:alice", 3), ("2026-11-21T11:00:00.000Z", "User:<b>", 2)],
        "heat": [("User:alice", "kafka.CreateTopics", 3), ("User:<b>", "kafka.DeleteAcls", 2)],
        "denial_timeline": [("2026-11-21T10:00:00.000Z", "denial", 2)],
        "ranking": {"principal": [("User:<b>", 2)], "address": [("10.0.0.9", 2)], "resource": [("topic:a&b", 1)]},
        "latency": [("kafka.CreateTopics", 1.0, 2.0, 3.5, 9.0)],
        "tables": {"denials": Table(["principal", "status"], [("User:<b>", "REFUSED")], total=3)},
    }
    values.update(overrides)
    return ReportData(**values)  # type: ignore[arg-type]


def test_page_escapes_names_and_has_a_chart_per_view() -> None:
    page = render(data())
    assert "User:<b>" not in page and "User:&lt;b&gt;" in page
    assert "topic:a&amp;b" in page
    # activity, heat map, three denial rankings, denials over time, latency
    assert page.count("<svg") == 7
    assert "1 of 3 rows shown" in page
    assert "every pair counts as new" in page
    # each chart is well-formed XML
    for chart in re.findall(r"<svg.*?</svg>", page, flags=re.S):
        ET.fromstring(chart)


def test_empty_input_says_so_instead_of_drawing() -> None:
    page = render(ReportData(summary={"records": 0}))
    assert "No requests in the input." in page
    assert "No denials or authentication failures." in page
    assert "<svg" not in page
    assert "Not run: pass --whatif-acls" in page


def test_many_principals_are_folded_into_other() -> None:
    points = [("2026-11-21T10:00:00.000Z", f"User:u{i}", 10 - i) for i in range(10)]
    page = render(data(activity=points))
    legend = re.search(r'<div class="legend">(.*?)</div>', page)
    assert legend is not None
    names = re.findall(r"</span>([^<]+)</span>", legend.group(1))
    assert names == [f"User:u{i}" for i in range(7)] + ["other"]


def test_chart_helpers_produce_valid_svg() -> None:
    for chart in (
        svg.stacked_columns(["a", "b"], [("x", [1.0, 0.0]), ("y", [2.0, 3.0])], label="t"),
        svg.horizontal_bars([("a" * 40, 3.0), ("b", 1.0)], label="t"),
        svg.heatmap(["r"], ["kafka.CreateTopics"], {("r", "kafka.CreateTopics"): 4.0}, label="t"),
        svg.latency_ranges([("kafka.X", 1.0, 2.0, 3.0, 10.0)], label="t"),
    ):
        ET.fromstring(chart)


def test_durations_and_instants() -> None:
    assert [parse_duration(t) for t in ("30s", "15 minutes", "1 hour", "7d", "2 weeks")] == [30, 900, 3600, 604800, 1209600]
    assert parse_instant("2026-11-21T10:00:00Z") == parse_instant("2026-11-21T11:00:00+01:00") == parse_instant("2026-11-21T10:00:00")
    assert format_instant(parse_instant("2026-11-21T10:00:00.123Z")) == "2026-11-21T10:00:00.123Z"
