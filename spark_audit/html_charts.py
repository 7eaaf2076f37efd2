"""The HTML report's charts: activity, denials over time, the heat map, the rankings and latency, as inline SVG."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from spark_audit import svg
from spark_audit.html_text import text
from spark_audit.report_data import ReportData

#: Series a chart stacks, the busiest first; the rest are added up as ``other``.
MAX_SERIES = 7
#: what the who-did-what views count: a request once per resource it names
PER_RESOURCE = "request \u00d7 resource"
#: The heat map's size, so that it stays readable: the busiest principals (rows) and methods (columns); the Parquet report has them all.
HEAT_ROWS = 12
HEAT_COLUMNS = 14


def _top_series(points: Sequence[tuple[str, str, int]]) -> tuple[list[str], list[tuple[str, list[float]]]]:
    """Buckets in order and one series per name; names beyond the busiest few become ``other``."""
    buckets = sorted({bucket for bucket, _, _ in points})
    totals: dict[str, int] = defaultdict(int)
    for _, name, value in points:
        totals[name] += value
    ranked = sorted(totals, key=lambda n: (-totals[n], n))
    # an "other" holding a single name hides it for nothing
    kept = ranked if len(ranked) <= MAX_SERIES + 1 else ranked[:MAX_SERIES]
    index = {bucket: i for i, bucket in enumerate(buckets)}
    series: dict[str, list[float]] = {name: [0.0] * len(buckets) for name in kept}
    if len(kept) < len(ranked):
        series["other"] = [0.0] * len(buckets)
    for bucket, name, value in points:
        series[name if name in kept else "other"][index[bucket]] += value
    return buckets, list(series.items())


def _short_bucket(bucket: str) -> str:
    """``2026-11-21T10:00:00.000Z`` -> ``11-21 10:00``."""
    return bucket[5:16].replace("T", " ") if len(bucket) >= 16 else bucket


def activity_chart(data: ReportData) -> str:
    if not data.activity:
        return '<p class="empty">No requests in the input.</p>'
    buckets, series = _top_series(data.activity)
    chart = svg.stacked_columns(
        [_short_bucket(b) for b in buckets], series, label=f"{PER_RESOURCE.capitalize()} per {data.bucket} by principal"
    )
    return chart + svg.legend([name for name, _ in series])


def denial_chart(data: ReportData) -> str:
    if not data.denial_timeline:
        return '<p class="empty">No denials or authentication failures.</p>'
    buckets, series = _top_series(data.denial_timeline)
    chart = svg.stacked_columns([_short_bucket(b) for b in buckets], series, label=f"Denials and authentication failures per {data.bucket}")
    return chart + svg.legend([name for name, _ in series])


def heat_chart(data: ReportData) -> str:
    if not data.heat:
        return '<p class="empty">No requests in the input.</p>'
    by_principal: dict[str, int] = defaultdict(int)
    by_method: dict[str, int] = defaultdict(int)
    for principal, method, value in data.heat:
        by_principal[principal] += value
        by_method[method] += value
    rows = sorted(by_principal, key=lambda p: (-by_principal[p], p))[:HEAT_ROWS]
    columns = sorted(by_method, key=lambda m: (-by_method[m], m))[:HEAT_COLUMNS]
    values = {(p, m): float(v) for p, m, v in data.heat}
    return svg.heatmap(rows, columns, values, label=f"{PER_RESOURCE.capitalize()} by principal and method")


def ranking_charts(data: ReportData) -> str:
    parts = [denied_by_chart(data)]
    for dimension, title in (("principal", "by client principal"), ("address", "by client address"), ("resource", "by resource")):
        items = [(key, float(count)) for key, count in data.ranking.get(dimension, ())]
        chart = svg.horizontal_bars(items, label=f"Denials {title}") if items else '<p class="empty">None.</p>'
        parts.append(f'<div class="panel"><h3>Denials {text(title)}</h3>{chart}</div>')
    return '<div class="grid3">' + "".join(parts) + "</div>"


def latency_chart(data: ReportData) -> str:
    if not data.latency:
        return '<p class="empty">No outcome records with timings.</p>'
    return svg.latency_ranges(data.latency, label="Latency percentiles per API")


def denied_by_chart(data: ReportData) -> str:
    items = [(by, float(n)) for by, n in data.denied_by]
    chart = svg.horizontal_bars(items, label="Denials by who denied") if items else '<p class="empty">None.</p>'
    return f'<div class="panel"><h3>Denials by who denied</h3>{chart}</div>'
