"""The SparkSession the job runs in."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from spark_audit import class_archive
from spark_audit.local_fs import CLASS_PATH, local_file_system_conf
from spark_audit.run_size import LOCAL_PARTITIONS, RunSize

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

#: The JVM heap the job asks for (spark.driver.memory; spark.executor.memory on a cluster). With the
#: JVM's own overhead and the Python driver the whole job stays under 1.5 GiB (docs/audit-job.md, "Memory").
DEFAULT_MEMORY = "768m"

#: Bounds on the JVM's memory outside its heap, so the process's size follows from the heap alone:
#: two GC threads for two cores, a modest code cache and metaspace, and capped direct buffers.
JVM_OPTIONS = (
    "-XX:+UseParallelGC",
    "-XX:ParallelGCThreads=2",
    "-XX:CICompilerCount=2",
    "-XX:ReservedCodeCacheSize=96m",
    "-XX:MaxMetaspaceSize=256m",
    "-XX:MaxDirectMemorySize=256m",
)
#: the quick compiler alone (spark_audit/run_size.py: short runs)
QUICK_COMPILER_ONLY = "-XX:TieredStopAtLevel=1"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
#: Spark's choice between compiling an expression (Janino) and interpreting it; NO_CODEGEN interprets (short runs of
#: little input: spark_audit/run_size.py INTERPRETED_RUN_BYTES)
EXPRESSION_FACTORY = "spark.sql.codegen.factoryMode"

#: Generated classes a session keeps compiled (spark.sql.codegen.cache.maxEntries; Spark's default is 100). One run
#: of the job generates about 450 sources, so with Spark's 100 a session that runs the job again (a notebook, a
#: long-lived driver, the tests) compiled most of them again: a rerun of a small batch about 380 Janino compiles
#: against about 40 with this, a small incremental rerun about 525 against 60 to 110, some 15% of its time
#: (docs/performance.md). The metaspace did not grow measurably. A run in a fresh JVM neither gains nor loses
#: (four pairs over 1,000 lines: 24.7 against 24.6 CPU-s): few of its sources repeat within the run.
CODEGEN_CACHE_ENTRIES = 2000

#: PySpark's DataFrame debugging (a static setting, on by default): every call of its API captures the Python stack
#: and makes about five more py4j round trips, some of which look a class up in each of Spark's 280 jars before they
#: find it. What it gives is the Python line of a failing call in an analysis error's message; the job builds its
#: queries in a few places, and the error still names the plan and the JVM's stack. Off, a warm run of the burst
#: rewrite tests took 23% less CPU (docs/performance.md).
DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"


@dataclass(frozen=True)
class Resources:
    """Memory and disk a run may use; applied only to a session this process starts."""

    #: JVM heap of the driver (and of the executors on a cluster), e.g. ``768m``, ``2g``
    memory: str = DEFAULT_MEMORY
    #: Spark's scratch directory for shuffle and spill files (spark.local.dir); Spark's default when None
    local_dir: str | None = None
    #: where the JVM's stderr (Spark's log, its stack traces) goes instead of the terminal; the terminal when None
    log_file: str | None = None
    #: little input (spark_audit/run_size.py): the driver JVM compiles with C1 alone
    short_run: bool = False
    #: very little input (spark_audit/run_size.py): Spark interprets expressions instead of compiling them, unless
    #: the run writes the class archive
    interpreted: bool = False
    #: the driver JVM writes a class archive as it exits where there is none (spark_audit/class_archive.py);
    #: only for a caller that then ends the JVM with class_archive.finish (spark_audit/make_class_archive.py)
    create_class_archive: bool = False

    def for_size(self, size: RunSize) -> Resources:
        """These resources with what the run's size decides: the compilers and interpreted expressions (spark_audit/run_size.py)."""
        return replace(self, short_run=size.short, interpreted=size.interpreted)

    def conf(self) -> dict[str, str]:
        options = [*JVM_OPTIONS, *([QUICK_COMPILER_ONLY] if self.short_run else [])]
        conf = {
            "spark.driver.memory": self.memory,
            "spark.executor.memory": self.memory,
            DRIVER_OPTIONS: " ".join(options),
            "spark.executor.extraJavaOptions": " ".join(JVM_OPTIONS),
            # results brought to the driver are a few report rows; more is a bug, not a reason to grow
            "spark.driver.maxResultSize": "256m",
            # smaller input splits and Parquet row groups: less held per task at once
            "spark.sql.files.maxPartitionBytes": str(64 * 1024 * 1024),
            "spark.hadoop.parquet.block.size": str(32 * 1024 * 1024),
        }
        if self.local_dir is not None:
            conf["spark.local.dir"] = self.local_dir
        if self.interpreted and not self.create_class_archive:
            conf[EXPRESSION_FACTORY] = "NO_CODEGEN"
        return conf


