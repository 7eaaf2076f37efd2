"""Every report of the audit job computed again in plain Python, from docs/audit-job.md and docs/audit-schema.md.

Written from the documents, not from ``spark_audit``: the differential test runs the job and
compares each of its outputs with what this module computes from the same audit directory.
Times are microseconds since the epoch (UTC) and dates ISO strings, so no time zone is involved.
Only the standard library and kio's error table (the project's one table of Kafka's codes).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

CONNECTION_TYPE = "io.github.kafka-envelope-proxy.connection"
_TOPIC, _GROUP, _CLUSTER = ErrorCode.topic_authorization_failed, ErrorCode.group_authorization_failed, ErrorCode.cluster_authorization_failed
_TRANSACTIONAL_ID, _TOKEN = ErrorCode.transactional_id_authorization_failed, ErrorCode.delegation_token_authorization_failed
AUTH_CODES = frozenset(map(int, (_TOPIC, _GROUP, _CLUSTER, _TRANSACTIONAL_ID, ErrorCode.sasl_authentication_failed, _TOKEN)))
#: docs/audit-job.md: the resource types an authorization code can name (the others: any type).
CODE_TYPES: dict[int, tuple[str, ...]] = {_TOPIC: ("TOPIC",), _GROUP: ("GROUP",), _TRANSACTIONAL_ID: ("TRANSACTIONAL_ID",), _TOKEN: ("DELEGATION_TOKEN", "USER")}
CLOSING = frozenset({"outcome", "refused", "local", "read"})
SENSITIVE = {
    "kafka.CreateAcls": "acl",
    "kafka.DeleteAcls": "acl",
    "kafka.AlterConfigs": "config",
    "kafka.IncrementalAlterConfigs": "config",
    "kafka.AlterUserScramCredentials": "scram-credentials",
    "kafka.AlterClientQuotas": "quota",
}
UNAUTHENTICATED = "(unauthenticated)"
NONE = "(none)"
SECOND = 1_000_000

# --------------------------------------------------------------------------- reading lines

#: Fields docs/audit-schema.md types as integers (a JSON number without a fraction) or numbers.
_INTEGERS = {
    ("schemaversion",),
    ("data", "apiKey"),
    ("data", "apiVersion"),
    ("data", "requestMetadata", "clientPort"),
    ("data", "requestMetadata", "correlationId"),
    ("data", "result", "envelopeErrorCode"),
    ("data", "result", "errorCode"),
    ("data", "upstream", "nodeId"),
    ("data", "connection", "requests"),
}
_NUMBERS = {("data", "timings", k) for k in ("queueMs", "upstreamMs", "totalMs")} | {("data", "connection", "durationMs")}
_OBJECTS = {
    ("data",),
    ("data", "authenticationInfo"),
    ("data", "requestMetadata"),
    ("data", "authorizationInfo"),
    ("data", "result"),
    ("data", "timings"),
    ("data", "upstream"),
    ("data", "connection"),
}


def _get(record: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(record, dict):
            return None
        record = record.get(key)
    return record


def _instant(text: Any) -> int | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp()) * SECOND + moment.microsecond


def _well_typed(record: dict[str, Any]) -> bool:
    for path in _OBJECTS:
        if _get(record, path) is not None and not isinstance(_get(record, path), dict):
            return False
    for path in _INTEGERS:
        value = _get(record, path)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return False
    for path in _NUMBERS:
        value = _get(record, path)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return False
    for error in _get(record, ("data", "result", "errors")) or []:
        code = error.get("errorCode") if isinstance(error, dict) else None
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            return False
    return not (record.get("time") is not None and _instant(record["time"]) is None)


def quarantined(line: str) -> bool:
    """Whether docs/audit-job.md's "What happens to a line" sends a (non-blank) line to the quarantine."""
    try:
        record = json.loads(line)
    except ValueError:
        return True
    if not isinstance(record, dict) or not _well_typed(record):
        return True
    identifier = record.get("id")
    if identifier is None or str(identifier).strip() == "":
        return True
    if record.get("time") is None or _get(record, ("data", "stage")) is None:
        return True
    return record.get("schemaversion") not in (1, 2, 3)


