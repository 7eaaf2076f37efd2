"""The audit hash chain of one proxy process: seals each record's line as the sinks are about to commit it.

Sealing appends `chainseq` and `chainprev` (proxy/audit/chain_format.py) to the line's bytes, so the chain
never depends on how a record was built, only on the order the writer commits lines in: the pipeline seals
a record on the caller's turn right before it commits it there, or seals the writer's batch right before the
batch goes to the sinks. A commit that did not happen is rewound (`state`, `rewind`), so the chain holds
exactly what the sinks hold.

With a signing key, checkpoints are inserted into that order: the process's first record (`start`, naming the
record it continues), the first record of every new audit file (`rotation`), after `audit.chain.checkpoint.records`
records or `audit.chain.checkpoint.ms` (`records`, `time`) and the last record before a clean shutdown (`close`).
"""

import base64
import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from proxy.audit.chain_format import (
    CHECKPOINT_EVENT_TYPE,
    CHECKPOINT_STAGE,
    GENESIS,
    PREV_ATTRIBUTE,
    REASON_RECORDS,
    REASON_ROTATION,
    REASON_START,
    REASON_TIME,
    SEQ_ATTRIBUTE,
    checkpoint_message,
    key_id,
)
from proxy.audit.chain_settings import ChainSettings
from proxy.audit.cloudevents import SCHEMA_VERSION, AuditEntry, encode, new_id, source, utc_now

log = logging.getLogger(__name__)


def line_hash(line: bytes) -> str:
    """The SHA-256 (hex) of one record's line, without the `\\n` that ends it in a file."""
    return hashlib.sha256(line[:-1] if line.endswith(b"\n") else line).hexdigest()


def chain_suffix(seq: int, prev: str) -> bytes:
    """The attributes appended to a record's JSON object, just before its closing brace."""
    return b',"chainseq":%d,"chainprev":"%s"}\n' % (seq, prev.encode("ascii"))


CHAIN_SUFFIX_MAX_BYTES = len(chain_suffix(2**64 - 1, GENESIS)) - len(b"}\n")
"""What sealing adds to a line at most: the pipeline encodes records this much under `audit.record.max.bytes`."""
_RECORD_END = b"}\n"


@dataclass(frozen=True)
class ChainLink:
    """The record a process's chain continues: the last one its log directory (or spool) held when it started."""

    hash: str
    source: str | None = None
    seq: int | None = None
    """None when that record carries no chain (written by a version before the chain)."""

    @classmethod
    def of_line(cls, line: bytes) -> "ChainLink":
        try:
            record = orjson.loads(line)
            seq, writer = record.get(SEQ_ATTRIBUTE), record.get("source")
        except (orjson.JSONDecodeError, AttributeError):
            seq, writer = None, None  # an unreadable last line: the link is its hash alone
        return cls(line_hash(line), writer if isinstance(writer, str) else None, seq if isinstance(seq, int) else None)


@runtime_checkable
class ChainAnchor(Protocol):
    """A sink that can say which record it committed last in an earlier run (the chain of this run continues it)."""

    def last_line(self) -> bytes | None: ...


@runtime_checkable
class FileStarter(Protocol):
    """A sink that writes into files: a rotation checkpoint goes first into each new one."""

    def opens_new_file(self) -> bool: ...


def predecessor_of(sinks: Sequence[object]) -> ChainLink | None:
    """The last record the first sink that knows it committed before this process started."""
    for sink in sinks:
        if isinstance(sink, ChainAnchor):
            line = sink.last_line()
            if line:
                return ChainLink.of_line(line)
    return None


UNSIGNED = ChainSettings()
"""The chain without checkpoints (no signing key)."""


