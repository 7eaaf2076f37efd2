"""Which dates of the kept tables (spark_audit/tables.py) no longer follow the store.

A small JSON file beside the tables. Ingest adds the dates of its new records before they join
the store; the report step clears them once the tables and the date-partitioned reports follow
the store again. A run that dies in between leaves the next run the dates to redo.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

#: 2: the alarms are a filter of the one kept table (spark_audit/tables.py); a state of format 1 describes two tables, so they are rebuilt.
#: 3: the kept table is partitioned by date and alarm; a state of format 2 describes a table partitioned by date alone, rebuilt too
#: 4: an incremental run keeps the alarms' counts per date (spark_audit/report_writes.py); a state of format 3
#: was written by a job that keeps none, and may follow counts a newer run kept and it left stale: everything is rebuilt once
#: 5: the denials report is partitioned by date and rewritten for the dates a run rewrites; a state of format 4 goes with
#: a denials report written whole, which a rerun must not write partitions into: everything is rebuilt once
FORMAT = 5


@dataclass(frozen=True)
class TableState:
    #: the tables were once written from the whole store, and every change since is in ``pending``
    built: bool = False
    #: dates whose records changed since the tables were last brought up to date
    pending: frozenset[date] = frozenset()
    #: the report options the kept partitions of the date-partitioned reports were computed with
    report_options: dict[str, Any] = field(default_factory=dict)
    #: the per-date parts (spark_audit/daily_tables.py) follow the store but for ``pending``: an incremental run kept them
    daily: bool = False
    #: the instant the kept intents-without-outcome partitions were computed up to (microseconds; None: unknown)
    outcomes_before_us: int | None = None


def load(path: str) -> TableState:
    """The state at ``path``; not built when it is missing, unreadable or of another format."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("format") != FORMAT:
            return TableState()
        return TableState(
            built=bool(raw["built"]),
            pending=frozenset(date.fromisoformat(d) for d in raw["pending"]),
            report_options=dict(raw.get("reportOptions") or {}),
            daily=bool(raw.get("daily", False)),
            outcomes_before_us=_micros(raw.get("outcomesBeforeUs")),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return TableState()


def _micros(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def save(path: str, state: TableState) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(
        {
            "format": FORMAT,
            "built": state.built,
            "pending": sorted(d.isoformat() for d in state.pending),
            "reportOptions": state.report_options,
            "daily": state.daily,
            "outcomesBeforeUs": state.outcomes_before_us,
        },
        indent=2,
        sort_keys=True,
    )
    tmp = target.with_name(f"{target.name}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, target)


def add_pending(path: str, dates: Iterable[date]) -> None:
    """Before new records of ``dates`` join the store."""
    state = load(path)
    new = frozenset(dates)
    if not new <= state.pending:
        save(path, replace(state, pending=state.pending | new))


def invalidate(path: str) -> None:
    """Before the store is rebuilt: the next report step rewrites the tables from the whole store."""
    save(path, TableState())