def is_loopback_master(master: str) -> bool:
    """True for local[...] and for a cluster manager on this machine's loopback."""
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname
    return host is not None and host in LOOPBACK_HOSTS


@contextmanager
def _stderr_to(path: str | None) -> Iterator[None]:
    """Start the JVM (a child process inheriting stderr) with its stderr in ``path``.

    Spark logs to stderr and the JVM prints there too (its module warnings, uncaught
    errors); in a file, the terminal keeps only what the job itself says.
    """
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def build_session(
    master: str | None = "local[*]",
    *,
    jars: Sequence[str] = (),
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
    resources: Resources | None = None,
) -> SparkSession:
    """Create (or reuse) the job's SparkSession.

    ``master`` None keeps the master spark-submit was given. An existing
    session is reused as it is (tests, notebooks): Spark settings such as
    ``spark.jars`` and ``resources`` only apply to a session this call creates.
    """
    builder = SparkSession.builder.appName("spark_audit")
    if master is not None:
        builder = builder.master(master)
    if master is not None and is_loopback_master(master):
        # Executors on this machine reach the driver over loopback; a hostname that
        # resolves to another interface breaks on laptops without network.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python workers on this machine must be this interpreter: the what-if replay imports
        # authz (and its dependencies) there, which a bare `python3` may not have.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    partitions = shuffle_partitions
    if partitions is None and master is not None and master.startswith("local"):
        # Spark's 200 shuffle partitions cost more than they help on one machine.
        partitions = LOCAL_PARTITIONS
    if partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions))
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Audit times are UTC: dates, buckets and printed times are derived in UTC.
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
        .config(DATAFRAME_DEBUGGING, "false")
    )
    # Under spark-submit (master None) the JVM already runs with spark-submit's memory settings.
    resources = resources or Resources()
    sized = resources.conf() if master is not None else {}
    if sized:
        # glibc gives each of the JVM's many threads its own malloc arena (up to 8 per core), which
        # native buffers (compression, Parquet) fill: a few arenas keep the JVM's size near its heap's.
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    local_fs = local_file_system_conf(master)
    settings = {**sized, **local_fs, **(conf or {})}
    if local_fs and conf and CLASS_PATH in conf:
        # the caller's class path, and the file system's jar after it
        settings[CLASS_PATH] = os.pathsep.join([conf[CLASS_PATH], local_fs[CLASS_PATH]])
    if sized and DRIVER_OPTIONS not in (conf or {}):
        archive = class_archive.java_options(settings.get(CLASS_PATH, ""), create=resources.create_class_archive)
        settings[DRIVER_OPTIONS] = " ".join([settings[DRIVER_OPTIONS], *archive])
    for key, value in settings.items():
        builder = builder.config(key, value)
    # py4j logs every gateway connection at INFO, which drowns the job's own output in an INFO-level process
    logging.getLogger("py4j").setLevel(logging.WARNING)
    with _stderr_to(resources.log_file):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
