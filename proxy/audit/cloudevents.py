"""One audit record as it is written: its CloudEvents 1.0 envelope, id and time, bounds and JSON line.

Ids and timestamps must be cheap: a forwarded request makes three ids and two timestamps.
`uuid.uuid4()` reads 16 bytes from the kernel for every id and `strftime` formats the whole
date for every record. Here an id is a random UUIDv4 prefix drawn once per process plus a
counter in the last group, still UUID-shaped and unique per source (74 random bits tell
processes apart, the counter tells records apart), and the timestamp's second is formatted
once per second.

`source` names the process: `envelope-proxy/<node.id>/<pid>-<8 hex digits drawn at start>`. The processes that share
a port (`socket.reuse.port`) share `node.id` and count connection ids each from 1, so `source` is what tells their
records apart; the random part keeps it unique where pids are not (pid 1 in every container, a pid used again after
a restart).

What a client chooses must not decide how big the audit grows. Every string a client
controls (client id, software name and version, the principal it tried, resource names,
error messages) is capped; long resource and error lists keep their first entries and
count the rest (a request's parameters, `data.request`, likewise: each string and each list, at any depth); and the
encoded record never exceeds `audit.record.max.bytes`. What was
cut is written down in `data.truncated`, so a reader knows the record is partial.
"""

import itertools
import json
import os
import secrets
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TypeVar

import orjson
import trio

REQUEST_EVENT_TYPE = "io.github.kafka-envelope-proxy.request"
CONNECTION_EVENT_TYPE = "io.github.kafka-envelope-proxy.connection"
SCHEMA_VERSION = 5
SCHEMA_RESOURCE = "record.schema.json"

_COUNTER_BITS = 48  # the UUID's last group: 12 hex digits
_PREFIX = str(uuid.uuid4())[:24]  # "xxxxxxxx-xxxx-4xxx-yxxx-": version and variant kept
_counter = itertools.count(secrets.randbits(_COUNTER_BITS))
_COUNTER_MASK = (1 << _COUNTER_BITS) - 1

INSTANCE = f"{os.getpid()}-{secrets.token_hex(4)}"
"""This process, in every record's `source` after the node id."""

_second = -1
_second_text = ""
_MILLISECONDS = tuple(f"{ms:03d}Z" for ms in range(1001))  # 1000: as the format wrote a float product that rounds up
"""`utc_now`'s last part for each millisecond, formatted once."""


def new_id() -> str:
    """A UUID-shaped id, unique within this process and, with overwhelming odds, across processes."""
    return f"{_PREFIX}{next(_counter) & _COUNTER_MASK:012x}"


def utc_now() -> str:
    """Now in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ` (the audit schema's `time`)."""
    global _second, _second_text
    now = time.time()
    second = int(now)
    if second != _second:
        _second_text = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))
        _second = second
    return _second_text + _MILLISECONDS[int((now - second) * 1000)]


def source(node_id: int) -> str:
    """The records' `source`: this process of the proxy `node_id`."""
    return f"envelope-proxy/{node_id}/{INSTANCE}"


def make_record(node_id: int, subject: str | None, data: dict[str, Any], *, event_type: str = REQUEST_EVENT_TYPE) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": new_id(),
        "type": event_type,
        "source": source(node_id),
        "time": utc_now(),
        "subject": subject,
        "datacontenttype": "application/json",
        "schemaversion": SCHEMA_VERSION,
        "data": data,
    }


def load_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every record the proxy writes conforms to; shipped with the package."""
    schema: dict[str, Any] = json.loads(resources.files("proxy.audit").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8"))
    return schema


T = TypeVar("T")

TRUNCATION_MARK = "...[truncated]"
_MIN_STRING_CHARS = 64

# (section of data, key) of the single strings a client can choose.
_STRING_FIELDS = (
    ("requestMetadata", "clientId"),
    ("requestMetadata", "clientSoftwareName"),
    ("requestMetadata", "clientSoftwareVersion"),
    ("authenticationInfo", "principal"),
    ("authorizationInfo", "reason"),
    ("authorizationInfo", "detail"),
)


@dataclass(frozen=True, slots=True)
class RecordLimits:
    """`audit.record.max.string.chars`, `audit.record.max.resources`, `audit.record.max.bytes`."""

    max_string_chars: int = 1024
    max_resources: int = 1000
    max_record_bytes: int = 1_048_576


def first_entries(data: dict[str, Any], items: Sequence[T], limit: int, where: str) -> Sequence[T]:
    """The first `limit` of `items` for the list `where` of `data`; the rest is counted in `data["truncated"]`.

    Callers use it before they turn 100,000 resources into rows that would be cut anyway."""
    if len(items) <= limit:
        return items
    count_omitted(data, where, len(items) - limit)
    return items[:limit]


def count_omitted(data: dict[str, Any], where: str, count: int) -> None:
    """Note in `data["truncated"]` that `count` entries of the list `where` were left out."""
    truncated = data.setdefault("truncated", {"fields": [], "omitted": {}})
    truncated["omitted"][where] = truncated["omitted"].get(where, 0) + count


def encode(record: dict[str, Any]) -> bytes:
    """One JSON line: compact, UTF-8 as is (no \\u escapes), keys in insertion order."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


