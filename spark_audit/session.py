"""The SparkSession the job runs in."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from urllib.parse import urlparse

from pyspark.sql import SparkSession

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback_master(master: str) -> bool:
    """True for local[...] and for a cluster manager on this machine's loopback."""
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname
    return host is not None and host in LOOPBACK_HOSTS


def build_session(
    master: str | None = "local[*]",
    *,
    jars: Sequence[str] = (),
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Create (or reuse) the job's SparkSession.

    ``master`` None keeps the master spark-submit was given. An existing
    session is reused as it is (tests, notebooks): Spark settings such as
    ``spark.jars`` only apply to a session this call creates.
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
        partitions = 8
    if partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions))
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Audit times are UTC: dates, buckets and printed times are derived in UTC.
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    # py4j logs every gateway connection at INFO, which drowns the job's own output in an INFO-level process
    logging.getLogger("py4j").setLevel(logging.WARNING)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
