"""Every kind of audit sink, by the name `audit.sinks` gives it.

A new sink is one module under proxy/audit/sinks/ with its sink class and a `SinkKind`
(proxy/audit/sink_kinds.py: its `audit.<name>.*` keys and how to open it), plus one line here.
"""

from collections.abc import Mapping
from typing import Any

from proxy.audit.sink_kinds import SinkKind
from proxy.audit.sinks import file, kafka

SINKS: Mapping[str, SinkKind[Any]] = {
    file.KIND.name: file.KIND,
    kafka.KIND.name: kafka.KIND,
}
