"""Authorizer what-if replay: re-decide historical requests with a candidate authorizer and ACLs.

Only decisions the audit records were made by an authorizer are replayed:
``outcome`` records the controller answered (status SUCCESS or FAILURE) and
edge-authorized ``read`` records. Each resource of such a record is one
decision; CreateAcls/DeleteAcls (and SCRAM/quota changes) are one decision on
the cluster, as Kafka authorizes them. The historical decision is DENIED when
the record shows an authorization error for that resource, ALLOWED otherwise.

The candidate decides on executors (``mapPartitions``), once per distinct
(context, action): audit records repeat the same principal/address/resource
many times, and a decision depends only on those.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from authz import AclStore, Action, Authorizer, Decision, Operation, RequestContext, ResourceType
from authz.acl_file import AclFileError, binding_from_dict, binding_to_dict, load_acl_file
from authz.loading import AuthorizerLoadError, load_authorizer
from authz.model import CLUSTER_NAME
from envelope.principal import Principal
from spark_audit.view import ALLOWED, DENIED, is_auth_code, request_records, resource_decision

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ERROR = "ERROR"

#: Methods Kafka authorizes as one operation on the cluster, whatever their resources.
CLUSTER_CHECKS: dict[str, str] = {
    "kafka.CreateAcls": "ALTER",
    "kafka.DeleteAcls": "ALTER",
    "kafka.AlterUserScramCredentials": "ALTER",
    "kafka.AlterClientQuotas": "ALTER_CONFIGS",
}

#: The request context and action of one decision; the replay key is these as JSON.
KEY_COLUMNS = (
    "principal",
    "clientAddress",
    "listener",
    "securityProtocol",
    "mechanism",
    "clientId",
    "clientSoftwareName",
    "clientSoftwareVersion",
    "forwardingPrincipal",
    "method",
    "resourceType",
    "resourceName",
    "operation",
)

DECIDED_SCHEMA = StructType(
    [
        StructField("key", StringType(), False),
        StructField("new", StringType(), False),
        StructField("error", StringType(), True),
    ]
)

CHANGE_COLUMNS = (
    "time",
    "date",
    "requestId",
    "principal",
    "clientAddress",
    "listener",
    "forwardingPrincipal",
    "method",
    "resourceType",
    "resourceName",
    "operation",
    "old",
    "new",
    "error",
)


class WhatIfError(ValueError):
    """The candidate authorizer or its ACLs cannot be used."""


@dataclass(frozen=True)
class Candidate:
    """The authorizer to replay with: a name for ``authz.loading.load_authorizer``, its properties and ACLs."""

    authorizer: str = STANDARD_AUTHORIZER
    properties: Mapping[str, str] = field(default_factory=dict)
    acls: tuple[dict[str, str], ...] = ()

    @classmethod
    def from_files(cls, authorizer: str | None, properties: Mapping[str, str], acl_file: str | None) -> Candidate:
        try:
            bindings = load_acl_file(acl_file) if acl_file else []
        except AclFileError as exc:
            raise WhatIfError(str(exc)) from None
        return cls(authorizer or STANDARD_AUTHORIZER, dict(properties), tuple(binding_to_dict(b) for b in bindings))

    def to_json(self) -> str:
        return json.dumps({"authorizer": self.authorizer, "properties": dict(self.properties), "acls": list(self.acls)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Candidate:
        value = json.loads(text)
        return cls(value["authorizer"], value["properties"], tuple(value["acls"]))

    def build(self) -> Authorizer:
        """The authorizer with the ACLs loaded; WhatIfError saying why not."""
        try:
            authorizer = load_authorizer(self.authorizer, self.properties)
        except AuthorizerLoadError as exc:
            raise WhatIfError(str(exc)) from None
        if not self.acls:
            return authorizer
        if not isinstance(authorizer, AclStore):
            raise WhatIfError(
                f"authorizer {self.authorizer} keeps no ACLs (it does not implement authz.AclStore): replay it without an ACL file"
            )
        bindings = [binding_from_dict(entry) for entry in self.acls]
        for binding, problem in zip(bindings, authorizer.create_acls(bindings), strict=True):
            if problem is not None:
                raise WhatIfError(f"authorizer {self.authorizer} refused ACL {binding_to_dict(binding)}: {problem}")
        return authorizer


# --------------------------------------------------------------------------- executor side


@functools.lru_cache(maxsize=4)
def _authorizer(candidate_json: str) -> Authorizer:
    # Python workers are reused across tasks: build the authorizer (and its ACL index) once per worker.
    return Candidate.from_json(candidate_json).build()


def actions_for(method: str, resource_type: str, resource_name: str, operation: str) -> list[Action]:
    """The actions any of which allows this resource, in Kafka's order."""
    action = Action(Operation[operation], ResourceType[resource_type], resource_name)
    if method == "kafka.CreateTopics" and action.resource_type is ResourceType.TOPIC and action.operation is Operation.CREATE:
        # Kafka allows every topic of a CreateTopics when the cluster allows CREATE.
        return [Action(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME), action]
    return [action]


def context_of(values: Mapping[str, Any]) -> RequestContext:
    protocol = values.get("securityProtocol")
    sasl = str(protocol).startswith("SASL_") if protocol else False
    forwarder = values.get("forwardingPrincipal")
    return RequestContext(
        principal=Principal.parse(str(values.get("principal") or "")),
        client_address=ipaddress.ip_address(str(values.get("clientAddress") or "")),
        listener=str(values.get("listener") or ""),
        security_protocol=str(protocol or ""),
        sasl_mechanism=values.get("mechanism") if sasl else None,
        client_id=values.get("clientId"),
        client_software_name=values.get("clientSoftwareName"),
        client_software_version=values.get("clientSoftwareVersion"),
        forwarding_principal=Principal.parse(forwarder) if forwarder else None,
    )


