"""One floor the audit job is measured against, in a process of its own run by bench/audit/run.py.

Run: python bench/audit/floors.py INPUT_DIR --output DIR --floor {session,ingest,parquet} [--master local[2]]

One Spark session (the job's settings: memory, partitions, so the ratios compare like with
like), then, with ``--floor``:

- session: nothing more (the session's start alone);
- ingest: every line of INPUT_DIR read with the job's fixed schema and dropped (the ``noop`` sink);
- parquet: the same read, written once as Parquet (the one copy a job could report from).

Each floor runs in a fresh JVM, as the job does: run in one JVM after the plain ingest, the
JSON -> Parquet floor found the parser compiled already and under-stated its cost (issue 55).
Prints one JSON line: the seconds from this process's start until the session was ready, and
the seconds of the floor's work, with the CPU seconds of each.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import measure  # noqa: E402

from spark_audit import run_size  # noqa: E402
from spark_audit.read import parse, read_files  # noqa: E402
from spark_audit.session import Resources, build_session  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("--output", required=True, help="where the parquet floor writes")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--floor", choices=("session", "ingest", "parquet"), required=True)
    args = parser.parse_args()
    # the compilers (and interpreted expressions) the job chooses for the same input (spark_audit/run_size.py), so that the two compare like with like
    size = run_size.RunSize.of(args.input, args.output, incremental=False)
    spark = build_session(args.master, resources=Resources().for_size(size))
    seconds = {"session": time.monotonic() - STARTED}
    cpu = {"session": _cpu()}
    try:
        started, cpu_started = time.monotonic(), _cpu()
        if args.floor == "ingest":
            parse(read_files(spark, args.input)).write.format("noop").mode("overwrite").save()
        elif args.floor == "parquet":
            parse(read_files(spark, args.input)).write.mode("overwrite").parquet(args.output)
        if args.floor != "session":  # the session floor's figure is its start, measured above
            seconds[args.floor], cpu[args.floor] = time.monotonic() - started, _cpu() - cpu_started
    finally:
        spark.stop()
    print(json.dumps({**{name: round(value, 2) for name, value in seconds.items()}, "cpu": {name: round(value, 2) for name, value in cpu.items()}}))


def _cpu() -> float:
    """CPU seconds so far of this process and its children (the JVM)."""
    return sum(measure.tree_cpu(os.getpid()).values())


if __name__ == "__main__":
    main()
