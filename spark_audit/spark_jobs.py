"""How many Spark jobs a run starts, and the settings that keep that number small.

Each Spark job has a fixed cost (scheduling, a plan, tasks to start) that on this job's small
tables outweighs its work, so the run is written to start a few jobs whatever its input's size
(docs/performance.md, "Performance: the audit job"); it counts them, and says how many.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import SparkSession

#: Settings for the run, restored afterwards in a session the caller owns.
RUN_SETTINGS = {
    # Adaptive execution submits each shuffle stage as a Spark job of its own, to re-plan from its sizes. The
    # run's queries are few and their shuffles are at most a handful of partitions, so there is nothing to
    # re-plan, and each stage would cost a job's fixed cost (measured: no change in time, docs/performance.md).
    "spark.sql.adaptive.enabled": "false",
    # A broadcast join runs a job of its own to collect its small side; the joins left (the identity reports,
    # the incremental update) are of small tables, which a sort-merge join shuffles within the job. The
    # ingest's join with the repeated ids asks for a broadcast by name, and keeps it.
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # A read of a directory with more subdirectories than this lists them in a Spark job of its own (32 by
    # default): the request table and the date-partitioned reports have one per day, so a history of more than
    # a month would add jobs with its length. Listed on the driver, one directory a day is quick.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}


@dataclass
class Jobs:
    group: str
    count: int = 0

    def add_groups(self, spark: SparkSession, groups: list[str]) -> None:
        """Count the jobs of ``groups`` too (a streaming query's micro-batches run in its own group)."""
        tracker = spark.sparkContext.statusTracker()
        self.count += sum(len(tracker.getJobIdsForGroup(group)) for group in groups)


@contextmanager
def counted(spark: SparkSession) -> Iterator[Jobs]:
    """Run the block with :data:`RUN_SETTINGS` in one job group; ``count`` is the Spark jobs it started.

    A streaming query (incremental mode) runs its micro-batches in a job group of its own (its run id);
    they are counted by :meth:`Jobs.add_groups`.
    """
    sc = spark.sparkContext
    jobs = Jobs(f"spark_audit-{uuid.uuid4()}")
    saved: dict[str, str | None] = {key: spark.conf.get(key, None) for key in RUN_SETTINGS}
    for key, setting in RUN_SETTINGS.items():
        spark.conf.set(key, setting)
    sc.setJobGroup(jobs.group, "spark_audit run")
    try:
        yield jobs
        jobs.count += len(sc.statusTracker().getJobIdsForGroup(jobs.group))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        for key, before in saved.items():
            if before is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, before)


@contextmanager
def as_configured(spark: SparkSession) -> Iterator[None]:
    """Run the block with the session's own settings instead of :data:`RUN_SETTINGS`: the optional ACL and what-if
    steps write sorted output and read it back in order, which needs adaptive execution's single coalesced file."""
    run = {key: spark.conf.get(key, None) for key in RUN_SETTINGS}
    for key in RUN_SETTINGS:
        spark.conf.unset(key)
    try:
        yield
    finally:
        for key, value in run.items():
            if value is not None:
                spark.conf.set(key, value)
