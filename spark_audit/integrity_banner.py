"""The audit trail's integrity (summary.json `integrity`) as the first thing report.html shows: red when it is broken."""

from __future__ import annotations

from html import escape
from typing import Any

_MAX_NAMED = 5
"""Findings named per writer in the banner; summary.json holds them all."""
_STYLE = "padding:12px 16px;margin:0;font-weight:600;color:#fff;background:{color}"
_BROKEN, _WHOLE, _UNKNOWN = "#b00020", "#2e7d32", "#616161"


def _findings(writer: dict[str, Any]) -> str:
    parts = []
    if writer["missing"]:
        parts.append("missing " + ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in writer["missing"][:_MAX_NAMED]))
    for kind in ("modified", "reordered", "bad_signatures"):
        if writer[kind]:
            parts.append(f"{kind.replace('_', ' ')} " + ", ".join(str(seq) for seq in writer[kind][:_MAX_NAMED]))
    return "; ".join(parts)


def integrity_banner(integrity: dict[str, Any] | None) -> str:
    if not integrity:
        return ""
    writers = integrity.get("writers") or []
    if integrity.get("status") == "broken":
        broken = [w for w in writers if w.get("status") == "broken"]
        items = "".join(
            f"<li>{escape(w['writer'])}: first break at chainseq {w['first_break']} ({escape(_findings(w))})</li>" for w in broken
        )
        unreadable = f"<li>{integrity['unreadable']} unreadable lines</li>" if integrity.get("unreadable") else ""
        return (
            f'<div class="integrity broken" style="{_STYLE.format(color=_BROKEN)}">'
            f"The audit trail is BROKEN: records are missing, altered or out of order.<ul>{items}{unreadable}</ul></div>"
        )
    signed = "signatures checked" if integrity.get("signatures_checked") else "signatures NOT checked (no --chain-public-key)"
    color = _WHOLE if integrity.get("signatures_checked") else _UNKNOWN
    records = sum(int(w.get("records", 0)) for w in writers)
    return f'<div class="integrity whole" style="{_STYLE.format(color=color)}">Audit trail whole: {records} records of {len(writers)} writers, {signed}.</div>'
