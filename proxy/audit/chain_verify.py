"""Checking audit lines against their writers' hash chains and signed checkpoints (`envelope-proxy audit verify`).

The input is raw lines, each with where it was read (a file, or a Kafka topic's partition) and its position
there. Lines are grouped by writer (`source`) and ordered by `chainseq`, whatever order they were read in,
so the chain is checked the same for files and for a topic of any partitioning. What each finding means is in
docs/audit-schema.md, "Proving the audit trail".
"""

import base64
import binascii
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from proxy.audit.chain import line_hash
from proxy.audit.chain_format import (
    CHECKPOINT_EVENT_TYPE,
    GENESIS,
    PREV_ATTRIBUTE,
    REASON_CLOSE,
    SEQ_ATTRIBUTE,
    checkpoint_message,
)


@dataclass(frozen=True)
class RawLine:
    origin: str
    """A file's path, or `<topic>/<partition>` of a Kafka topic."""
    position: int
    """Line number in the file (from 1), or the message's offset."""
    data: bytes


@dataclass
class _Seen:
    line: RawLine
    hash: str
    prev: str
    time: str | None
    record: dict[str, Any]


@dataclass
class WriterReport:
    writer: str
    records: int = 0
    verified: int = 0
    """Records whose link to the record before them holds (for the first: a known start)."""
    first_time: str | None = None
    last_time: str | None = None
    missing: list[tuple[int, int]] = field(default_factory=list)
    """Ranges of `chainseq` (inclusive) that must exist and were not in the input."""
    modified: list[int] = field(default_factory=list)
    reordered: list[int] = field(default_factory=list)
    bad_signatures: list[int] = field(default_factory=list)
    checkpoints: int = 0
    """Checkpoints whose signature holds under a key given."""
    last_checkpoint: int | None = None
    unsigned_tail: tuple[int, int] | None = None
    """Records after the last good checkpoint: the chain alone vouches for them, so a cut there leaves no trace."""
    closed: bool = False
    """The writer's last record is its `close` checkpoint: it shut down cleanly and nothing after it is missing."""
    continues: dict[str, Any] | None = None
    """The record this writer's first record continues: `{source, seq}`, `{"unknown": hash}` or None (a fresh start)."""
    locations: dict[int, str] = field(default_factory=dict)
    """Where each record named by a finding was read: `origin:position`."""

    @property
    def first_break(self) -> int | None:
        found = [start for start, _ in self.missing] + self.modified + self.reordered + self.bad_signatures
        return min(found) if found else None

    @property
    def broken(self) -> bool:
        return self.first_break is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "writer": self.writer,
            "status": "broken" if self.broken else "whole",
            "records": self.records,
            "verified": self.verified,
            "first_break": self.first_break,
            "time_span": {"first": self.first_time, "last": self.last_time},
            "missing": [list(gap) for gap in self.missing],
            "modified": self.modified,
            "reordered": self.reordered,
            "bad_signatures": self.bad_signatures,
            "checkpoints": self.checkpoints,
            "last_checkpoint": self.last_checkpoint,
            "unsigned_tail": list(self.unsigned_tail) if self.unsigned_tail else None,
            "closed": self.closed,
            "continues": self.continues,
            "locations": {str(seq): where for seq, where in sorted(self.locations.items())},
        }


@dataclass
class Verification:
    writers: list[WriterReport]
    unreadable: list[str] = field(default_factory=list)
    """`origin:position` of lines that are not a JSON object with a writer: altered beyond reading."""
    unchained: int = 0
    """Records without chain attributes (written before schema version 5): counted, not checked."""
    signatures_checked: bool = True

    @property
    def broken(self) -> bool:
        return bool(self.unreadable) or any(writer.broken for writer in self.writers)

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": "broken" if self.broken else "whole",
            "signatures_checked": self.signatures_checked,
            "unreadable": self.unreadable,
            "unchained": self.unchained,
            "writers": [writer.as_dict() for writer in self.writers],
        }


def _signature_holds(seen: _Seen, seq: int, keys: Mapping[str, Ed25519PublicKey]) -> bool:
    data = seen.record.get("data") or {}
    key = keys.get(str(data.get("keyid")))
    if key is None:
        return False
    try:
        signature = base64.b64decode(str(data.get("signature")), validate=True)
        message = checkpoint_message(str(seen.record.get("source")), seq, seen.prev, str(seen.time), data)
        key.verify(signature, message)
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for number in numbers:
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1] = (ranges[-1][0], number)
        else:
            ranges.append((number, number))
    return ranges


