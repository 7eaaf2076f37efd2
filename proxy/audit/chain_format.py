"""What the audit hash chain writes into records, shared by the writer (proxy/audit/chain.py) and `audit verify`.

Every record a proxy process writes carries two CloudEvents extension attributes after its other fields:
`chainseq`, its position in the process's sequence (1, 2, ...), and `chainprev`, the SHA-256 (hex) of the line
before it. The writer is the process, named by the record's `source`. A line's hash is taken over its exact
UTF-8 bytes without the `\\n` that ends it, so a file's line and the Kafka message holding the same record
(which has no `\\n`) hash alike. A checkpoint (type `CHECKPOINT_EVENT_TYPE`) signs where the chain stood:
see `checkpoint_message` for exactly what is signed (docs/audit-schema.md, "Proving the audit trail").
"""

import hashlib
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

CHECKPOINT_EVENT_TYPE = "io.github.kafka-envelope-proxy.checkpoint"
CHECKPOINT_STAGE = "checkpoint"
SEQ_ATTRIBUTE = "chainseq"
PREV_ATTRIBUTE = "chainprev"
GENESIS = "0" * 64
"""`chainprev` of a writer's first record when nothing was written before it in its log directory or spool."""

KEY_ID_HEX_DIGITS = 16
"""A key id: the first 64 bits of the SHA-256 of the raw public key, enough to pick among a handful of keys."""
_SIGNED_PREFIX = b"envelope-proxy audit checkpoint v1\n"
"""Keeps a checkpoint signature from meaning anything else the same key might sign."""

# Reasons a checkpoint is written.
REASON_START = "start"
"""The process's first record: names the record it continues (the previous process's last)."""
REASON_ROTATION = "rotation"
"""The first record of a new audit file: signs everything the files before it hold."""
REASON_RECORDS = "records"
REASON_TIME = "time"
REASON_CLOSE = "close"
"""The last record a process writes when it shuts down cleanly."""


def key_id(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:KEY_ID_HEX_DIGITS]


def checkpoint_message(source: str, seq: int, prev: str, time: str, data: dict[str, Any]) -> bytes:
    """The bytes a checkpoint's signature covers: its writer, its place in the chain (`chainseq`, and `chainprev`,
    the head of the chain it closes), its time, and what it claims (reason, record count, the record it continues)."""
    predecessor = data.get("predecessor") or {}
    fields = (
        source,
        str(seq),
        prev,
        time,
        str(data.get("reason")),
        str(data.get("records")),
        str(predecessor.get("source") or ""),
        str(predecessor.get("seq") or ""),
        str(predecessor.get("hash") or ""),
    )
    return _SIGNED_PREFIX + "\n".join(fields).encode("utf-8")
