"""One line for a run that cannot finish: what ran out, and the setting to raise.

A Spark failure reaches Python as a Py4J error whose text is a page of JVM stack
trace; when an executor thread runs out of heap in local mode, Spark ends the JVM
and Python only sees a closed gateway. Either way the cause is in the exception
text or in the JVM's log file (the job sends Spark's log there), so both are
searched for the signatures of exhausted memory or disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: What :func:`explain` recognises, most specific first: (pattern, what ran out, what to raise).
_CAUSES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"No space left on device|Disk quota exceeded"),
        "disk space ran out (Spark's shuffle and spill files, or the output directory)",
        "free space, or point --local-dir at a larger disk (spark.local.dir) and --output elsewhere",
    ),
    (
        re.compile(r"System memory \d+ must be at least \d+|Executor memory \d+ must be at least \d+"),
        "the JVM heap is too small for Spark to start",
        "raise --driver-memory (spark.driver.memory; spark.executor.memory on a cluster) to at least 512m",
    ),
    (
        re.compile(r"OutOfMemoryError: (Java heap space|GC overhead limit exceeded)|SparkOutOfMemoryError|Unable to acquire \d+ bytes of memory"),
        "the JVM heap ran out of memory",
        "raise --driver-memory (spark.driver.memory; spark.executor.memory on a cluster)",
    ),
    (
        re.compile(r"OutOfMemoryError: (Direct buffer memory|Metaspace|unable to create native thread)"),
        "the JVM ran out of memory outside its heap",
        "raise --driver-memory, or lower --shuffle-partitions' parallelism with --master local[1]",
    ),
    (
        re.compile(r"OutOfMemoryError"),
        "the JVM ran out of memory",
        "raise --driver-memory (spark.driver.memory; spark.executor.memory on a cluster)",
    ),
)


@dataclass(frozen=True)
class Exhausted:
    what: str
    setting: str

    def line(self, current: str | None) -> str:
        now = f" (now {current})" if current else ""
        return f"{self.what}{now}: {self.setting}"


def explain(*texts: str | None) -> Exhausted | None:
    """The exhausted resource named in any of ``texts`` (exception text, log), or None."""
    for pattern, what, setting in _CAUSES:
        if any(text and pattern.search(text) for text in texts):
            return Exhausted(what, setting)
    return None


def log_tail(path: str | None, limit: int = 2_000_000) -> str | None:
    """The last ``limit`` characters of the JVM's log file, if there is one."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def first_line(text: str) -> str:
    """The first non-blank line of an error message, without Py4J's preamble."""
    for line in text.splitlines():
        # Py4J puts the Java exception on the line after its preamble, behind ": "
        stripped = line.strip().removeprefix(": ").strip()
        if stripped and not stripped.startswith("An error occurred while calling"):
            return stripped[:300]
    return text.strip()[:300]


def log_path(output: str) -> str:
    """Where the job's JVM writes Spark's log (inside the output directory)."""
    return str(Path(output) / "spark.log")