class _Cutter:
    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.fields: list[str] = []

    def text(self, value: Any, where: str) -> Any:
        if isinstance(value, str) and len(value) > self.max_chars:
            if where not in self.fields:
                self.fields.append(where)
            return value[: self.max_chars] + TRUNCATION_MARK
        return value

    def tree(self, value: Any, keep: int, where: str, omitted: dict[str, int]) -> Any:
        """A request's parameters (`data.request`): every string capped, every list to its first `keep` entries."""
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, list):
            if len(value) > keep:
                omitted[where] = omitted.get(where, 0) + len(value) - keep
            return [self.tree(item, keep, where, omitted) for item in value[:keep]]
        if isinstance(value, dict):
            return {key: self.tree(item, keep, f"{where}.{key}", omitted) for key, item in value.items()}
        return value

    def rows(self, rows: list[Any], keep: int, where: str, text_keys: tuple[str, ...]) -> tuple[list[Any], int]:
        """The first `keep` rows (dicts) with their strings capped, and how many were left out."""
        kept = [{k: self.text(v, f"{where}.{k}") if k in text_keys else v for k, v in row.items()} for row in rows[:keep]]
        return kept, max(0, len(rows) - keep)


def _bounded_copy(record: dict[str, Any], max_chars: int, keep: int) -> dict[str, Any]:
    cut = _Cutter(max_chars)
    bounded = dict(record)
    bounded["subject"] = cut.text(record.get("subject"), "subject")
    data = dict(record.get("data") or {})
    for section, key in _STRING_FIELDS:
        part = data.get(section)
        if isinstance(part, dict) and key in part:
            data[section] = {**part, key: cut.text(part[key], f"{section}.{key}")}
    omitted: dict[str, int] = {}
    if isinstance(data.get("resources"), list):
        data["resources"], omitted["resources"] = cut.rows(data["resources"], keep, "resources", ("name",))
    authorization = data.get("authorizationInfo")
    if isinstance(authorization, dict) and isinstance(authorization.get("denied"), list):
        denied, omitted["authorizationInfo.denied"] = cut.rows(authorization["denied"], keep, "authorizationInfo.denied", ("name",))
        data["authorizationInfo"] = {**authorization, "denied": denied}
    result = data.get("result")
    if isinstance(result, dict) and isinstance(result.get("errors"), list):
        errors, omitted["result.errors"] = cut.rows(result["errors"], keep, "result.errors", ("resource", "message"))
        data["result"] = {**result, "errors": errors}
    if isinstance(data.get("request"), dict):
        data["request"] = cut.tree(data["request"], keep, "request", omitted)
    earlier = data.get("truncated") or {"fields": [], "omitted": {}}
    for where, count in earlier["omitted"].items():
        omitted[where] = omitted.get(where, 0) + count
    omitted = {where: count for where, count in omitted.items() if count}
    fields = list(dict.fromkeys([*earlier["fields"], *cut.fields]))
    if fields or omitted:
        data["truncated"] = {"fields": fields, "omitted": omitted}
    bounded["data"] = data
    return bounded


def _rows_within(rows: Any, keep: int, max_chars: int, text_keys: tuple[str, ...]) -> bool:
    if not isinstance(rows, list):
        return True
    if len(rows) > keep:
        return False
    return all(not isinstance(row.get(key), str) or len(row[key]) <= max_chars for row in rows for key in text_keys)


def _tree_within(value: Any, keep: int, max_chars: int) -> bool:
    if isinstance(value, str):
        return len(value) <= max_chars
    if isinstance(value, list):
        return len(value) <= keep and all(_tree_within(item, keep, max_chars) for item in value)
    if isinstance(value, dict):
        return all(_tree_within(item, keep, max_chars) for item in value.values())
    return True


def _within_limits(record: dict[str, Any], max_chars: int, keep: int) -> bool:
    """True when `_bounded_copy` would cut nothing, checked without copying (the usual record is far within its limits)."""
    subject = record.get("subject")
    if isinstance(subject, str) and len(subject) > max_chars:
        return False
    data = record.get("data")
    if not isinstance(data, dict):
        return True
    if "truncated" in data:
        return False
    for section, key in _STRING_FIELDS:
        part = data.get(section)
        if isinstance(part, dict) and isinstance(part.get(key), str) and len(part[key]) > max_chars:
            return False
    authorization, result = data.get("authorizationInfo"), data.get("result")
    return (
        _rows_within(data.get("resources"), keep, max_chars, ("name",))
        and (not isinstance(authorization, dict) or _rows_within(authorization.get("denied"), keep, max_chars, ("name",)))
        and (not isinstance(result, dict) or _rows_within(result.get("errors"), keep, max_chars, ("resource", "message")))
        and _tree_within(data.get("request"), keep, max_chars)
    )


