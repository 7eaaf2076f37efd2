"""Two reports computed by spark_audit straight from the JSON files: the Spark side of the baseline comparison.

Run: python bench/audit/spark_reports.py INPUT_DIR [--master local[*]]; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pyspark.sql import functions as F

from spark_audit import denial_reports, request_reports, run_size
from spark_audit.read import deduplicate, parse, read_files, records_of
from spark_audit.session import Resources, build_session
from spark_audit.view import flatten


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    # the compilers and local shuffle partitions the job chooses for the same input (spark_audit/run_size.py; the floors
    # choose the compilers the same way): over 1,000 lines C1 alone and one partition per core, 10 CPU-s against 19 with
    # both compilers and 8. A batch run's size is its input's (the second argument, the output, counts only in an
    # incremental run).
    size = run_size.RunSize.of(args.input, args.input, incremental=False)
    spark = build_session(args.master, shuffle_partitions=size.local_shuffle_partitions(args.master), resources=Resources().for_size(size))
    try:
        flat = flatten(deduplicate(records_of(parse(read_files(spark, args.input))))).cache()
        latency = {
            r["method"]: {"requests": r["requests"], "p50": r["totalP50"], "p90": r["totalP90"], "p99": r["totalP99"]}
            for r in request_reports.latency(flat).collect()
        }
        ranking = denial_reports.denial_ranking(flat).filter(F.col("dimension") == "principal")
        denials = {r["key"]: r["denials"] for r in ranking.collect()}
    finally:
        spark.stop()
    print(json.dumps({"latency": latency, "denials_by_principal": denials}))


if __name__ == "__main__":
    main()
