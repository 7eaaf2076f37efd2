"""Audit trails of real proxy runs, one per way of tampering with them, shared by the chain check's tests
(test_chain_integrity.py, test_chain_state.py)."""

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from tests.proxy.audit.chain_trail import drop_lines, edit_line, published, swap_lines, write_key_pair, write_run

RECORDS = 30


def _first_run(audit: Path) -> list[Path]:
    return [path for path in published(audit) if path.name.startswith("audit-1-")]


def _truncate(audit: Path) -> None:
    last = _first_run(audit)[-1]
    last.write_bytes(b"".join(last.read_bytes().splitlines(keepends=True)[:-3]))


TAMPERING: dict[str, Callable[[Path], None]] = {
    "untouched": lambda audit: None,
    "delete line": lambda audit: drop_lines(published(audit)[1], 3),
    "delete file": lambda audit: published(audit)[1].unlink(),
    "edit principal": lambda audit: edit_line(published(audit)[1], 4, lambda r: r["data"]["authenticationInfo"].update(principal="User:mallory")),
    "reorder": lambda audit: swap_lines(published(audit)[1], 2, 3),
    "truncate tail": _truncate,
    # no number where the sequence number goes: the line is unchained (and the run goes on)
    "chainseq not a number": lambda audit: edit_line(published(audit)[1], 2, lambda r: r.update(chainseq="x1")),
}


@pytest.fixture(scope="module")
def trails(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], Path]:
    """One trail (two runs, a crash between) per way of tampering, and the public key."""
    base = tmp_path_factory.mktemp("chains")
    private, public = write_key_pair(base)
    pristine = base / "pristine"

    async def write() -> None:
        await write_run(pristine, private, 1, RECORDS)
        await write_run(pristine, private, 2, RECORDS, crash=True)
        await write_run(pristine, private, 3, RECORDS)

    trio.run(write)
    found: dict[str, Path] = {}
    for index, (name, tamper) in enumerate(TAMPERING.items()):
        copy = base / f"trail-{index}"
        shutil.copytree(pristine, copy)
        shutil.rmtree(copy / ".staging", ignore_errors=True)
        tamper(copy)
        found[name] = copy
    return found, public
