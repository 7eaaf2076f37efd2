"""The file sink: JSON lines under `<dir>/.staging/`, renamed into `<dir>/` when complete.

Readers (Spark's file source) only ever see whole files: a file is published by an
atomic rename on rotation (size, age), on shutdown, and at the next start after a
crash. `audit.durability` says what a commit means:

- `none`: appended to the process's buffer (a crash of the process may lose it);
- `flush`: handed to the operating system (survives the process, not the machine);
- `fsync`: on disk (survives power loss; new files and renames fsync their directory too).
"""

import datetime
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import trio

from proxy.audit.pipeline import AuditEntry, AuditSink
from proxy.audit.sink_kinds import SinkContext
from proxy.files import directory_problem, fsync_directory
from proxy.ops.metrics import PlainCounter, ProxyMetrics
from proxy.properties import ConfigError, Properties

log = logging.getLogger(__name__)

# Batches up to this size are written on the event loop when nothing needs an fsync or a new file.
_INLINE_BYTES = 256 * 1024
_TAIL_CHUNK_BYTES = 64 * 1024
"""How much of a file's end `last_line` reads at a time, looking for the newline before the last line."""

DURABILITY_NONE, DURABILITY_FLUSH, DURABILITY_FSYNC = "none", "flush", "fsync"
DURABILITY_MODES = (DURABILITY_NONE, DURABILITY_FLUSH, DURABILITY_FSYNC)


def last_line_of(path: Path, max_bytes: int) -> bytes | None:
    """The file's last complete line (None when it has none within its last `max_bytes`), read from the end."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        tail = b""
        while end > 0 and len(tail) <= max_bytes:
            start = max(0, end - _TAIL_CHUNK_BYTES)
            handle.seek(start)
            tail = handle.read(end - start) + tail
            end = start
            last_end = tail.rfind(b"\n")
            if last_end >= 0 and (end == 0 or tail.rfind(b"\n", 0, last_end) >= 0):
                return tail[tail.rfind(b"\n", 0, last_end) + 1 : last_end + 1]
    return None


def drop_torn_tail(path: Path) -> int:
    """Cut a last line that a crash left without its `\\n` (never acknowledged to anyone); the complete lines' byte count."""
    with open(path, "rb+") as handle:
        data = handle.read()
        keep = data.rfind(b"\n") + 1
        if keep != len(data):
            handle.truncate(keep)
            log.warning("audit: %s ended in an incomplete line (%d bytes) left by a crash; removed it", path, len(data) - keep)
    return keep


def _write_all(handle: BinaryIO, data: bytes) -> None:
    """All of `data` through an unbuffered file: what a buffered file's `write` and `flush` do, in one system call as a
    rule (a write to a regular file takes all of it; a short one is written on from where it stopped, as `flush` does)."""
    written = handle.write(data)
    if written < len(data):
        view = memoryview(data)
        while written < len(data):
            written += handle.write(view[written:])


