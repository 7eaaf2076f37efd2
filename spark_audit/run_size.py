"""How much a run will parse and read, for choosing the driver JVM's compilers and a local run's shuffle partitions
before it starts.

A JVM compiles hot code twice, quickly (C1) and then well (C2). On two cores the second compiler
competes with the job for a core. C2 pays back in the JSON parse of a large input (a 1M-record
batch job, about 1 GB of JSON, takes 1.2 x its time with C1 alone), not in the reports, which read
small tables: a batch job over 300,000 lines (318 MB) takes 0.92 x its time with C1 alone, and an
incremental rerun that parses one more day (350 MB) over a store of 1M records 0.94 x
(docs/performance.md). So a run that parses little JSON uses C1 alone.

Spark also compiles its expressions: a run generates some 400 Java sources and compiles each with Janino, which in a
fresh JVM costs more than the rows they then process when there are a few thousand of them. A run that parses and reads
at most INTERPRETED_RUN_BYTES of JSON interprets them instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spark_audit.layout import Layout

#: at most this much JSON to parse makes a short run (the two compilers break even near 500 MB)
SHORT_RUN_BYTES = 384 * 1024 * 1024
#: ... as long as an incremental run's reports read a store no larger than this much JSON held
#: (about 1.5M records): measured up to 1M records, beyond that both compilers as before
SHORT_RUN_STORE_BYTES = 1536 * 1024 * 1024
#: at most this much JSON parsed and stored together makes a run whose expressions Spark interprets rather than compiles
#: (spark.sql.codegen.factoryMode NO_CODEGEN): cold batch runs, local[2], side by side, 1,000 lines 0.84 to 0.89 x
#: the CPU, 5,000 lines (5.6 MB) 0.86, 10,000 lines 0.82 to 0.94, 20,000 lines 1.02 to 1.07, 100,000 lines 1.09 to
#: 1.13; a small incremental rerun 0.81 in two pairs (docs/performance.md)
INTERPRETED_RUN_BYTES = 8 * 1024 * 1024
#: the store's Parquet holds about a tenth of the JSON lines it came from
PARQUET_TO_JSON = 10
#: A local run over at most this much JSON (parsed and stored together) shuffles into one partition per core of its
#: master (:func:`local_threads`, at least SMALL_RUN_PARTITIONS), not LOCAL_PARTITIONS: every shuffle partition is a task
#: in each of a run's some 75 stages, and up to this size the tasks' fixed cost outweighs what more of them share out
#: (local[2], side by side: 20 records 54 s with 2 partitions against 63 to 68 s with 8; 300,000 lines 45.7 s against
#: 50.2; 1M lines 74.6 s against 80.4; a rerun of one more day over 3 and over 9 days 37.2 and 39.0 s against 40.2 and
#: 42.1; the 500,000-line memory wall on 512 MiB passes either way). Larger inputs keep 8: at 5M lines 2 partitions
#: were no faster (228 s against 223) and took more memory (1,411 MiB at peak against 1,364).
SMALL_RUN_BYTES = 1536 * 1024 * 1024
SMALL_RUN_PARTITIONS = 2
LOCAL_PARTITIONS = 8


def _files_bytes(directory: str, pattern: str) -> int:
    return sum(path.stat().st_size for path in Path(directory).glob(pattern) if path.is_file())


def stored_json_bytes(output: str) -> int:
    """The JSON the store holds, estimated from its Parquet (0 when there is no store)."""
    records = Layout(output).records
    return PARQUET_TO_JSON * _files_bytes(records, "**/*.parquet") if os.path.isdir(records) else 0


def _parsed_and_stored(input_dir: str | None, output: str, *, incremental: bool) -> tuple[int, int] | None:
    """(JSON the run parses, JSON the store holds as the reports read it), or None when it cannot be told."""
    if input_dir is None or "://" in input_dir or "://" in output:
        return None
    try:
        total = _files_bytes(input_dir, "*.jsonl")
        if not incremental:
            return total, 0
        stored = stored_json_bytes(output)
    except OSError:
        return None
    return max(0, total - stored), stored


def json_bytes(input_dir: str | None, output: str, *, incremental: bool) -> int | None:
    """The JSON a run parses, or None when it cannot be told (Kafka, a remote file system).

    A batch run parses all of its input; an incremental run what the store does not hold yet,
    estimated as the input less the store's JSON.
    """
    sizes = _parsed_and_stored(input_dir, output, incremental=incremental)
    return None if sizes is None else sizes[0]


@dataclass(frozen=True)
class RunSize:
    """(JSON the run parses, JSON the store holds), or None when it cannot be told (Kafka, a remote file system):
    the input listed once for both of the choices made before the session starts."""

    sizes: tuple[int, int] | None

    @classmethod
    def of(cls, input_dir: str | None, output: str, *, incremental: bool) -> RunSize:
        return cls(_parsed_and_stored(input_dir, output, incremental=incremental))

    @property
    def short(self) -> bool:
        """Little to parse and a store the reports read quickly: the driver JVM compiles with C1 alone."""
        return self.sizes is not None and self.sizes[0] <= SHORT_RUN_BYTES and self.sizes[1] <= SHORT_RUN_STORE_BYTES

    @property
    def interpreted(self) -> bool:
        """So little to parse and read that compiling Spark's expressions costs more than interpreting them."""
        return self.sizes is not None and sum(self.sizes) <= INTERPRETED_RUN_BYTES

    def local_shuffle_partitions(self, master: str | None) -> int | None:
        """spark.sql.shuffle.partitions for a run on this machine: one per core of ``master`` (at least
        SMALL_RUN_PARTITIONS) for an input of at most SMALL_RUN_BYTES, else LOCAL_PARTITIONS (also when the size cannot
        be told). None for a cluster's master, or none given (spark-submit's): Spark's own setting stands."""
        if master is None or not master.startswith("local"):
            return None
        small = self.sizes is not None and sum(self.sizes) <= SMALL_RUN_BYTES
        return max(SMALL_RUN_PARTITIONS, local_threads(master)) if small else LOCAL_PARTITIONS


def local_threads(master: str) -> int:
    """The threads a local master runs tasks on: ``local`` 1, ``local[N]`` and ``local[N,F]`` N, ``local[*]`` every
    core (Spark's reading of the master URL); 1 for anything else."""
    if not master.startswith("local["):
        return 1
    threads = master[len("local[") :].rstrip("]").split(",")[0].strip()
    if threads == "*":
        return os.cpu_count() or 1
    return int(threads) if threads.isdigit() and int(threads) > 0 else 1
