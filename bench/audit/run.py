"""On-demand benchmark of the audit job: synthetic records, the Spark job, and a single-process baseline.

Run: .venv/bin/python bench/audit/run.py [--records N | --large] [--master local[*]] [--workdir DIR] [--keep]
(or `make bench-audit`). Prints one JSON object on stdout; progress goes to stderr.

It generates N audit lines (default 1,000,000; --large: 10,000,000), then runs,
each in its own process with its peak memory sampled over the whole process
tree (Python, the JVM, Python workers):

- spark_job: the whole job (python -m spark_audit: store, quarantine, every report, HTML);
- spark_reports: two reports (latency percentiles per API, denials per principal) straight
  from the JSON files with spark_audit's reader and report code;
- duckdb_reports: the same two reports in one process with DuckDB (pip install -e '.[bench]').

and checks that the two computations agree (request counts per API and
denials per principal exactly; percentiles are reported side by side, as
Spark's are approximate). Not part of the test suite: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
import measure  # noqa: E402

TIMEOUT = 6 * 3600.0


def _mb(value: int) -> float:
    return round(value / 1024 / 1024, 1)


def _step(name: str, command: list[str], records: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    print(f"bench: {name} ...", file=sys.stderr, flush=True)
    result = measure.run(command, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
    summary: dict[str, Any] = {
        "seconds": round(result.seconds, 2),
        "records_per_second": round(records / result.seconds) if result.seconds else None,
        "peak_rss_mb": _mb(result.peak_rss_bytes),
    }
    if result.returncode != 0:
        summary["error"] = f"exit {result.returncode}: {result.stderr.strip()[-2000:]}"
        return summary, None
    try:
        output = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else None
    except json.JSONDecodeError:
        output = None
    return summary, output


def _compare(spark: dict[str, Any] | None, duck: dict[str, Any] | None) -> dict[str, Any] | None:
    if spark is None or duck is None:
        return None
    spark_requests = {m: v["requests"] for m, v in spark["latency"].items()}
    duck_requests = {m: v["requests"] for m, v in duck["latency"].items()}
    worst = 0.0
    for method, values in spark["latency"].items():
        other = duck["latency"].get(method)
        if other is None:
            continue
        for level in ("p50", "p90", "p99"):
            if other[level]:
                worst = max(worst, abs(values[level] - other[level]) / abs(other[level]))
    return {
        "latency_requests_per_api": spark_requests == duck_requests,
        "denials_by_principal": spark["denials_by_principal"] == duck["denials_by_principal"],
        "percentile_max_relative_difference": round(worst, 6),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--records", type=int, default=1_000_000, help="audit lines to generate (default 1,000,000)")
    size.add_argument("--large", action="store_true", help="10,000,000 lines (about 10 GB of JSON)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--workdir", type=Path, help="where input and outputs go (default: a temporary folder, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    records = 10_000_000 if args.large else args.records
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-audit-"))
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "audit"
    try:
        if source.exists():
            shutil.rmtree(source)
        print(f"bench: generating {records:,} lines in {source} ...", file=sys.stderr, flush=True)
        started = time.monotonic()
        counts = generate.write(source, records, seed=args.seed)
        generated = time.monotonic() - started
        size_bytes = sum(p.stat().st_size for p in source.glob("*.jsonl"))
        python = sys.executable
        job, _ = _step(
            "spark_job",
            [python, "-m", "spark_audit", "--input", str(source), "--output", str(workdir / "out"), "--master", args.master, "--quiet"],
            records,
        )
        spark_reports, spark_out = _step(
            "spark_reports", [python, str(HERE / "spark_reports.py"), str(source), "--master", args.master], records
        )
        result: dict[str, Any] = {
            "records": records,
            "input": {
                "files": len(list(source.glob("*.jsonl"))),
                "bytes": size_bytes,
                "good": counts.records,
                "malformed": counts.malformed,
                "duplicates": counts.duplicates,
                "generate_seconds": round(generated, 2),
            },
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "master": args.master},
            "spark_job": job,
            "spark_reports": spark_reports,
        }
        summary_path = workdir / "out" / "summary.json"
        if summary_path.exists():
            summary = json.loads(summary_path.read_text())
            result["spark_job"]["summary"] = {
                k: summary.get(k) for k in ("records", "malformed", "duplicates_dropped", "requests", "denials")
            }
        if importlib.util.find_spec("duckdb") is None:
            result["duckdb_reports"] = {"skipped": "duckdb is not installed: pip install -e '.[bench]'"}
            result["results_match"] = None
        else:
            duck, duck_out = _step("duckdb_reports", [python, str(HERE / "duckdb_reports.py"), str(source)], records)
            result["duckdb_reports"] = duck
            result["results_match"] = _compare(spark_out, duck_out)
        print(json.dumps(result, indent=2))
        return 0 if all("error" not in result[k] for k in ("spark_job", "spark_reports")) else 1
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