class FileSink:
    name = "file"

    def __init__(
        self,
        directory: str | Path,
        node_id: int,
        *,
        durability: str = DURABILITY_FLUSH,
        max_file_bytes: int = 64 * 1024 * 1024,
        rotate_seconds: float | None = None,
        metrics: ProxyMetrics | None = None,
    ) -> None:
        if durability not in DURABILITY_MODES:
            raise ValueError(f"durability must be one of {DURABILITY_MODES}, not {durability!r}")
        self.directory = Path(directory)
        self.staging = self.directory / ".staging"
        self.staging.mkdir(parents=True, exist_ok=True)
        self.node_id = node_id
        self.durability = durability
        self.max_file_bytes = max_file_bytes
        self.rotate_seconds = rotate_seconds if rotate_seconds else None
        self.metrics = metrics
        self._sequence = 0
        self._file: BinaryIO | None = None
        self._path: Path | None = None
        self._size = 0
        self._opened_at = math.inf  # trio time of the current file's first record
        self._records_of: tuple[ProxyMetrics | None, dict[str, PlainCounter]] = (None, {})
        self._recover_staged()

    def opens_new_file(self) -> bool:
        """True when the next batch starts a new file (the chain puts a rotation checkpoint first in it)."""
        return self._file is None

    def last_line(self) -> bytes | None:
        """The last record of the newest published file: what a run before this one committed last."""
        for path in sorted(self.directory.glob("*.jsonl"), reverse=True):
            try:
                line = last_line_of(path, self.max_file_bytes)
            except OSError as exc:
                log.warning("audit: cannot read the last record of %s (%s); the chain starts afresh", path, exc)
                return None
            if line is not None:
                return line
        return None

    @property
    def _raw(self) -> bool:
        """Written unbuffered (flush, fsync): a commit is in the operating system's hands when `write` returns."""
        return self.durability != DURABILITY_NONE

    @property
    def _fsync(self) -> bool:
        return self.durability == DURABILITY_FSYNC

    def _recover_staged(self) -> None:
        """Files left in staging by a crash hold every record committed to them: publish them."""
        published = 0
        for leftover in sorted(self.staging.glob("*.jsonl")):
            if drop_torn_tail(leftover) == 0:
                leftover.unlink()
                continue
            os.replace(leftover, self.directory / leftover.name)
            published += 1
        if published:
            if self._fsync:
                fsync_directory(self.directory)
            log.info("audit: published %d files left in %s by a previous run", published, self.staging)
            if self.metrics is not None:
                self.metrics.audit_files_published.inc(published)

    # -- AuditSink ---------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        return None

    def _needs_thread(self, size: int) -> bool:
        """An fsync, opening or publishing a file, or a big write must not stall every connection's event loop."""
        return self._fsync or self._file is None or self._size + size >= self.max_file_bytes or size > _INLINE_BYTES

    async def commit(self, batch: Sequence[AuditEntry]) -> None:
        data = b"".join(entry.line for entry in batch)
        if self._needs_thread(len(data)):
            opened = await trio.to_thread.run_sync(self._append, data)
        else:
            # flush/none: one small write into the page cache costs less than the thread handoff around it.
            opened = self._append(data)
            await trio.lowlevel.checkpoint()
        if opened:
            self._opened_at = trio.current_time()
        self._count(batch)

    def commit_now(self, batch: Sequence[AuditEntry]) -> bool:
        """The pipeline's commit on the caller's turn: done when it needs no thread (flush/none, the file open)."""
        data = batch[0].line if len(batch) == 1 else b"".join(entry.line for entry in batch)  # one record, as a rule
        handle = self._file
        if handle is None or self.durability != DURABILITY_FLUSH or self._needs_thread(len(data)):
            return self._commit_now_otherwise(data, batch)
        # `_append` at `flush` with the file open and room in it (every request record on the caller's turn), inline.
        try:
            _write_all(handle, data)
        except OSError:
            self._abandon_file()
            raise
        self._size += len(data)  # below max_file_bytes: `_needs_thread` leaves a batch that fills the file to the writer
        self._count(batch)
        return True

    def _commit_now_otherwise(self, data: bytes, batch: Sequence[AuditEntry]) -> bool:
        """`commit_now` at `none` (its buffer), or False where the batch needs the writer's thread."""
        if self._needs_thread(len(data)):
            return False
        self._append(data)
        self._count(batch)
        return True

    def _count(self, batch: Sequence[AuditEntry]) -> None:
        metrics = self.metrics
        if metrics is None:
            return
        # Each stage's labelled series looked up once (two records a forwarded request): a few stages in all.
        counters = self._records_of
        if counters[0] is not metrics:
            counters = self._records_of = (metrics, {})
        for entry in batch:
            counter = counters[1].get(entry.stage)
            if counter is None:
                counter = counters[1][entry.stage] = metrics.audit_records_of(self.name, entry.stage)
            counter.inc()

    def deadline(self) -> float:
        if self._file is None or self.rotate_seconds is None:
            return math.inf
        return self._opened_at + self.rotate_seconds

    async def tick(self) -> None:
        if self._file is not None and trio.current_time() >= self.deadline():
            await trio.to_thread.run_sync(self.rotate)

    async def aclose(self) -> None:
        await trio.to_thread.run_sync(self.close_now)

    def close_now(self) -> None:
        self.rotate()

    # -- blocking work (worker thread) ------------------------------------------------

    def _open(self) -> tuple[BinaryIO, bool]:
        """The current file, and whether it was opened just now."""
        if self._file is None:
            self._sequence += 1
            stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%f")
            self._path = self.staging / f"audit-{self.node_id}-{stamp}-{self._sequence:06d}.jsonl"
            # `flush` and `fsync` hand every batch to the operating system at once: the file is written unbuffered, one
            # system call a batch, without copying it into a buffer first. `none` keeps the process's buffer.
            self._file = open(self._path, "ab", buffering=0) if self._raw else open(self._path, "ab")
            self._size = 0
            if self._fsync:
                fsync_directory(self.staging)
            return self._file, True
        return self._file, False

    def _append(self, data: bytes) -> bool:
        """Write one batch; True when it started a new file."""
        handle, opened = self._open()
        try:
            if self._raw:
                _write_all(handle, data)
            else:
                handle.write(data)
            if self._fsync:
                os.fsync(handle.fileno())
        except OSError:
            self._abandon_file()
            raise
        self._size += len(data)
        if self._size >= self.max_file_bytes:
            try:
                self.rotate()
            except OSError as exc:
                # The batch is committed; failing it now would only write it twice.
                log.error("audit: could not publish a full file (%s); it stays in staging until the next start", exc)
        return opened

    def _abandon_file(self) -> None:
        """After a failed write: cut the file back to its committed records and publish it; the retry starts a new file."""
        handle, path, size = self._file, self._path, self._size
        self._file = self._path = None
        if handle is None or path is None:
            return
        try:
            handle.close()
        except OSError:
            pass  # the buffer that failed to flush is what we cut off below
        try:
            os.truncate(path, size)
            if size:
                os.replace(path, self.directory / path.name)
            else:
                path.unlink()
        except OSError as exc:
            log.error("audit: could not tidy %s after a failed write (%s); it is published at the next start", path, exc)

    def rotate(self) -> None:
        """Publish the current file (if any)."""
        if self._file is None or self._path is None:
            return
        handle, path = self._file, self._path
        self._file = self._path = None
        try:
            handle.flush()
            if self._fsync:
                os.fsync(handle.fileno())
        finally:
            handle.close()
        os.replace(path, self.directory / path.name)
        if self._fsync:
            fsync_directory(self.directory)
        if self.metrics is not None:
            self.metrics.audit_files_published.inc()


