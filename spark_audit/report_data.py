"""What the job collected from Spark for the page and the text report: small tables and series, pure Python.

The page (spark_audit/html_report.py) and the text report (spark_audit/text_report.py) render it, so both
can be rendered and tested without a Spark session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Table:
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    #: rows in the full report when the table shows fewer
    total: int | None = None


@dataclass
class ReportData:
    summary: Mapping[str, Any]
    bucket: str = "1 hour"
    #: (bucket start, principal, requests)
    activity: Sequence[tuple[str, str, int]] = ()
    #: (principal, method, requests)
    heat: Sequence[tuple[str, str, int]] = ()
    #: (bucket start, kind, events): denials and authentication failures over time
    denial_timeline: Sequence[tuple[str, str, int]] = ()
    #: dimension -> [(key, denials)], most first
    ranking: Mapping[str, Sequence[tuple[str, int]]] = field(default_factory=dict)
    #: (method, p50, p90, p99, max)
    latency: Sequence[tuple[str, float, float, float, float]] = ()
    tables: Mapping[str, Table] = field(default_factory=dict)
    #: (who denied, denials), most first: spark_audit.view.denied_by's values
    denied_by: Sequence[tuple[str, int]] = ()
    #: (anchor, title, HTML) of sections rendered elsewhere (spark_audit/acl_page.py), shown before Data quality
    sections: Sequence[tuple[str, str, str]] = ()
