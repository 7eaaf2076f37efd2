"""The HTML report's tables: a :class:`spark_audit.report_data.Table` as HTML, each column wrapped as it reads best."""

from __future__ import annotations

from spark_audit.html_text import cell, text
from spark_audit.report_data import Table

#: Columns whose cells wrap only between words (an error's code and name).
WORD_WRAPPED_COLUMNS = frozenset({"error"})
#: Wrapped columns that get more room: a change, the reason of a denial; names, which read badly cut.
WIDE_COLUMNS = frozenset({"what changed", "why"})
NAME_COLUMNS = frozenset({"principal", "forwardingPrincipal"})
#: Columns whose cells wrap (long text), so that tables fit a laptop screen; the others stay on one line.
WRAPPED_COLUMNS = frozenset(
    {
        "what changed",
        "why",
        "resource",
        "resources",
        "from",
        "value",
        "problem",
        "requestId",
        "principals",
        "listeners",
        "baselineListeners",
        "subject",
        "principal",
        "forwardingPrincipal",
    }
)


def _class(column: str) -> str:
    """The CSS class of a column's cells: how (and whether) they wrap."""
    if column in WORD_WRAPPED_COLUMNS:
        return ' class="words"'
    if column in WIDE_COLUMNS:
        return ' class="wrap wide"'
    if column in NAME_COLUMNS:
        return ' class="wrap name"'
    return ' class="wrap"' if column in WRAPPED_COLUMNS else ""


def table(data: Table | None, empty: str) -> str:
    if data is None or not data.rows:
        return f'<p class="empty">{text(empty)}</p>'
    classes = [_class(c) for c in data.columns]
    head = "".join(f"<th{k}>{text(c)}</th>" for c, k in zip(data.columns, classes, strict=True))
    body = "".join(
        "<tr>" + "".join(f"<td{k}>{cell(v)}</td>" for v, k in zip(row, classes, strict=True)) + "</tr>" for row in data.rows
    )
    more = ""
    if data.total is not None and data.total > len(data.rows):
        more = f'<p class="muted">{len(data.rows):,} of {data.total:,} rows shown; all are in the Parquet output.</p>'
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}'