def decide(authorizer: Authorizer, key: str) -> tuple[str, str, str | None]:
    """(key, ALLOWED/DENIED/ERROR, error message) for one replay key."""
    values = json.loads(key)
    try:
        context = context_of(values)
        actions = actions_for(values["method"], values["resourceType"], values["resourceName"], values["operation"])
        decisions = authorizer.authorize(context, actions)
    except Exception as exc:  # a plug-in's bug must not stop the replay: it shows up as ERROR rows
        return key, ERROR, f"{type(exc).__name__}: {exc}"
    return key, ALLOWED if Decision.ALLOWED in decisions else DENIED, None


def decide_partition(candidate_json: str, rows: Iterable[Row]) -> Iterator[tuple[str, str, str | None]]:
    authorizer = _authorizer(candidate_json)
    for row in rows:
        yield decide(authorizer, row["key"])


# --------------------------------------------------------------------------- driver side


def _whole_request_denied() -> Column:
    return F.coalesce(is_auth_code(F.col("errorCode")) | F.exists("errors", lambda e: is_auth_code(e["errorCode"])), F.lit(False))


def decisions(flat: DataFrame) -> DataFrame:
    """One row per replayable historical decision: the record's context, the action and ``old``."""
    decided = request_records(flat).filter(
        (F.col("stage").isin("outcome", "read")) & F.col("status").isin("SUCCESS", "FAILURE") & F.col("principal").isNotNull()
    )
    cluster_op = F.element_at(F.create_map(*[item for m, op in CLUSTER_CHECKS.items() for item in (F.lit(m), F.lit(op))]), F.col("method"))
    whole = F.array(
        F.struct(
            F.lit("CLUSTER").alias("type"),
            F.lit(CLUSTER_NAME).alias("name"),
            cluster_op.alias("operation"),
            F.when(_whole_request_denied(), F.lit(DENIED)).otherwise(F.lit(ALLOWED)).alias("old"),
        )
    )
    each = F.transform(
        "resources",
        lambda r: F.struct(
            r["type"].alias("type"), r["name"].alias("name"), r["operation"].alias("operation"), resource_decision(r).alias("old")
        ),
    )
    targets = F.when(cluster_op.isNotNull(), whole).otherwise(each)
    exploded = decided.select("*", F.explode(targets).alias("_t"))
    return exploded.select(
        "time",
        "date",
        "requestId",
        *[c for c in KEY_COLUMNS if c not in ("resourceType", "resourceName", "operation")],
        F.col("_t.type").alias("resourceType"),
        F.col("_t.name").alias("resourceName"),
        F.col("_t.operation").alias("operation"),
        F.col("_t.old").alias("old"),
    ).withColumn("key", F.to_json(F.struct(*KEY_COLUMNS)))


@dataclass(frozen=True)
class WhatIfResult:
    changes: DataFrame
    """Every decision that would change: CHANGE_COLUMNS, sorted by time."""
    counts: DataFrame
    """Changes counted by old, new, principal, method and resource."""
    stats: dict[str, int]
    cached: tuple[DataFrame, ...] = ()

    def release(self) -> None:
        """Drop the cached decisions once changes and counts are written."""
        for frame in self.cached:
            frame.unpersist()


def replay(spark: SparkSession, flat: DataFrame, candidate: Candidate) -> WhatIfResult:
    """Re-decide every replayable decision in ``flat`` with ``candidate``."""
    candidate.build()  # fail on the driver, with a clear message, before any task runs
    rows = decisions(flat).persist(StorageLevel.MEMORY_AND_DISK)
    keys = rows.select("key").distinct()
    decided_rdd = keys.rdd.mapPartitions(functools.partial(decide_partition, candidate.to_json()))
    # the candidate runs in Python workers: decide each key once, however many writes read the result
    decided = spark.createDataFrame(decided_rdd, DECIDED_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
    replayed = rows.join(decided, "key")
    changes = (
        replayed.filter(F.col("old") != F.col("new")).select(*CHANGE_COLUMNS).orderBy("time", "requestId", "resourceType", "resourceName")
    )
    counts = (
        changes.groupBy("old", "new", "principal", "method", "resourceType", "resourceName", "operation")
        .count()
        .orderBy(F.desc("count"), "old", "new", "principal", "method", "resourceType", "resourceName")
    )
    totals = replayed.agg(
        F.count(F.lit(1)).alias("decisions"),
        F.count(F.when(F.col("old") != F.col("new"), True)).alias("changed"),
        F.count(F.when((F.col("old") == ALLOWED) & (F.col("new") == DENIED), True)).alias("allowedToDenied"),
        F.count(F.when((F.col("old") == DENIED) & (F.col("new") == ALLOWED), True)).alias("deniedToAllowed"),
        F.count(F.when(F.col("new") == ERROR, True)).alias("errors"),
    ).first()
    stats = {
        name: int(totals[name]) if totals is not None else 0
        for name in ("decisions", "changed", "allowedToDenied", "deniedToAllowed", "errors")
    }
    stats["distinctContexts"] = decided.count()
    return WhatIfResult(changes, counts, stats, (rows, decided))


def parse_properties(pairs: Sequence[str]) -> dict[str, str]:
    """``key=value`` strings (the CLI's ``--whatif-property``) as a dict; ValueError for one without ``=``."""
    properties = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {pair!r}")
        properties[key.strip()] = value.strip()
    return properties