@dataclass
class Input:
    """An audit directory read as the docs say: its ``*.jsonl`` files, blank lines skipped."""

    files: int = 0
    lines: int = 0
    good: list[dict[str, Any]] = field(default_factory=list)
    #: (file name, line) of each quarantined line
    quarantine: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def read(cls, directory: Path) -> Input:
        found = cls()
        for path in sorted(directory.glob("*.jsonl")):
            found.files += 1
            with path.open(encoding="utf-8", newline=None) as handle:
                for raw in handle:
                    line = raw.rstrip("\n")
                    if line.strip(" ") == "":
                        continue
                    found.lines += 1
                    if quarantined(line):
                        found.quarantine.append((path.name, line))
                    else:
                        found.good.append(json.loads(line))
        return found


# --------------------------------------------------------------------------- one record, as the reports see it


@dataclass(frozen=True)
class Rec:
    id: str
    us: int
    date: str
    connection: bool
    stage: str
    request_id: str
    method: str | None
    subject: str | None
    principal: str | None
    listener: str | None
    address: str | None
    forwarding: str | None
    resources: tuple[dict[str, Any], ...]
    decision: str | None
    reason: str | None
    status: str | None
    error_code: int | None
    errors: tuple[dict[str, Any], ...]
    total_ms: float | None
    upstream_ms: float | None

    @classmethod
    def of(cls, record: dict[str, Any]) -> Rec:
        data = record["data"]
        us = _instant(record["time"])
        assert us is not None
        auth = data.get("authenticationInfo") or {}
        meta = data.get("requestMetadata") or {}
        result = data.get("result") or {}
        authz = data.get("authorizationInfo") or {}
        timings = data.get("timings") or {}
        return cls(
            id=record["id"],
            us=us,
            date=_date(us),
            connection=record.get("type") == CONNECTION_TYPE or data.get("methodName") == "kafka.Connection",
            stage=data["stage"],
            request_id=data.get("requestId") or record["id"],
            method=data.get("methodName"),
            subject=record.get("subject"),
            principal=auth.get("principal"),
            listener=auth.get("listener"),
            address=meta.get("clientAddress"),
            forwarding=data.get("forwardingPrincipal"),
            resources=tuple(data.get("resources") or ()),
            decision=authz.get("decision"),
            reason=authz.get("reason"),
            status=result.get("status"),
            error_code=result.get("errorCode"),
            errors=tuple(result.get("errors") or ()),
            total_ms=None if timings.get("totalMs") is None else float(timings["totalMs"]),
            upstream_ms=None if timings.get("upstreamMs") is None else float(timings["upstreamMs"]),
        )

    @property
    def who(self) -> str:
        return self.principal or UNAUTHENTICATED

    @property
    def denial(self) -> bool:
        return (
            self.status == "REFUSED"
            or self.decision == "DENIED"
            or self.error_code in AUTH_CODES
            or any(e.get("errorCode") in AUTH_CODES for e in self.errors)
        )

    @property
    def auth_failure(self) -> bool:
        return (
            (self.connection and self.stage == "authentication-failed")
            or self.reason in ("authentication-failed", "ssl-principal-mapping")
            or self.error_code == ErrorCode.sasl_authentication_failed
        )

    def resource_denied(self, resource: dict[str, Any]) -> bool:
        """docs/audit-job.md "Reports": when a resource of a request is denied."""
        whole = (
            self.status == "REFUSED"
            or self.error_code in AUTH_CODES
            or (self.method in ("kafka.CreateAcls", "kafka.DeleteAcls") and any(e.get("errorCode") in AUTH_CODES for e in self.errors))
        )
        kind = (resource.get("type") or "").upper()
        named = any(
            e.get("errorCode") in AUTH_CODES
            and (
                (e.get("resource") == resource.get("name") and (not kind or kind in CODE_TYPES.get(e.get("errorCode"), (kind,))))
                or (kind == "CLUSTER" and e.get("errorCode") == ErrorCode.cluster_authorization_failed)
            )
            for e in self.errors
        )
        return whole or named


