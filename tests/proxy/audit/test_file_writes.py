"""The file sink's writes: unbuffered at `flush` and `fsync` (one system call a batch), buffered at `none`, the same bytes."""

import io
from pathlib import Path

import pytest

from proxy.audit.cloudevents import AuditEntry
from proxy.audit.sinks import file as audit_file
from proxy.audit.sinks.file import DURABILITY_MODES, FileSink


def _entries(count: int) -> list[AuditEntry]:
    return [AuditEntry(b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * (n * 37 % 300)), str(n), "intent") for n in range(count)]


def _staged(sink: FileSink) -> bytes:
    assert sink._path is not None
    return sink._path.read_bytes()


@pytest.mark.parametrize("durability", DURABILITY_MODES)
def test_each_durability_writes_the_same_bytes(tmp_path: Path, durability: str) -> None:
    """The buffered way (`none`, the oracle: the batches joined, written once at the end) and the unbuffered way write
    byte for byte the same file."""
    sink = FileSink(tmp_path / durability, 100, durability=durability)
    entries = _entries(40)
    for start in range(0, 40, 7):
        sink._append(b"".join(entry.line for entry in entries[start : start + 7]))
    sink.rotate()
    (published,) = (tmp_path / durability).glob("*.jsonl")
    assert published.read_bytes() == b"".join(entry.line for entry in entries)


@pytest.mark.parametrize("durability", ["flush", "fsync"])
def test_flush_and_fsync_leave_nothing_in_the_process(tmp_path: Path, durability: str) -> None:
    """A batch written at `flush` or `fsync` is in the file (the operating system's) when the commit returns."""
    sink = FileSink(tmp_path, 100, durability=durability)
    entries = _entries(4)
    sink._append(entries[0].line)  # opens the file (in the writer's worker thread, in the pipeline)
    for n, entry in enumerate(entries[1:], 2):
        if not sink.commit_now([entry]):  # fsync: never on the caller's turn
            assert durability == "fsync"
            sink._append(entry.line)
        assert _staged(sink) == b"".join(e.line for e in entries[:n])
    assert isinstance(sink._file, io.FileIO)


def test_none_keeps_the_process_buffer(tmp_path: Path) -> None:
    sink = FileSink(tmp_path, 100, durability="none")
    sink._append(b'{"n":1}\n')
    assert _staged(sink) == b""  # still in the buffer: what `none` promises, no more
    sink.rotate()
    assert b"".join(path.read_bytes() for path in tmp_path.glob("*.jsonl")) == b'{"n":1}\n'


class _Trickle(io.RawIOBase):
    """An unbuffered file that takes at most `step` bytes a write, as a write to a full pipe or a signal may."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.taken = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        chunk = bytes(memoryview(data))[: self.step]  # type: ignore[arg-type]
        self.taken += chunk
        return len(chunk)


@pytest.mark.parametrize("step", [1, 5, 64, 10_000])
def test_a_short_write_is_written_on_from_where_it_stopped(step: int) -> None:
    handle = _Trickle(step)
    data = bytes(range(256)) * 3
    audit_file._write_all(handle, data)  # type: ignore[arg-type]
    assert bytes(handle.taken) == data


def test_a_failed_unbuffered_write_cuts_the_file_back_to_its_committed_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sink = FileSink(tmp_path, 100, durability="flush")
    sink._append(b'{"n":1}\n')
    path = sink._path
    assert path is not None

    def full(handle: object, data: bytes) -> None:
        with open(path, "ab") as torn:
            torn.write(data[:3])  # part of the line reached the file before the error
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(audit_file, "_write_all", full)
    with pytest.raises(OSError):
        sink._append(b'{"n":2}\n')
    assert b"".join(p.read_bytes() for p in tmp_path.glob("*.jsonl")) == b'{"n":1}\n'


@pytest.mark.parametrize("durability", ["flush", "none"])
def test_a_commit_on_the_callers_turn_writes_what_append_writes(tmp_path: Path, durability: str) -> None:
    """`commit_now`'s inline write at `flush` (and its `none` way) against `_append`, the writer's, as the oracle: the
    same bytes, one batch of one record or of several; a batch that would fill the file is left to the writer."""
    inline, oracle = FileSink(tmp_path / "inline", 100, durability=durability), FileSink(tmp_path / "oracle", 100, durability=durability)
    entries = _entries(30)
    for sink in (inline, oracle):
        sink._append(entries[0].line)
    for start in range(1, 30, 3):
        batch = entries[start : start + (1 if start % 2 else 3)]
        assert inline.commit_now(batch)
        oracle._append(b"".join(entry.line for entry in batch))
    inline.max_file_bytes = inline._size + 10
    assert not inline.commit_now(entries[:1])  # would fill the file: rotation is the writer's, in its thread
    for sink in (inline, oracle):
        sink.rotate()
    assert [p.read_bytes() for p in (tmp_path / "inline").glob("*.jsonl")] == [p.read_bytes() for p in (tmp_path / "oracle").glob("*.jsonl")]
