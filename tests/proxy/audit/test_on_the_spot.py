"""Commits on the caller's turn: taken only when nothing waits for the writer, never out of order, never lost."""

import json
from collections.abc import Sequence
from pathlib import Path

import orjson
import trio
import trio.testing

from proxy.audit.pipeline import AuditEntry, AuditLog
from proxy.audit.settings import audit_running
from proxy.audit.sinks.file import FileSink
from tests.audit_records import complete_lines
from tests.proxy.audit.test_pipeline import request_record


class SpotSink:
    """Keeps records in order and says which way each came: "spot" (commit_now) or "writer" (commit)."""

    name = "spot"

    def __init__(self) -> None:
        self.kept: list[tuple[str, int]] = []
        self.spot_failures = 0
        self.spot_declines = False
        self.writer_gate: trio.Event | None = None
        self.writer_entered = trio.Event()
        self.tick_at = float("inf")
        self.tick_after_commit = False
        self.tick_gate: trio.Event | None = None
        self.tick_entered = trio.Event()

    async def start(self, nursery: trio.Nursery) -> None:
        return None

    def commit_now(self, batch: Sequence[AuditEntry]) -> bool:
        if self.spot_declines:
            return False
        if self.spot_failures:
            self.spot_failures -= 1
            raise OSError("no space left on device")
        self.kept.extend(("spot", orjson.loads(entry.line)["data"]["correlationId"]) for entry in batch)
        return True

    async def commit(self, batch: Sequence[AuditEntry]) -> None:
        self.writer_entered.set()
        if self.writer_gate is not None:
            await self.writer_gate.wait()
        self.kept.extend(("writer", orjson.loads(entry.line)["data"]["correlationId"]) for entry in batch)
        if self.tick_after_commit:  # as the file sink's rotation deadline, set when a commit opens a file
            self.tick_at, self.tick_after_commit = trio.current_time(), False

    def deadline(self) -> float:
        return self.tick_at

    async def tick(self) -> None:
        """As the file sink's rotation: work in a worker thread, here held until the test lets it go."""
        self.tick_at = float("inf")
        self.tick_entered.set()
        if self.tick_gate is not None:
            await self.tick_gate.wait()

    async def aclose(self) -> None:
        return None

    def close_now(self) -> None:
        return None


def numbered(n: int) -> dict[str, object]:
    record = request_record(n=n)
    record["data"]["correlationId"] = n
    return record


async def test_an_idle_pipeline_commits_on_the_callers_turn() -> None:
    sink = SpotSink()
    audit = AuditLog([sink])
    async with audit_running(audit, 10):
        for n in range(3):
            await audit.write(numbered(n), required=True)
    assert sink.kept == [("spot", 0), ("spot", 1), ("spot", 2)]
    assert audit.records_written == 3


async def test_records_queue_behind_a_commit_in_progress_and_keep_their_order() -> None:
    sink = SpotSink()
    sink.spot_declines = True  # the first record goes to the writer, which holds it
    sink.writer_gate = trio.Event()
    audit = AuditLog([sink])
    async with audit_running(audit, 10):
        async with trio.open_nursery() as writers:
            writers.start_soon(audit.write, numbered(0))
            await sink.writer_entered.wait()
            sink.spot_declines = False
            for n in range(1, 4):
                writers.start_soon(audit.write, numbered(n))
                await trio.testing.wait_all_tasks_blocked()
            # Nothing overtook the record still being committed.
            assert sink.kept == []
            sink.writer_gate.set()
        await audit.write(numbered(4))
    assert [n for _, n in sink.kept] == [0, 1, 2, 3, 4]
    assert {way for way, n in sink.kept if n < 4} == {"writer"}
    assert sink.kept[-1] == ("spot", 4)  # idle again: back on the caller's turn


async def test_a_failure_on_the_spot_goes_to_the_writer_and_is_not_lost() -> None:
    sink = SpotSink()
    sink.spot_failures = 1
    audit = AuditLog([sink], on_failure="reject")
    async with audit_running(audit, 10):
        await audit.write(numbered(0), required=True)
        await audit.write(numbered(1), required=True)
    assert sink.kept == [("writer", 0), ("spot", 1)]


async def test_several_sinks_always_go_through_the_writer() -> None:
    first, second = SpotSink(), SpotSink()
    audit = AuditLog([first, second])
    async with audit_running(audit, 10):
        await audit.write(numbered(0))
    assert first.kept == second.kept == [("writer", 0)]


async def test_the_file_sink_commits_on_the_spot_only_at_flush_with_its_file_open(tmp_path: Path) -> None:
    for durability, spot_after_open in (("flush", True), ("none", True), ("fsync", False)):
        sink = FileSink(tmp_path / durability, 100, durability=durability)
        entry = AuditEntry.of(numbered(0))
        assert sink.commit_now([entry]) is False  # no file open yet: opening one is the writer's (a thread's) work
        await sink.commit([entry])
        assert sink.commit_now([AuditEntry.of(numbered(1))]) is spot_after_open
        sink.close_now()
        lines = [json.loads(line) for path in sorted((tmp_path / durability).glob("*.jsonl")) for line in complete_lines(path)]
        assert [line["data"]["correlationId"] for line in lines] == ([0, 1] if spot_after_open else [0])


async def test_a_cancelled_hand_off_does_not_keep_the_pipeline_off_the_spot(autojump_clock: trio.testing.MockClock) -> None:
    """A write cancelled while it waits for room in the queue (a disconnect record under its time limit, with the sink
    stuck) never reached the writer: once the writer is idle again, records commit on the spot as before."""
    sink = SpotSink()
    sink.spot_declines = True
    sink.writer_gate = trio.Event()
    audit = AuditLog([sink], queue_size=1)
    async with audit_running(audit, 10):
        async with trio.open_nursery() as writers:
            writers.start_soon(audit.write, numbered(0))  # held by the writer
            await sink.writer_entered.wait()
            writers.start_soon(audit.write, numbered(1))  # fills the queue
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(5):
                await audit.write(numbered(2))  # no room: cancelled while it waits
            sink.spot_declines = False
            sink.writer_gate.set()
        await audit.write(numbered(3))
    assert sink.kept == [("writer", 0), ("writer", 1), ("spot", 3)]


async def test_no_record_commits_on_the_spot_while_a_tick_rotates_the_file() -> None:
    sink = SpotSink()
    sink.spot_declines = True  # the first record goes through the writer, after which its tick is due
    sink.tick_gate = trio.Event()
    sink.tick_after_commit = True
    audit = AuditLog([sink])
    async with audit_running(audit, 10):
        await audit.write(numbered(0))
        await sink.tick_entered.wait()  # the writer is in its tick (a rotation, in the file sink)
        sink.spot_declines = False
        async with trio.open_nursery() as writers:
            writers.start_soon(audit.write, numbered(1))
            await trio.testing.wait_all_tasks_blocked()
            assert sink.kept == [("writer", 0)]  # not written beside the rotation
            sink.tick_gate.set()
        await audit.write(numbered(2))
    assert sink.kept == [("writer", 0), ("writer", 1), ("spot", 2)]