def _date(us: int) -> str:
    return datetime.fromtimestamp(us // SECOND, UTC).date().isoformat()


def label(resource: dict[str, Any]) -> str:
    return f"{str(resource['type']).lower()}:{resource['name']}"


def described(resources: Iterable[dict[str, Any]]) -> str:
    """docs/audit-job.md: each resource, its operation, and its pattern type in brackets where it is not LITERAL."""

    def pattern(r: dict[str, Any]) -> str | None:
        kind = r.get("patternType")
        return None if kind is None or str(kind).upper() == "LITERAL" else f"({kind})"

    return ", ".join(" ".join(part for part in (label(r), r.get("operation"), pattern(r)) if part is not None) for r in resources)


def error_name(code: int | None) -> str | None:
    return None if code is None else ErrorCode(code).name.upper()


# --------------------------------------------------------------------------- the reports


@dataclass(frozen=True)
class Settings:
    bucket_seconds: int = 3600
    detection_window_seconds: int = 86400
    burst_window_seconds: int = 60
    burst_threshold: int = 10
    outcome_grace_seconds: int = 60


class Oracle:
    def __init__(self, given: Input, settings: Settings | None = None) -> None:
        self.input = given
        self.settings = settings or Settings()
        unique: dict[str, dict[str, Any]] = {}
        for record in given.good:
            unique.setdefault(record["id"], record)
        self.records = [Rec.of(r) for r in unique.values()]
        self.first_us = min(r.us for r in self.records)
        self.last_us = max(r.us for r in self.records)
        self.baseline_end_us = self.last_us - self.settings.detection_window_seconds * SECOND
        # a request: its closing record (the earliest), else its intent (NO_OUTCOME)
        by_request: dict[str, list[Rec]] = defaultdict(list)
        for r in self.records:
            if not r.connection and (r.stage in CLOSING or r.stage == "intent"):
                by_request[r.request_id].append(r)
        self.requests: list[tuple[Rec, str | None]] = []
        for rows in by_request.values():
            closing = sorted((r for r in rows if r.stage in CLOSING), key=lambda r: (r.us, r.id))
            if closing:
                self.requests.append((closing[0], closing[0].status))
            else:
                self.requests.append((min(rows, key=lambda r: (r.us, r.id)), "NO_OUTCOME"))
        finished = [r for r, status in self.requests if status != "NO_OUTCOME"]
        self.closing_events = finished + [r for r in self.records if r.connection]

    # requests ---------------------------------------------------------------

    def requests_report(self) -> Counter[tuple[Any, ...]]:
        return Counter((r.who, r.method, status) for r, status in self.requests if r.stage != "local")

    def who_did_what(self) -> Counter[tuple[Any, ...]]:
        """(bucket_us, date, principal, method, resource, operation, requests, denied) rows."""
        size = self.settings.bucket_seconds * SECOND
        requests: Counter[tuple[Any, ...]] = Counter()
        denied: Counter[tuple[Any, ...]] = Counter()
        for r, _ in self.requests:
            if r.stage == "local":
                continue
            bucket = r.us // size * size
            # a request counts once per resource and operation, however many of its entries name them
            rows = list(dict.fromkeys((label(x), x.get("operation"), r.resource_denied(x)) for x in r.resources)) or [(r.subject or NONE, None, r.denial)]
            for resource, operation, is_denied in rows:
                key = (bucket, _date(bucket), r.who, r.method, resource, operation)
                requests[key] += 1
                denied[key] += int(is_denied)
        return Counter({(*key, n, denied[key]): 1 for key, n in requests.items()})

    # denials ----------------------------------------------------------------

    def denials(self) -> Counter[tuple[Any, ...]]:
        rows: Counter[tuple[Any, ...]] = Counter()
        for r in self.closing_events:
            if not r.denial:
                continue
            first_auth = next((e for e in r.errors if e.get("errorCode") in AUTH_CODES), None)
            if r.error_code in AUTH_CODES:
                code, name = r.error_code, error_name(r.error_code)
            elif first_auth is not None:
                code, name = first_auth["errorCode"], first_auth.get("errorName") or error_name(first_auth["errorCode"])
            else:
                code, name = r.error_code, error_name(r.error_code)
            rows[(r.us, r.principal, r.address, r.method, r.subject, code, name, r.status)] += 1
        return rows

    def denial_ranking(self) -> set[tuple[Any, ...]]:
        seen: dict[tuple[str, str], list[int]] = defaultdict(list)
        for r in self.closing_events:
            if not r.denial:
                continue
            seen[("principal", r.who)].append(r.us)
            seen[("address", r.address or NONE)].append(r.us)
            labels = list(dict.fromkeys(label(x) for x in r.resources if r.resource_denied(x)))
            for key in labels or [r.subject or ("(connection)" if r.connection else NONE)]:
                seen[("resource", key)].append(r.us)
        rows = set()
        for dimension in {d for d, _ in seen}:
            keys = sorted(((k, t) for (d, k), t in seen.items() if d == dimension), key=lambda kt: (-len(kt[1]), kt[0]))
            for rank, (key, times) in enumerate(keys, start=1):
                rows.add((dimension, key, len(times), min(times), max(times), rank))
        return rows

    def bursts(self) -> set[tuple[Any, ...]]:
        window = self.settings.burst_window_seconds * SECOND
        series: dict[tuple[str, str], list[Rec]] = defaultdict(list)
        for r in self.closing_events:
            if (r.denial or r.auth_failure) and r.address is not None:
                series[(r.address, "authentication-failure" if r.auth_failure else "denial")].append(r)
        rows = set()
        for (address, kind), events in series.items():
            events.sort(key=lambda r: r.us)
            episodes: list[list[Rec]] = [[events[0]]]
            for event in events[1:]:
                if event.us - episodes[-1][-1].us <= window:  # no gap exceeds the window
                    episodes[-1].append(event)
                else:
                    episodes.append([event])
            for episode in episodes:
                times = [e.us for e in episode]
                low, peak = 0, 0
                for high, t in enumerate(times):
                    while times[low] < t - window:
                        low += 1
                    peak = max(peak, high - low + 1)
                if peak >= self.settings.burst_threshold:
                    principals = tuple(sorted({e.principal for e in episode if e.principal is not None}))
                    rows.add((address, kind, times[0], times[-1], _date(times[0]), len(times), peak, principals))
        return rows

    # changes and identities -------------------------------------------------

    def sensitive_changes(self) -> Counter[tuple[Any, ...]]:
        return Counter(
            (
                r.us,
                r.date,
                SENSITIVE[r.method],
                r.method,
                r.who,
                r.address,
                r.listener,
                r.forwarding,
                described(r.resources),
                status,
                r.error_code,
                r.denial,
                r.request_id,
            )
            for r, status in self.requests
            if r.method in SENSITIVE
        )

    def impersonation(self) -> set[tuple[Any, ...]]:
        pairs: dict[tuple[str, str], list[Rec]] = defaultdict(list)
        for r, _ in self.requests:
            if r.forwarding is not None:
                pairs[(r.forwarding, r.who)].append(r)
        return {
            (
                forwarder,
                who,
                tuple(sorted({r.listener for r in rs if r.listener is not None})),
                len(rs),
                sum(r.denial for r in rs),
                min(r.us for r in rs),
                max(r.us for r in rs),
            )
            for (forwarder, who), rs in pairs.items()
        }

    def _history(self, r: Rec) -> bool:
        return r.us < self.baseline_end_us

    def unusual_listeners(self) -> set[tuple[Any, ...]]:
        known: dict[str, set[str]] = defaultdict(set)
        recent: dict[tuple[str, str], list[int]] = defaultdict(list)
        for r in self.records:
            if r.principal is None or r.listener is None:
                continue
            if self._history(r):
                known[r.principal].add(r.listener)
            else:
                recent[(r.principal, r.listener)].append(r.us)
        return {
            (principal, listener, min(times), max(times), len(times), tuple(sorted(known[principal])))
            for (principal, listener), times in recent.items()
            if principal in known and listener not in known[principal]
        }

    def first_seen_pairs(self) -> set[tuple[Any, ...]]:
        known: set[tuple[str, str]] = set()
        recent: dict[tuple[str, str], list[Rec]] = defaultdict(list)
        for r in self.records:
            if r.principal is None or r.address is None:
                continue
            if self._history(r):
                known.add((r.principal, r.address))
            else:
                recent[(r.principal, r.address)].append(r)
        rows = set()
        for pair, rs in recent.items():
            if pair in known:
                continue
            first = min(r.us for r in rs)
            listeners = tuple(sorted({r.listener for r in rs if r.listener is not None}))
            rows.add((*pair, first, max(r.us for r in rs), len(rs), listeners, _date(first)))
        return rows

    # health -----------------------------------------------------------------

    def intents_without_outcome(self) -> set[tuple[Any, ...]]:
        before = self.last_us - self.settings.outcome_grace_seconds * SECOND
        return {
            (r.request_id, r.us, r.date, r.who, r.address, r.listener, r.method, r.subject, described(r.resources))
            for r, status in self.requests
            if status == "NO_OUTCOME" and r.us <= before
        }

    def latency(self) -> dict[str, tuple[Any, ...]]:
        """method -> (requests, totalP50, P90, P99, totalMax, upstreamP50, P90, P99), exact percentiles."""
        outcomes: dict[str, Rec] = {}
        for r in self.records:
            if not r.connection and r.stage == "outcome" and r.total_ms is not None:
                outcomes.setdefault(r.request_id, r)
        by_method: dict[str, list[Rec]] = defaultdict(list)
        for r in outcomes.values():
            by_method[str(r.method)].append(r)

        def percentiles(values: list[float]) -> list[float | None]:
            ordered = sorted(values)
            if not ordered:
                return [None, None, None]
            return [ordered[max(0, math.ceil(level * len(ordered)) - 1)] for level in (0.5, 0.9, 0.99)]

        rows = {}
        for method, rs in by_method.items():
            total = [r.total_ms for r in rs if r.total_ms is not None]
            upstream = [r.upstream_ms for r in rs if r.upstream_ms is not None]
            rows[method] = (len(rs), *percentiles(total), max(total), *percentiles(upstream))
        return rows

    # summary ----------------------------------------------------------------

    def summary_counts(self) -> dict[str, Any]:
        given = self.input
        auth_failures = sum(1 for r in self.closing_events if r.auth_failure)
        baseline_empty = not any(self._history(r) for r in self.records)
        return {
            "records": len(self.records),
            "malformed": len(given.quarantine),
            "duplicates_dropped": len(given.good) - len(self.records),
            "requests": sum(self.requests_report().values()),
            "denials": sum(self.denials().values()),
            "authentication_failures": auth_failures,
            "sensitive_changes": sum(self.sensitive_changes().values()),
            "bursts": len(self.bursts()),
            "first_seen_pairs": len(self.first_seen_pairs()),
            "unusual_listeners": len(self.unusual_listeners()),
            "impersonation_pairs": len(self.impersonation()),
            "intents_without_outcome": len(self.intents_without_outcome()),
            "time_range": {"first": _format(self.first_us), "last": _format(self.last_us)},
            "baseline": {"start": None, "end": _format(self.baseline_end_us), "empty": baseline_empty},
            "run": {
                "mode": "batch",
                "batches": 1,
                "lines": given.lines,
                "origins": given.files,
                "records": len(given.good),
                "malformed": len(given.quarantine),
                "duplicates": len(given.good) - len(self.records),
                "stored": len(self.records),
            },
        }


def _format(us: int) -> str:
    moment = datetime.fromtimestamp(us // SECOND, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{us % SECOND // 1000:03d}Z"