# -- the kind: audit.file.* ---------------------------------------------------------------


@dataclass(frozen=True)
class FileSinkSettings:
    max_file_bytes: int = 64 * 1024 * 1024
    """`audit.file.max.bytes`"""
    rotate: float | None = 300.0
    """`audit.file.rotate.ms` in seconds: a file is published this long after its first record; None = only by size and at shutdown."""


class FileSinkKind:
    name = "file"

    def parse(self, props: Properties, log_dir: Path, *, enabled: bool) -> FileSinkSettings:
        if enabled:
            _check_log_dir(log_dir)
        # Read (and checked) whether or not the sink is enabled, as they always were.
        rotate_ms = props.int("audit.file.rotate.ms", 300000, minimum=0)
        return FileSinkSettings(props.int("audit.file.max.bytes", 64 * 1024 * 1024, minimum=1), rotate_ms / 1000 if rotate_ms else None)

    def effective(self, settings: FileSinkSettings | None) -> dict[str, Any]:
        settings = settings or FileSinkSettings()
        return {"file.max.bytes": settings.max_file_bytes, "file.rotate.ms": int(settings.rotate * 1000) if settings.rotate else 0}

    def open(self, settings: FileSinkSettings, context: SinkContext) -> AuditSink:
        try:
            return FileSink(
                context.log_dir,
                context.node_id,
                durability=context.durability,
                max_file_bytes=settings.max_file_bytes,
                rotate_seconds=settings.rotate,
                metrics=context.metrics,
            )
        except OSError as exc:  # what the check of parse cannot see: permissions, a read-only or special file system
            raise ConfigError(LOG_DIR_KEY, str(context.log_dir), f"cannot create {exc.filename or context.log_dir}: {exc.strerror}") from None


LOG_DIR_KEY = "audit.log.dir"


def _check_log_dir(log_dir: Path) -> None:
    """`audit.log.dir` is, or can become, a directory: check-config says so without creating it."""
    problem = directory_problem(log_dir)
    if problem is not None:
        raise ConfigError(LOG_DIR_KEY, str(log_dir), problem)


KIND = FileSinkKind()