def within_limits(record: dict[str, Any], limits: RecordLimits) -> bool:
    """True when no string of `record` is over `max_string_chars` and no list over `max_resources`."""
    return _within_limits(record, limits.max_string_chars, limits.max_resources)


def rows_within(rows: list[dict[str, Any]], limits: RecordLimits, text_keys: tuple[str, ...]) -> bool:
    """True when `rows` (a record's list of dicts) is within the limits, its strings under `text_keys` included."""
    return _rows_within(rows, limits.max_resources, limits.max_string_chars, text_keys)


def encode_bounded(record: dict[str, Any], limits: RecordLimits, *, within: bool | None = None) -> tuple[dict[str, Any], bytes]:
    """The record as written (capped where needed) and its JSON line, at most `max_record_bytes` long.

    `within`: the caller's word, from `within_limits` on the parts it built, that no string or list of the
    record is over its limit; the request records check what a request's intent and outcome share once."""
    keep, max_chars = limits.max_resources, limits.max_string_chars
    if within if within is not None else _within_limits(record, max_chars, keep):
        line = encode(record)
        if len(line) <= limits.max_record_bytes:
            return record, line
    bounded = _bounded_copy(record, max_chars, keep)
    line = encode(bounded)
    # Halve the lists, then the strings, until the line fits: a bounded number of rounds.
    while len(line) > limits.max_record_bytes and (keep > 0 or max_chars > _MIN_STRING_CHARS):
        if keep > 0:
            keep //= 2
        else:
            max_chars = max(_MIN_STRING_CHARS, max_chars // 2)
        bounded = _bounded_copy(record, max_chars, keep)
        line = encode(bounded)
    return bounded, line


# How much a forwarded request's intent keeps (audit.level), as a Kubernetes audit policy's levels: `metadata` is
# who, what API and which resources; `request` adds what the request asks to change (`data.request`).
METADATA = "metadata"
REQUEST = "request"
LEVELS = (METADATA, REQUEST)
DEFAULT_LEVEL = REQUEST


@dataclass(frozen=True)
class AuditLevels:
    """`audit.level` and its overrides, the most specific first: `listener.name.<l>.audit.level.api.<ApiName>`,
    `audit.level.api.<ApiName>`, `listener.name.<l>.audit.level`, `audit.level` (proxy/audit/settings.py parses them
    and prints them for check-config)."""

    default: str = DEFAULT_LEVEL
    listeners: dict[str, str] = field(default_factory=dict)
    """By listener name (upper case)."""
    apis: dict[str, str] = field(default_factory=dict)
    """By API name (CreateAcls)."""
    listener_apis: dict[tuple[str, str], str] = field(default_factory=dict)
    """By (listener, API)."""
    _decided: dict[tuple[str, str], bool] = field(default_factory=dict, compare=False, repr=False)

    def level(self, listener: str, api: str) -> str:
        name = listener.upper()
        return self.listener_apis.get((name, api)) or self.apis.get(api) or self.listeners.get(name) or self.default

    def keeps_request(self, listener: str, api: str) -> bool:
        """Whether an intent on `listener` of `api` carries the request's parameters (decided once per pair)."""
        decided = self._decided.get((listener, api))
        if decided is None:
            decided = self._decided[(listener, api)] = self.level(listener, api) == REQUEST
        return decided


DEFAULT_LIMITS = RecordLimits()


@dataclass(eq=False, slots=True)
class AuditEntry:
    line: bytes
    """The record as one JSON line, `\n` terminated: what files and the spool hold. The writer adds the chain
    attributes (proxy/audit/chain.py) to these bytes just before the sinks commit them."""
    key: str
    """The Kafka message key: the request id, so intent and outcome land in one partition, in order."""
    stage: str
    error: BaseException | None = None
    _done: trio.Event | None = field(default=None, repr=False)

    @property
    def done(self) -> trio.Event:
        """Set once the writer has committed the entry or given up on it. Made when first asked for: an entry committed
        on the caller's turn (the usual request record) never waits for the writer, so it never needs one."""
        done = self._done
        if done is None:
            done = self._done = trio.Event()
        return done

    @classmethod
    def of(cls, record: dict[str, Any], limits: RecordLimits = DEFAULT_LIMITS, *, within: bool | None = None) -> "AuditEntry":
        record, line = encode_bounded(record, limits, within=within)
        data = record.get("data") or {}
        return cls(line, str(data.get("requestId") or record.get("id")), str(data.get("stage")))
