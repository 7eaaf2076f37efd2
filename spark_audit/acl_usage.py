"""The allowed decisions of the audit records, and which ACL bindings in force they used (Spark).

An allowed decision is a decision the what-if replay re-decides (spark_audit/whatif.py,
``decisions``) whose historical answer was ALLOWED, plus the controller's own check of every
forwarded request that it decided: CLUSTER_ACTION on the cluster for the forwarding principal
(the proxy), from an address the records do not hold. Without those the proxy's own grant would
look unused, and removing it would stop every forwarded request.

Usage is decided on the executors (spark_audit/acl_matching.py), once per distinct decision;
only one row per binding comes back to the driver.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from kio.schema.errors import ErrorCode
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType, TimestampType

from authz import AclBinding
from authz.acl_file import binding_from_dict, binding_to_dict
from authz.model import CLUSTER_NAME
from spark_audit.acl_matching import Decided, GrantMatcher
from spark_audit.collect import iso
from spark_audit.view import ALLOWED, request_records
from spark_audit.whatif import decisions

#: The method of the controller's own check of a forwarded request (Kafka's Envelope, API key 58).
ENVELOPE_METHOD = "kafka.Envelope"
#: The envelope error with which the controller refuses the proxy's own rights: that check was denied.
CLUSTER_AUTHORIZATION_FAILED = int(ErrorCode.cluster_authorization_failed)
#: Outcome statuses the controller decided (ERROR: nobody decided; docs/audit-job.md, "Authorizer what-if").
DECIDED_STATUSES = ("SUCCESS", "FAILURE")
#: The columns of an allowed decision, and of a distinct one.
DECISION_COLUMNS = ("principal", "clientAddress", "method", "resourceType", "resourceName", "operation")
#: The index an allowed decision reports when no binding in force allowed it.
NO_BINDING = -1

USED_SCHEMA = StructType(
    [
        StructField("binding", IntegerType(), False),
        StructField("uses", LongType(), False),
        StructField("lastUsed", TimestampType(), True),
    ]
)


def allowed_decisions(flat: DataFrame) -> DataFrame:
    """``time`` and :data:`DECISION_COLUMNS` of every allowed decision (``clientAddress`` null where not recorded)."""
    replayed = decisions(flat).filter(F.col("old") == ALLOWED).select("time", *DECISION_COLUMNS)
    forwarded = request_records(flat).filter(
        (F.col("stage") == "outcome")
        & F.col("status").isin(*DECIDED_STATUSES)
        & F.col("forwardingPrincipal").isNotNull()
        & F.coalesce(F.col("envelopeErrorCode") != CLUSTER_AUTHORIZATION_FAILED, F.lit(True))
    )
    envelopes = forwarded.select(
        "time",
        F.col("forwardingPrincipal").alias("principal"),
        F.lit(None).cast("string").alias("clientAddress"),
        F.lit(ENVELOPE_METHOD).alias("method"),
        F.lit("CLUSTER").alias("resourceType"),
        F.lit(CLUSTER_NAME).alias("resourceName"),
        F.lit("CLUSTER_ACTION").alias("operation"),
    )
    return replayed.unionByName(envelopes)


def in_window(start_us: int | None) -> Column:
    return F.lit(True) if start_us is None else F.unix_micros("time") >= F.lit(start_us)


def distinct_decisions(allowed: DataFrame, start_us: int | None) -> DataFrame:
    """One row per distinct allowed decision: its uses within the window and the last time it was allowed at all."""
    return allowed.groupBy(*DECISION_COLUMNS).agg(F.count(F.when(in_window(start_us), True)).alias("uses"), F.max("time").alias("lastUsed"))


@dataclass(frozen=True)
class MatcherSpec:
    """What the executors build their GrantMatcher from (JSON: it travels inside the task)."""

    bindings: tuple[AclBinding, ...]
    super_users: frozenset[str]

    def to_json(self) -> str:
        return json.dumps({"acls": [binding_to_dict(b) for b in self.bindings], "superUsers": sorted(self.super_users)})


@functools.lru_cache(maxsize=4)
def _matcher(spec_json: str) -> GrantMatcher:
    # Python workers are reused across tasks: build the matcher once per worker
    spec = json.loads(spec_json)
    return GrantMatcher([binding_from_dict(entry) for entry in spec["acls"]], spec["superUsers"])


def used_partition(spec_json: str, rows: Iterable[Row]) -> Iterator[tuple[int, int, datetime | None]]:
    """(binding index, uses, last used) for each binding each distinct decision used; :data:`NO_BINDING` where none
    allowed a decision of a principal who is not a super user."""
    matcher = _matcher(spec_json)
    for row in rows:
        decided = Decided(*(row[column] for column in DECISION_COLUMNS))
        used = matcher.used(decided)
        if not used and decided.principal not in matcher.super_users:
            used = [NO_BINDING]  # allowed then, not by these ACLs: they changed since, or a super user is not declared
        for index in used:
            yield index, int(row["uses"]), row["lastUsed"]


@dataclass(frozen=True)
class BindingUse:
    #: allowed decisions within the window that the binding allowed
    uses: int
    #: the last time it allowed one, within the window or before it (RFC 3339, UTC)
    last_used: str | None


def binding_uses(distinct: DataFrame, spec: MatcherSpec) -> dict[int, BindingUse]:
    """Uses within the window and the last use ever, per binding index that any decision used (and :data:`NO_BINDING`)."""
    spark = distinct.sparkSession
    used = spark.createDataFrame(distinct.rdd.mapPartitions(functools.partial(used_partition, spec.to_json())), USED_SCHEMA)
    totals = used.groupBy("binding").agg(F.sum("uses").alias("uses"), iso(F.max("lastUsed")).alias("lastUsed"))
    return {int(row["binding"]): BindingUse(int(row["uses"]), row["lastUsed"]) for row in totals.collect()}


def needs(distinct: DataFrame, super_users: Sequence[str]) -> list[tuple[str, str | None, str, str, str, str]]:
    """The distinct decisions allowed within the window, super users left out: what the minimal ACLs must allow."""
    wanted = distinct.filter(F.col("uses") > 0)
    if super_users:
        wanted = wanted.filter(~F.col("principal").isin(*super_users))
    return [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in wanted.select(*DECISION_COLUMNS).toLocalIterator()]
