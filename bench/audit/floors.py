"""The floors the audit job is measured against, each run in its own process by bench/audit/run.py.

Run: python bench/audit/floors.py {session,ingest,parquet} INPUT_DIR [--master local[2]] [--output DIR]

- session: start the job's Spark session and stop it;
- ingest: read every line of INPUT_DIR with the job's fixed schema and drop it (the ``noop`` sink);
- parquet: the same read, written once as Parquet (the staging copy a job could report from).

Same session settings (memory, partitions) as the job, so the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spark_audit.read import parse, read_files
from spark_audit.session import build_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("floor", choices=("session", "ingest", "parquet"))
    parser.add_argument("input")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--output", help="where the parquet floor writes")
    args = parser.parse_args()
    spark = build_session(args.master)
    try:
        if args.floor == "ingest":
            parse(read_files(spark, args.input)).write.format("noop").mode("overwrite").save()
        elif args.floor == "parquet":
            if not args.output:
                parser.error("the parquet floor needs --output")
            parse(read_files(spark, args.input)).write.mode("overwrite").parquet(args.output)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
