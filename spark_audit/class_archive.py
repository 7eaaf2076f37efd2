"""A class-data-sharing archive of the driver JVM's classes: made by one run, mapped by the next.

A Spark driver loads some 20,000 classes from about 250 jars before and during its first
queries, verifying and linking each one: on two cores that is most of the 11 s a session takes
to start and a good part of every query's first run. Java 17 can write the classes a JVM loaded
into an archive when it exits (``-XX:ArchiveClassesAtExit``) and map such an archive at the next
start (``-XX:SharedArchiveFile``), which skips that work (docs/performance.md: a 20,000-line job
in 0.62 x its time with the archive and the short-run compiler).

``python -m spark_audit.make_class_archive`` makes the archive from a run of the job (its JVM
writes it as it exits) and publishes it under a name that depends on the Java runtime, Spark's
jars and the driver's class path; every later session this package starts maps it. The JVM checks
an archive against its own class path, version and flags and skips one that does not fit,
silently (``-Xlog:cds*=off``: its warning would land in the job's standard output). A truncated
archive would crash the JVM instead, so an archive is published only once a JVM has started with it.

``SPARK_AUDIT_CLASS_ARCHIVE=none`` turns the archive off; a directory puts archives there
instead of the project's cache (``~/.cache/kafka-envelope-proxy/class-archive``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from spark_audit.maven import cache_root

ENV = "SPARK_AUDIT_CLASS_ARCHIVE"
OFF = "none"
#: the JVM's messages about archives: a mismatched or missing archive is simply not used
QUIET = "-Xlog:cds*=off"
WRITE_FLAG = "-XX:ArchiveClassesAtExit="
READ_FLAG = "-XX:SharedArchiveFile="
SUFFIX = ".jsa"
#: archives of other runtimes or class paths kept beside the newest (each is 150-200 MB)
KEEP = 3
#: a JVM writing its archive as it exits takes about 10 s on two cores
EXIT_TIMEOUT = 120.0
CHECK_TIMEOUT = 60.0
#: a half-written archive older than this belongs to a run that died
STALE_SECONDS = 3600.0


def directory() -> Path | None:
    chosen = os.environ.get(ENV, "").strip()
    if chosen == OFF:
        return None
    return Path(chosen) if chosen else cache_root() / "class-archive"


def java_binary() -> str | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    found = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def spark_jars() -> Path:
    home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    return Path(home) / "jars"


def _identity(path: Path | str) -> str:
    stat = os.stat(path)
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def archive_path(class_path: str) -> Path | None:
    """Where the archive for this runtime, Spark's jars and this extra class path lives (None: off)."""
    where = directory()
    java = java_binary()
    if where is None or java is None:
        return None
    key = hashlib.sha256()
    jars = spark_jars()
    parts = [_identity(java), class_path, os.environ.get("SPARK_DIST_CLASSPATH", "")]
    with contextlib.suppress(OSError):
        parts += sorted(_identity(jar) for jar in jars.glob("*.jar"))
    for part in parts:
        key.update(part.encode() + b"\0")
    return where / f"spark-driver-{key.hexdigest()[:20]}{SUFFIX}"


def java_options(class_path: str, *, create: bool) -> tuple[str, ...]:
    """Driver JVM options: map the archive where there is one, else (``create``) write one at exit."""
    path = archive_path(class_path)
    if path is None:
        return ()
    if path.is_file():
        return (QUIET, f"{READ_FLAG}{path}")
    if not create:
        return ()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(path.parent)
    except OSError:
        return ()  # an unwritable cache: runs start without an archive
    return (QUIET, f"{WRITE_FLAG}{path}.{os.getpid()}.partial")


def _written_by(spark: SparkSession) -> Path | None:
    options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", "") or ""
    for option in options.split():
        if option.startswith(WRITE_FLAG):
            return Path(option[len(WRITE_FLAG) :])
    return None


def finish(spark: SparkSession, *, succeeded: bool) -> Path | None:
    """End the JVM of a stopped session that writes an archive; publish the archive of a run that succeeded.

    Returns the published archive, or None when the session writes none, the run failed (its JVM is
    killed before it writes) or the archive is unusable (the next run tries again). The process then
    has no JVM.
    """
    partial = _written_by(spark)
    process = getattr(spark.sparkContext._gateway, "proc", None)
    if partial is None or process is None:
        return None
    try:
        if succeeded:
            # The gateway exits when its standard input closes, and writes the archive on its way out.
            if process.stdin is not None:
                process.stdin.close()
            if process.wait(timeout=EXIT_TIMEOUT) == 0 and partial.is_file() and _starts_with(partial):
                final = partial.with_name(partial.name.split(SUFFIX)[0] + SUFFIX)
                os.replace(partial, final)
                _prune(final.parent)
                return final
    except (subprocess.TimeoutExpired, OSError):
        pass
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait(timeout=EXIT_TIMEOUT)
    with contextlib.suppress(OSError):
        partial.unlink()
    return None


def _starts_with(archive: Path) -> bool:
    """A JVM maps the archive and exits normally (a truncated one crashes it)."""
    java = java_binary()
    if java is None:
        return False
    try:
        # in a scratch folder: a JVM that crashes leaves its hs_err file where it runs
        with tempfile.TemporaryDirectory() as scratch:
            done = subprocess.run(
                [java, QUIET, f"{READ_FLAG}{archive}", "-version"], cwd=scratch, capture_output=True, timeout=CHECK_TIMEOUT, check=False
            )
    except (subprocess.TimeoutExpired, OSError):
        return False
    return done.returncode == 0


def _remove_stale(where: Path) -> None:
    now = time.time()
    for partial in where.glob(f"*{SUFFIX}.*.partial"):
        with contextlib.suppress(OSError):
            if now - partial.stat().st_mtime > STALE_SECONDS:
                partial.unlink()


def _prune(where: Path) -> None:
    archives = sorted(where.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()
