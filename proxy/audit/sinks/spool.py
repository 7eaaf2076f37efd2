"""The Kafka sink's spool: records Kafka could not take yet, in order, in local segment files.

Segments are `spool-<sequence>.jsonl`, one record per line exactly as the file sink
writes them. Appends go to the newest (active) segment; delivery takes the oldest
closed one, and a segment (or the delivered part of it) is removed only after
Kafka acknowledged its records. Not thread-safe: the Kafka sink serializes calls.
"""

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from proxy.audit.sinks.file import DURABILITY_FSYNC, DURABILITY_NONE, drop_torn_tail
from proxy.files import fsync_directory

log = logging.getLogger(__name__)

SEGMENT_BYTES = 4 * 1024 * 1024


@dataclass
class Segment:
    path: Path
    records: int
    size: int


class Spool:
    def __init__(self, directory: Path, *, durability: str, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.durability = durability
        self.segment_bytes = segment_bytes
        self.segments: list[Segment] = []
        self._active: BinaryIO | None = None  # open handle of segments[-1] while it takes appends
        for path in sorted(directory.glob("spool-*.jsonl")):
            size = drop_torn_tail(path)
            if size == 0:
                path.unlink()
                continue
            with open(path, "rb") as handle:
                records = sum(1 for _ in handle)
            self.segments.append(Segment(path, records, size))
        for leftover in directory.glob("spool-*.jsonl.tmp"):
            leftover.unlink()  # a rewrite cut short: the segment it was made from is still there
        last = self.segments[-1].path.name if self.segments else "spool-0.jsonl"
        self._sequence = int(last.removeprefix("spool-").removesuffix(".jsonl"))

    @property
    def records(self) -> int:
        return sum(segment.records for segment in self.segments)

    @property
    def size(self) -> int:
        return sum(segment.size for segment in self.segments)

    @property
    def empty(self) -> bool:
        return not self.segments

    def _sync(self, handle: BinaryIO) -> None:
        if self.durability != DURABILITY_NONE:
            handle.flush()
        if self.durability == DURABILITY_FSYNC:
            os.fsync(handle.fileno())

    def append(self, lines: list[bytes]) -> None:
        if self._active is None:
            self._sequence += 1
            path = self.directory / f"spool-{self._sequence:020d}.jsonl"
            self._active = open(path, "ab")
            self.segments.append(Segment(path, 0, 0))
            if self.durability == DURABILITY_FSYNC:
                fsync_directory(self.directory)
        segment = self.segments[-1]
        data = b"".join(lines)
        try:
            self._active.write(data)
            self._sync(self._active)
        except OSError:
            self._active.close()
            self._active = None
            os.truncate(segment.path, segment.size)  # the retry appends these records again
            raise
        segment.records += len(lines)
        segment.size += len(data)
        if segment.size >= self.segment_bytes:
            self.close_active()

    def close_active(self) -> None:
        if self._active is not None:
            handle, self._active = self._active, None
            try:
                self._sync(handle)
            finally:
                handle.close()

    def oldest(self) -> Segment | None:
        """The oldest segment, closed so that it no longer changes; None when the spool is empty."""
        if not self.segments:
            return None
        if len(self.segments) == 1:
            self.close_active()
        return self.segments[0]

    @staticmethod
    def read(segment: Segment) -> list[bytes]:
        with open(segment.path, "rb") as handle:
            return [line for line in handle if line.endswith(b"\n")]

    def keep_only(self, segment: Segment, lines: list[bytes]) -> None:
        """Kafka took part of the segment: keep the rest (in order) for the next attempt."""
        temporary = segment.path.with_name(segment.path.name + ".tmp")
        data = b"".join(lines)
        with open(temporary, "wb") as handle:
            handle.write(data)
            self._sync(handle)
        os.replace(temporary, segment.path)
        if self.durability == DURABILITY_FSYNC:
            fsync_directory(self.directory)
        segment.records, segment.size = len(lines), len(data)

    def remove(self, segment: Segment) -> None:
        """Every record of the segment was delivered."""
        segment.path.unlink()
        self.segments.remove(segment)
        if self.durability == DURABILITY_FSYNC:
            fsync_directory(self.directory)

    def close(self) -> None:
        self.close_active()
