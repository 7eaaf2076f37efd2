"""The plain-text report the job prints (a terminal's view of the HTML page)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from spark_audit.report_data import ReportData, Table


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    # the page's multi-line cells (what changed, from where) on one line
    return str(value).replace("\n", "; ")


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Rows as a plain-text table with a header and a rule."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    return "\n".join([line(list(headers)), line(["-" * w for w in widths]), *(line(row) for row in cells)])


def _block(title: str, data: Table | None, out: TextIO) -> None:
    if data is None:
        return
    total = data.total if data.total is not None else len(data.rows)
    print(f"{title} ({total} row{'' if total == 1 else 's'})", file=out)
    if data.rows:
        print(format_table(data.columns, data.rows), file=out)
        if total > len(data.rows):
            print(f"... {total - len(data.rows)} more", file=out)
    print(file=out)


def print_report(data: ReportData, out: TextIO | None = None) -> None:
    stream = out if out is not None else sys.stdout
    t = data.tables
    _block("Requests by principal x method x outcome", t.get("requests"), stream)
    _block("Denials", t.get("denials"), stream)
    _block("Sensitive changes", t.get("sensitive_changes"), stream)
    _block("Bursts of denials / authentication failures", t.get("bursts"), stream)
    _block("First-seen principal/address pairs", t.get("first_seen_pairs"), stream)
    _block("Principals on an unusual listener", t.get("unusual_listeners"), stream)
    _block("Intents without outcomes", t.get("intents_without_outcome"), stream)
    _block("Latency per API (ms)", t.get("latency"), stream)
    if "whatif_counts" in t:
        _block("What-if: decisions that would change", t.get("whatif_counts"), stream)
    _block("Unused grants (ALLOW bindings no request used)", t.get("acl_unused_grants"), stream)
    _block("Minimal ACLs", t.get("acl_minimal"), stream)
    _block("Minimal ACLs replayed: decisions that would change", t.get("acl_proof"), stream)
    print(f"malformed lines: {data.summary.get('malformed', 0)}", file=stream)
    print(f"duplicates dropped: {data.summary.get('duplicates_dropped', 0)}", file=stream)


def _n(summary: Mapping[str, Any], key: str, one: str, many: str) -> str:
    count = summary.get(key, 0)
    return f"{count} {one if count == 1 else many}"


def short_summary(summary: Mapping[str, Any]) -> list[str]:
    """A few lines for the end of ``make demo``."""
    lines = [
        f"{_n(summary, 'records', 'audit record', 'audit records')}, {_n(summary, 'requests', 'request', 'requests')}, "
        f"{_n(summary, 'denials', 'denial', 'denials')}, {_n(summary, 'authentication_failures', 'authentication failure', 'authentication failures')}",
        f"{_n(summary, 'sensitive_changes', 'sensitive change', 'sensitive changes')}, "
        f"{_n(summary, 'first_seen_pairs', 'first-seen principal/address pair', 'first-seen principal/address pairs')}, "
        f"{_n(summary, 'bursts', 'burst', 'bursts')}, {_n(summary, 'intents_without_outcome', 'intent without outcome', 'intents without outcome')}",
        f"{_n(summary, 'malformed', 'malformed line', 'malformed lines')} quarantined, {_n(summary, 'duplicates_dropped', 'duplicate', 'duplicates')} dropped",
    ]
    whatif = summary.get("whatif")
    if isinstance(whatif, Mapping):
        lines.append(f"what-if: {whatif.get('changed', 0)} of {whatif.get('decisions', 0)} decisions would change")
    return lines
