"""Escaping and cell formatting for the HTML report: every value reaches the page through :func:`text` or :func:`cell`."""

from __future__ import annotations

from html import escape
from typing import Any

#: Statuses and decisions shown as a red badge, and those shown as a green one.
BAD_VALUES = frozenset({"DENIED", "REFUSED", "FAILURE", "ERROR", "NO_OUTCOME"})
GOOD_VALUES = frozenset({"ALLOWED", "SUCCESS"})


def text(value: Any) -> str:
    """``value`` as HTML text (attribute-safe); None is empty."""
    return escape("" if value is None else str(value), quote=True)


def cell(value: Any) -> str:
    """``value`` as a table cell shows it: a dash for None, yes/no, grouped digits, statuses as badges."""
    if value is None:
        return '<span class="muted">&ndash;</span>'
    if isinstance(value, bool):
        return '<span class="badge bad">yes</span>' if value else "no"
    if isinstance(value, (list, tuple)):
        return text(", ".join(str(v) for v in value))
    if isinstance(value, float):
        return text(f"{value:,.2f}")
    if isinstance(value, int):
        return text(f"{value:,}")
    shown = str(value)
    if shown in BAD_VALUES:
        return f'<span class="badge bad">{text(shown)}</span>'
    if shown in GOOD_VALUES:
        return f'<span class="badge ok">{text(shown)}</span>'
    return text(shown)
