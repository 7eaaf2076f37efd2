"""What devkit's builders share: the one error for a tool the tests need that is missing or could not be made,
and the report a `make` target gives of what a builder made.

The builders (Kafka's jars, Keycloak, the client matrix's Go and Node clients, the authorizer plug-ins and the OPA
server) raise :class:`ToolingMissing`; a test that needs one of them skips on it, or fails under CI.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path


class ToolingMissing(RuntimeError):
    """A tool the tests need (java, javac, mvn, go, node, npm) is not installed, or fetching or building what it
    makes failed: the message says which, and how to get it."""


def report_made(label: str, *makers: Callable[[], Path | Iterable[Path]]) -> int:
    """A `make` target's view of builders: each path they made printed, or one line on stderr naming what is missing
    (prefixed with ``label``) and 1."""
    try:
        for make in makers:
            made = make()
            for path in [made] if isinstance(made, Path) else made:
                print(path)
    except ToolingMissing as exc:
        print(f"{label}: {exc}", file=sys.stderr)
        return 1
    return 0
