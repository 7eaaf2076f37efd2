"""The kinds of audit sink as `audit.sinks` names them: how each is configured and opened.

A kind (proxy/audit/sinks/registry.py lists them) parses its `audit.<name>.*` keys, says what check-config
prints of them and opens its sink with the `SinkContext` every sink shares. What an open sink must do once
running is the `AuditSink` contract of proxy/audit/pipeline.py, which never needs to know how it was made.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from proxy.audit.pipeline import AuditSink
from proxy.ops.metrics import ProxyMetrics
from proxy.properties import Properties


@dataclass(frozen=True)
class SinkContext:
    """What every sink is opened with, beside its own settings."""

    log_dir: Path
    """`audit.log.dir`"""
    node_id: int
    durability: str
    """`audit.durability`: what a commit means (none, flush, fsync)."""
    metrics: ProxyMetrics | None = None


S = TypeVar("S")


class SinkKind(Protocol[S]):
    """One kind of sink, as `audit.sinks` names it: its `audit.<name>.*` keys, and how to open one.

    The kinds are listed in proxy/audit/sinks/registry.py; each lives in its own module under proxy/audit/sinks/."""

    name: str

    def parse(self, props: Properties, log_dir: Path, *, enabled: bool) -> S | None:
        """The sink's settings; None when it is not among `audit.sinks` (a ConfigError when its keys are set anyway)."""
        ...

    def effective(self, settings: S | None) -> dict[str, Any]:
        """What `check-config` prints of it, secrets hidden: keys of the `audit` object."""
        ...

    def open(self, settings: S, context: SinkContext) -> AuditSink:
        """The sink; files a crash left behind are recovered here."""
        ...
