"""How much a run will read, for choosing the driver JVM's compilers before it starts.

A JVM compiles hot code twice, quickly (C1) and then well (C2). On two cores the second compiler
competes with the job for a core: a job over 20,000 lines spends 0.85 x its time with C1 alone,
a job over 1M records 1.19 x (docs/performance.md). So runs over little input use C1 alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from spark_audit.layout import Layout

#: at most this much JSON to read makes a short run (the two compilers break even near 300 MB)
SHORT_RUN_BYTES = 128 * 1024 * 1024
#: the store's Parquet holds about a tenth of the JSON lines it came from
PARQUET_TO_JSON = 10


def _files_bytes(directory: str, pattern: str) -> int:
    return sum(path.stat().st_size for path in Path(directory).glob(pattern) if path.is_file())


def json_bytes(input_dir: str | None, output: str, *, incremental: bool) -> int | None:
    """The JSON a run reads, or its equivalent in stored records; None when it cannot be told (Kafka, a remote file system)."""
    if input_dir is None or "://" in input_dir or "://" in output:
        return None
    try:
        total = _files_bytes(input_dir, "*.jsonl")
        if incremental and os.path.isdir(Layout(output).records):
            # the reports read the whole store, whose input files may be gone by now
            total = max(total, PARQUET_TO_JSON * _files_bytes(Layout(output).records, "**/*.parquet"))
    except OSError:
        return None
    return total


def is_short(input_dir: str | None, output: str, *, incremental: bool) -> bool:
    size = json_bytes(input_dir, output, incremental=incremental)
    return size is not None and size <= SHORT_RUN_BYTES