class AuditChain:
    def __init__(self, node_id: int = 0, *, predecessor: ChainLink | None = None, settings: ChainSettings = UNSIGNED) -> None:
        self.node_id = node_id
        self.predecessor = predecessor
        self.settings = settings
        self.signing_key: Ed25519PrivateKey | None = settings.signing_key
        self._key_id = key_id(self.signing_key.public_key()) if self.signing_key is not None else None
        self.seq = 0
        """The last record sealed."""
        self.head = predecessor.hash if predecessor is not None else GENESIS
        """The hash of the last record sealed (before the first: of the record this process continues)."""
        self._uncovered = 0
        """Records sealed since the last checkpoint."""
        self._uncovered_since = math.inf
        """trio time of the first of them."""

    @property
    def signing(self) -> bool:
        return self.signing_key is not None

    def state(self) -> tuple[int, str, int, float]:
        return self.seq, self.head, self._uncovered, self._uncovered_since

    def rewind(self, state: tuple[int, str, int, float]) -> None:
        """Back to `state`: the records sealed since were not committed by any sink."""
        self.seq, self.head, self._uncovered, self._uncovered_since = state

    # -- sealing ----------------------------------------------------------------------

    def seal(self, line: bytes, now: float) -> bytes:
        """The line with its place in the chain; the chain's head moves to it."""
        self.seq += 1
        if line.endswith(_RECORD_END):
            sealed = line[: -len(_RECORD_END)] + chain_suffix(self.seq, self.head)
        else:  # not what encode() makes; re-encode rather than write a line no reader can parse
            sealed = encode({**orjson.loads(line), SEQ_ATTRIBUTE: self.seq, PREV_ATTRIBUTE: self.head})
        self.head = line_hash(sealed)
        if self._uncovered == 0:
            self._uncovered_since = now
        self._uncovered += 1
        return sealed

    def due(self, now: float, *, new_file: bool = False) -> str | None:
        """The reason a checkpoint is due before the next record, None when none is (or nothing signs)."""
        if self.signing_key is None:
            return None
        if self.seq == 0:
            return REASON_START
        if new_file:
            return REASON_ROTATION
        if self._uncovered >= self.settings.checkpoint_records:
            return REASON_RECORDS
        if self._uncovered and now >= self._uncovered_since + self.settings.checkpoint_seconds:
            return REASON_TIME
        return None

    def deadline(self) -> float:
        """trio time at which a `time` checkpoint is due (math.inf for none)."""
        if self.signing_key is None or not self._uncovered:
            return math.inf
        return self._uncovered_since + self.settings.checkpoint_seconds

    def seal_batch(self, batch: Sequence[AuditEntry], now: float, *, new_file: bool = False, reason: str | None = None) -> list[AuditEntry]:
        """The batch sealed in order, with the checkpoints that are due (or the one of `reason`) among it."""
        sealed: list[AuditEntry] = []
        first = reason or self.due(now, new_file=new_file)
        if first is not None:
            sealed.append(self.checkpoint(first, now))
        for entry in batch:
            entry.line = self.seal(entry.line, now)
            sealed.append(entry)
            if self.due(now) == REASON_RECORDS:
                sealed.append(self.checkpoint(REASON_RECORDS, now))
        return sealed

    def checkpoint(self, reason: str, now: float) -> AuditEntry:
        """A signed checkpoint record, sealed: it signs the chain's head (its `chainprev`) and its own place."""
        assert self.signing_key is not None and self._key_id is not None
        seq, prev, time, writer = self.seq + 1, self.head, utc_now(), source(self.node_id)
        data: dict[str, Any] = {"stage": CHECKPOINT_STAGE, "reason": reason, "records": seq - 1, "predecessor": None}
        if reason == REASON_START and self.predecessor is not None:
            link = self.predecessor
            data["predecessor"] = {"source": link.source, "seq": link.seq, "hash": link.hash}
        signature = self.signing_key.sign(checkpoint_message(writer, seq, prev, time, data))
        data["keyid"] = self._key_id
        data["signature"] = base64.b64encode(signature).decode("ascii")
        record: dict[str, Any] = {
            "specversion": "1.0",
            "id": new_id(),
            "type": CHECKPOINT_EVENT_TYPE,
            "source": writer,
            "time": time,
            "subject": None,
            "datacontenttype": "application/json",
            "schemaversion": SCHEMA_VERSION,
            "data": data,
            SEQ_ATTRIBUTE: seq,
            PREV_ATTRIBUTE: prev,
        }
        line = encode(record)
        self.seq, self.head = seq, line_hash(line)
        self._uncovered, self._uncovered_since = 0, math.inf
        return AuditEntry(line, str(record["id"]), CHECKPOINT_STAGE)

