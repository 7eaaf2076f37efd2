"""A class-data-sharing archive of the driver JVM's classes: made by one run, mapped by the next.

A Spark driver loads some 20,000 classes from about 250 jars before and during its first
queries, verifying and linking each one: on two cores that is most of the 11 s a session takes
to start and a good part of every query's first run. Java 17 can write the classes a JVM loaded
into an archive when it exits (``-XX:ArchiveClassesAtExit``) and map such an archive at the next
start (``-XX:SharedArchiveFile``), which skips that work (docs/performance.md: a 20,000-line job
in 0.74 x its time with the archive and the quick compiler).

``python -m spark_audit.make_class_archive`` makes the archive from a run of the job (its JVM
writes it as it exits) and publishes it under a name that depends on the Java runtime, Spark's
jars and the driver's class path; every later session this package starts maps it. The JVM checks
an archive against its own class path, version and flags and skips one that does not fit,
silently (``-Xlog:cds*=off``: its warning would land in the job's standard output). A truncated
archive would crash the JVM instead, so an archive is published only once a JVM with the writer's
class path has started with it under ``-Xshare:on`` (which refuses any archive it cannot use).

``SPARK_AUDIT_CLASS_ARCHIVE=none`` turns the archive off; a directory puts archives there
instead of the project's cache (``~/.cache/kafka-envelope-proxy/class-archive``).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from spark_audit.maven import cache_root, file_identity

ENV = "SPARK_AUDIT_CLASS_ARCHIVE"
OFF = "none"
#: the JVM's messages about archives: a mismatched or missing archive is simply not used
QUIET = "-Xlog:cds*=off"
WRITE_FLAG = "-XX:ArchiveClassesAtExit="
READ_FLAG = "-XX:SharedArchiveFile="
PREFIX = "spark-driver-"
SUFFIX = ".jsa"
#: archives of other runtimes or class paths kept beside the newest (each is 150-200 MB)
KEEP = 3
#: a JVM writing its archive as it exits takes 10-25 s on two cores
EXIT_TIMEOUT = 120.0
CHECK_TIMEOUT = 60.0
#: a half-written archive older than this belongs to a run that died
STALE_SECONDS = 3600.0


def directory() -> Path | None:
    chosen = os.environ.get(ENV, "").strip()
    if chosen == OFF:
        return None
    return Path(chosen).absolute() if chosen else cache_root() / "class-archive"


def java_binary() -> str | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    found = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def spark_jars() -> Path:
    home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    return Path(home) / "jars"


def archive_path(class_path: str) -> Path | None:
    """Where the archive for this runtime, Spark's jars and this extra class path lives (None: off).

    Every file the key names counts with its size and modification time: a jar replaced in place
    (an upgraded pyspark, a new jar under an old name) makes another archive.
    """
    where = directory()
    java = java_binary()
    if where is None or java is None:
        return None
    entries = [entry for entry in f"{class_path}{os.pathsep}{os.environ.get('SPARK_DIST_CLASSPATH', '')}".split(os.pathsep) if entry]
    try:
        jars = sorted(str(jar) for jar in spark_jars().glob("*.jar"))
    except OSError:
        jars = []
    key = hashlib.sha256()
    for part in [file_identity(java), *map(file_identity, entries), *map(file_identity, jars)]:
        key.update(part.encode() + b"\0")
    return where / f"{PREFIX}{key.hexdigest()[:20]}{SUFFIX}"


def java_options(class_path: str, *, create: bool) -> tuple[str, ...]:
    """Driver JVM options: map the archive where there is one, else (``create``) write one at exit.

    Never raises: without a usable archive directory the JVM simply starts without an archive.
    """
    try:
        path = archive_path(class_path)
        if path is None or any(space.isspace() for space in str(path)):
            return ()  # Spark splits the driver's options at spaces
        if path.is_file():
            return (QUIET, f"{READ_FLAG}{path}")
        if not create:
            return ()
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(path.parent)
    except OSError:
        return ()
    return (QUIET, f"{WRITE_FLAG}{path}.{uuid.uuid4().hex}.partial")


def writing(spark: SparkSession) -> Path | None:
    """The archive this session's JVM writes as it exits, if any; ask while the JVM runs."""
    options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", "") or ""
    for option in options.split():
        if option.startswith(WRITE_FLAG):
            return Path(option[len(WRITE_FLAG) :])
    return None


def finish(spark: SparkSession, partial: Path, *, succeeded: bool) -> Path | None:
    """End the JVM of a stopped session that writes ``partial``; publish the archive of a run that succeeded.

    Returns the published archive, or None when the run failed (its JVM is killed before it writes)
    or the archive is unusable (the next maker tries again). The process then has no JVM.
    """
    process = getattr(spark.sparkContext._gateway, "proc", None)
    if process is None:
        return None
    try:
        if succeeded:
            class_path = _class_path_of(process.pid)
            # The gateway exits when its standard input closes, and writes the archive on its way out.
            if process.stdin is not None:
                process.stdin.close()
            exited = process.wait(timeout=EXIT_TIMEOUT)
            if exited == 0 and class_path is not None and partial.is_file() and _starts_with(partial, class_path):
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


def _class_path_of(pid: int) -> str | None:
    """The class path a running JVM was started with (spark-submit's launcher builds it)."""
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        arguments = cmdline.read().decode(errors="replace").split("\0")
    for flag, value in itertools.pairwise(arguments):
        if flag in ("-cp", "-classpath", "--class-path"):
            return value
    return None


def _starts_with(archive: Path, class_path: str) -> bool:
    """A JVM with the writer's class path starts with the archive under -Xshare:on, which refuses one it cannot use
    (a truncated archive crashes it)."""
    java = java_binary()
    if java is None:
        return False
    try:
        # in a scratch folder: a JVM that crashes leaves its hs_err file where it runs
        with tempfile.TemporaryDirectory() as scratch:
            done = subprocess.run(
                [java, "-Xshare:on", QUIET, f"{READ_FLAG}{archive}", "-cp", class_path, "-version"],
                cwd=scratch,
                capture_output=True,
                timeout=CHECK_TIMEOUT,
                check=False,
            )
    except (subprocess.TimeoutExpired, OSError):
        return False
    return done.returncode == 0


def _remove_stale(where: Path) -> None:
    now = time.time()
    for partial in where.glob(f"{PREFIX}*{SUFFIX}.*.partial"):
        with contextlib.suppress(OSError):
            if now - partial.stat().st_mtime > STALE_SECONDS:
                partial.unlink()


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _prune(where: Path) -> None:
    archives = sorted(where.glob(f"{PREFIX}*{SUFFIX}"), key=_modified, reverse=True)
    for old in archives[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()
