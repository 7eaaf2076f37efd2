"""The kept tables' state file (spark_audit/table_state.py): a state of another format is no state, so everything is rebuilt."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from spark_audit import table_state
from spark_audit.table_state import TableState


def test_a_state_round_trips(tmp_path: Path) -> None:
    path = str(tmp_path / "state.json")
    state = TableState(
        built=True, pending=frozenset({date(2026, 11, 21)}), report_options={"bucketSeconds": 300}, daily=True, outcomes_before_us=1_795_000_000_000_000
    )
    table_state.save(path, state)
    assert table_state.load(path) == state


@pytest.mark.parametrize("older", [3, 4])
def test_a_state_of_an_older_format_rebuilds_everything(tmp_path: Path, older: int) -> None:
    # format 3 was written by jobs that keep no alarm counts: counts a newer run kept would be stale after one of them ran;
    # format 4 by jobs that wrote the denials report whole, not partitioned by date
    path = tmp_path / "state.json"
    table_state.save(str(path), TableState(built=True, daily=True))
    raw = json.loads(path.read_text())
    assert raw["format"] == table_state.FORMAT == 5
    path.write_text(json.dumps({**raw, "format": older}))
    assert table_state.load(str(path)) == TableState()