class _Writer:
    """One writer's lines, distinct by content, by `chainseq`."""

    def __init__(self, name: str) -> None:
        self.report = WriterReport(name)
        self.by_seq: dict[int, _Seen] = {}
        self.order: dict[str, list[int]] = defaultdict(list)
        """Each origin's `chainseq`s in the order they were read."""

    def add(self, seq: int, seen: _Seen) -> None:
        known = self.by_seq.get(seq)
        if known is None:
            self.by_seq[seq] = seen
            self.order[seen.line.origin].append(seq)
        elif known.hash != seen.hash:  # two different records at one place: one of them was altered
            self._note(self.report.modified, seq, seen.line)
        # the same line again: Kafka's at-least-once delivery; checked once

    def _note(self, findings: list[int], seq: int, line: RawLine) -> None:
        if seq not in findings:
            findings.append(seq)
        self.report.locations.setdefault(seq, f"{line.origin}:{line.position}")

    def check(self, keys: Mapping[str, Ed25519PublicKey], claimed_end: int) -> WriterReport:
        report, present = self.report, sorted(self.by_seq)
        report.records = len(present)
        times = [seen.time for seen in self.by_seq.values() if seen.time]
        report.first_time, report.last_time = (min(times), max(times)) if times else (None, None)
        for seq in present:
            seen = self.by_seq[seq]
            if seen.record.get("type") == CHECKPOINT_EVENT_TYPE and keys:
                if _signature_holds(seen, seq, keys):
                    report.checkpoints += 1
                    report.last_checkpoint = seq
                else:
                    self._note(report.bad_signatures, seq, seen.line)
            before = self.by_seq.get(seq - 1)
            if before is not None:
                if before.hash == seen.prev:
                    report.verified += 1
                else:
                    self._note(report.modified, seq - 1, before.line)
            elif seq == 1:
                report.verified += 1
        # A signed checkpoint at seq n says n - 1 records came before it; a successor's start says where this one ended.
        end = max(present[-1], report.last_checkpoint or 0, claimed_end)
        report.missing = _ranges(sorted(set(range(1, end + 1)) - set(present)))
        for origin, seqs in self.order.items():
            highest = 0
            for position, seq in enumerate(seqs):
                if seq < highest:
                    self._note(report.reordered, seq, self._line_at(origin, position))
                highest = max(highest, seq)
        last = self.by_seq[present[-1]]
        report.closed = last.record.get("type") == CHECKPOINT_EVENT_TYPE and (last.record.get("data") or {}).get("reason") == REASON_CLOSE
        signed_up_to = report.last_checkpoint or 0
        if present[-1] > signed_up_to:
            report.unsigned_tail = (signed_up_to + 1, present[-1])
        report.modified.sort()
        report.reordered.sort()
        return report

    def _line_at(self, origin: str, position: int) -> RawLine:
        return self.by_seq[self.order[origin][position]].line


def verify_lines(lines: Iterable[RawLine], keys: Mapping[str, Ed25519PublicKey]) -> Verification:
    """Every writer's chain in `lines`, checked; `keys` by key id (an empty mapping leaves signatures unchecked)."""
    writers: dict[str, _Writer] = {}
    result = Verification([], signatures_checked=bool(keys))
    where_is: dict[str, tuple[str, int]] = {}
    for line in lines:
        try:
            record = orjson.loads(line.data)
        except orjson.JSONDecodeError:
            record = None
        writer = record.get("source") if isinstance(record, dict) else None
        if not isinstance(record, dict) or not isinstance(writer, str):
            result.unreadable.append(f"{line.origin}:{line.position}")
            continue
        seq, prev = record.get(SEQ_ATTRIBUTE), record.get(PREV_ATTRIBUTE)
        if not isinstance(seq, int) or not isinstance(prev, str):
            result.unchained += 1
            continue
        seen = _Seen(line, line_hash(line.data), prev, record.get("time") if isinstance(record.get("time"), str) else None, record)
        writers.setdefault(writer, _Writer(writer)).add(seq, seen)
        where_is.setdefault(seen.hash, (writer, seq))
    claimed_ends = _claimed_ends(writers, keys)
    for name in sorted(writers):
        report = writers[name].check(keys, claimed_ends.get(name, 0))
        first = writers[name].by_seq.get(1)
        if first is not None and first.prev != GENESIS:
            found = where_is.get(first.prev)
            report.continues = {"source": found[0], "seq": found[1]} if found else {"unknown": first.prev}
        result.writers.append(report)
    return result


def _claimed_ends(writers: Mapping[str, _Writer], keys: Mapping[str, Ed25519PublicKey]) -> dict[str, int]:
    """What signed start checkpoints say their predecessors' last `chainseq` was, by predecessor."""
    ends: dict[str, int] = {}
    for writer in writers.values():
        start = writer.by_seq.get(1)
        if start is None or start.record.get("type") != CHECKPOINT_EVENT_TYPE or not keys or not _signature_holds(start, 1, keys):
            continue
        predecessor = (start.record.get("data") or {}).get("predecessor") or {}
        name, seq = predecessor.get("source"), predecessor.get("seq")
        if isinstance(name, str) and isinstance(seq, int):
            ends[name] = max(ends.get(name, 0), seq)
    return ends
