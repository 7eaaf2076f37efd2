"""One audit record on its way to the sinks: the record, its JSON line and what the sinks need beside it."""

from dataclasses import dataclass, field
from typing import Any

import trio

from proxy.audit.cloudevents import RecordLimits, encode_bounded

DEFAULT_LIMITS = RecordLimits()


@dataclass(eq=False)
class AuditEntry:
    record: dict[str, Any]
    line: bytes
    """The record as one JSON line, `\\n` terminated: what files and the spool hold. The writer adds the chain
    attributes (proxy/audit/chain.py) to these bytes just before the sinks commit them; `record` never has them."""
    key: str
    """The Kafka message key: the request id, so intent and outcome land in one partition, in order."""
    stage: str
    done: trio.Event = field(default_factory=trio.Event)
    error: BaseException | None = None

    @classmethod
    def of(cls, record: dict[str, Any], limits: RecordLimits = DEFAULT_LIMITS, *, within: bool | None = None) -> "AuditEntry":
        record, line = encode_bounded(record, limits, within=within)
        data = record.get("data") or {}
        return cls(record, line, str(data.get("requestId") or record.get("id")), str(data.get("stage")))
