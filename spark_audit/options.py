"""What one run of the job is asked to do (built by the CLI or by a caller such as the demo)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from spark_audit.acl_options import AclHygieneOptions
from spark_audit.read import KafkaSource
from spark_audit.whatif import Candidate

_UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
    "w": 604800,
    "week": 604800,
}
_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*$")


def parse_duration(text: str) -> int:
    """Seconds in ``90s``, ``15 minutes``, ``1 hour``, ``7d``...; ValueError otherwise."""
    match = _DURATION.match(text.lower())
    unit = match.group(2) if match else ""
    if unit not in _UNITS and unit.endswith("s") and unit != "ms":
        unit = unit[:-1]
    if not match or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a duration like '30 seconds', '15 minutes', '1 hour', '7 days' (or 30s, 15m, 1h, 7d)")
    seconds = int(match.group(1)) * _UNITS[unit]
    if seconds <= 0:
        raise ValueError(f"{text!r}: a duration must be positive")
    return seconds


def parse_instant(text: str) -> int:
    """Microseconds since the epoch of an ISO 8601 time (UTC unless it names an offset); ValueError otherwise."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time like 2026-11-21T10:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000)


def format_instant(micros: int | None) -> str | None:
    if micros is None:
        return None
    moment = datetime.fromtimestamp(micros / 1_000_000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class ReportOptions:
    #: who-did-what and chart bucket, in seconds
    bucket_seconds: int = 3600
    #: the baseline is [baseline_start, baseline_end); default end: newest record minus detection window
    baseline_start_us: int | None = None
    baseline_end_us: int | None = None
    detection_window_seconds: int = 86400
    burst_window_seconds: int = 60
    burst_threshold: int = 10
    #: intents younger than this (against the newest record) may still get their outcome
    outcome_grace_seconds: int = 60
    #: count ApiVersions/Metadata/DescribeCluster answered by the proxy as requests
    include_local: bool = False
    #: rows per table in the HTML and text reports (the Parquet outputs hold everything)
    top: int = 20

    @property
    def bucket(self) -> str:
        """The bucket as Spark's ``window`` reads a duration."""
        return f"{self.bucket_seconds} seconds"


@dataclass(frozen=True)
class JobOptions:
    input: str | None = None
    kafka: KafkaSource | None = None
    incremental: bool = False
    #: default: ``<output>/_checkpoint``
    checkpoint: str | None = None
    max_files_per_trigger: int | None = None
    reports: ReportOptions = field(default_factory=ReportOptions)
    whatif: Candidate | None = None
    #: unused grants and least-privilege ACLs (spark_audit/acl_hygiene.py)
    acls: AclHygieneOptions | None = None
    html: bool = True
    #: print the text report to stdout
    print_report: bool = True
    #: Ed25519 public keys (PEM files) the audit chain's checkpoints are signed with (spark_audit/chain_integrity.py)
    chain_public_keys: tuple[str, ...] = ()
