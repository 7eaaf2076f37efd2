"""Hadoop's local file system without a child process for every file and directory the job writes.

Without Hadoop's native library (PySpark ships none), Hadoop's local file system sets the
permissions of each file and directory it creates by running ``chmod`` in a child process: about
520 of them for a 20,000-line job, more as the input grows. Java starts each with
``posix_spawn``, and until the child runs ``chmod`` it shares the JVM's memory, so anything that
sums the resident memory of the job's process tree counts the JVM twice whenever it samples
during one (issue 33's 5M run: a naive sum saw 2,973 MiB where the processes held at most
1,369 MiB).

``com.globalmentor:hadoop-bare-naked-local-fs`` is Hadoop's local file system with permissions
and file listings done through ``java.nio`` instead. In local mode (``local[...]``: the executors
run in the driver's JVM) the job puts its jar on the driver's class path and names it as the
``file://`` file system; with any other master nothing changes. The jar (9 KB) is fetched with
Maven once (spark_audit/maven.py); ``SPARK_AUDIT_LOCAL_FS_JAR`` names a jar to use instead, or
``none`` to keep Hadoop's own file system.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from spark_audit import maven

GROUP, ARTIFACT, VERSION = "com.globalmentor", "hadoop-bare-naked-local-fs", "0.1.0"
FILE_SYSTEM_CLASS = "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"
JAR_ENV = "SPARK_AUDIT_LOCAL_FS_JAR"
CLASS_PATH = "spark.driver.extraClassPath"
KEEP_HADOOPS = "none"


#: A job waits at most this long for its first fetch (an unreachable repository), then goes on without the jar.
FETCH_TIMEOUT = 120.0


def local_fs_jar() -> Path:
    """The jar, fetched with Maven the first time; raises maven.MavenError or OSError when it cannot be."""
    return maven.ensure_jar(GROUP, ARTIFACT, VERSION, needed_for=f"fetch {ARTIFACT} (or set {JAR_ENV}=none)", timeout=FETCH_TIMEOUT)


def _chosen_jar() -> Path | None:
    chosen = os.environ.get(JAR_ENV, "").strip()
    if chosen == KEEP_HADOOPS:
        return None
    if chosen:
        if Path(chosen).is_file():
            return Path(chosen)
        problem = f"{JAR_ENV}={chosen} is not a file"
    else:
        try:
            return local_fs_jar()
        except (maven.MavenError, OSError) as exc:
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    print(f"spark_audit: {problem}; Hadoop's local file system stays (a chmod child process per file written)", file=sys.stderr)
    return None


def local_file_system_conf(master: str | None) -> dict[str, str]:
    """Spark settings that make ``file://`` the java.nio file system, for a local master; none otherwise."""
    # local-cluster[...] starts executor JVMs of its own, which would not have the jar.
    if master is None or not (master == "local" or master.startswith("local[")):
        return {}
    jar = _chosen_jar()
    if jar is None:
        return {}
    return {CLASS_PATH: str(jar), "spark.hadoop.fs.file.impl": FILE_SYSTEM_CLASS}
