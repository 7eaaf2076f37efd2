"""The proof of the minimal ACLs: the window replayed against them with the what-if engine.

The candidate is the built-in authorizer with the synthesized ALLOW bindings, the DENY bindings
in force (applying the minimal ACLs replaces the grants, not the denials) and the super users.
Every decision that would change is listed with the rule that decides it now: a request allowed
in the window and denied by the candidate (a *new denial*; a DENY in force is the usual why),
and a request denied in the window that a PREFIXED binding would now allow. The controller's
own check of forwarded requests (CLUSTER_ACTION for the forwarding principal) is not in the
what-if replay; it is decided here on the driver, once per forwarding principal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from authz import AclAuthorizer, AclBinding, Action, Decision, Operation, ResourceType
from authz.acl_file import binding_to_dict
from authz.model import CLUSTER_NAME, parse_super_users
from spark_audit.acl_matching import context_for
from spark_audit.acl_usage import ENVELOPE_METHOD
from spark_audit.changes import acl_line
from spark_audit.collect import iso
from spark_audit.view import ALLOWED, DENIED
from spark_audit.whatif import STANDARD_AUTHORIZER, Candidate, actions_for, replay

NEW_DENIAL = "allowed -> denied"
NEWLY_ALLOWED = "denied -> allowed"
REPLAY_ERROR = "replay error"
#: The columns of a proof row (``<output>/acls/proof``): one per distinct changed decision.
PROOF_COLUMNS = (
    "change",
    "principal",
    "clientAddress",
    "method",
    "resourceType",
    "resourceName",
    "operation",
    "decisions",
    "first",
    "last",
    "why",
)
PROOF_SCHEMA = StructType(
    [StructField(name, LongType() if name == "decisions" else StringType(), name != "change") for name in PROOF_COLUMNS]
)
GROUP_COLUMNS = PROOF_COLUMNS[1:7]


def candidate_of(synthesized: Sequence[AclBinding], denies: Sequence[AclBinding], super_users: Iterable[str]) -> Candidate:
    supers = ";".join(sorted(super_users))
    return Candidate(
        STANDARD_AUTHORIZER, {"super.users": supers} if supers else {}, tuple(binding_to_dict(b) for b in [*synthesized, *denies])
    )


def binding_words(binding: AclBinding | None) -> str:
    return "" if binding is None else ": " + acl_line({**binding_to_dict(binding), "permissionType": binding.permission.name})


def why(authorizer: AclAuthorizer, super_users: frozenset[str], row: Row) -> str:
    """The rule that decides this decision under the candidate, in words."""
    if row["change"] == REPLAY_ERROR:
        return "the replay raised: see whatif error"
    principal = str(row["principal"])
    if principal in super_users:
        return "super user"
    try:
        context = context_for(principal, row["clientAddress"])
        actions = actions_for(row["method"], row["resourceType"], row["resourceName"], row["operation"])
    except (KeyError, ValueError) as exc:
        return f"cannot be decided: {type(exc).__name__}: {exc}"
    reasons = []
    for action in actions:
        explanation = authorizer.explain(context, action)
        reasons.append(
            f"{action.operation.name} on {action.resource_type.name.lower()}:{action.resource_name}: "
            f"{explanation.reason}{binding_words(explanation.binding)}"
        )
    return "; ".join(reasons)


@functools.lru_cache(maxsize=4)
def _authorizer(candidate_json: str) -> tuple[AclAuthorizer, frozenset[str]]:
    candidate = Candidate.from_json(candidate_json)
    supers = parse_super_users(candidate.properties.get("super.users"))
    built = candidate.build()
    assert isinstance(built, AclAuthorizer)  # the candidate is always the built-in authorizer
    return built, supers


def explain_partition(candidate_json: str, rows: Iterable[Row]) -> Iterator[tuple[object, ...]]:
    authorizer, supers = _authorizer(candidate_json)
    for row in rows:
        yield (*(row[c] for c in PROOF_COLUMNS[:-1]), why(authorizer, supers, row))


@dataclass(frozen=True)
class Proof:
    #: one row per distinct changed decision (PROOF_COLUMNS), new denials first
    changes: DataFrame
    #: decisions replayed, new denials, newly allowed, replay errors (in decisions, not distinct ones)
    stats: dict[str, int]
    #: drops the replay's cached decisions: call it once ``changes`` is written
    release: Callable[[], None]


def prove(window: DataFrame, forwarders: Sequence[str], candidate: Candidate) -> Proof:
    """Replay ``window`` (flat records) and the forwarders' Envelope checks against ``candidate``."""
    spark = window.sparkSession
    result = replay(spark, window, candidate)
    change = (
        F.when((F.col("old") == ALLOWED) & (F.col("new") == DENIED), F.lit(NEW_DENIAL))
        .when((F.col("old") == DENIED) & (F.col("new") == ALLOWED), F.lit(NEWLY_ALLOWED))
        .otherwise(F.lit(REPLAY_ERROR))
    )
    grouped = (
        result.changes.withColumn("change", change)
        .groupBy("change", *GROUP_COLUMNS)
        .agg(F.count(F.lit(1)).alias("decisions"), iso(F.min("time")).alias("first"), iso(F.max("time")).alias("last"))
    )
    explained = spark.createDataFrame(grouped.rdd.mapPartitions(functools.partial(explain_partition, candidate.to_json())), PROOF_SCHEMA)
    envelope_rows = _envelope_denials(forwarders, candidate)
    changes = explained.unionByName(spark.createDataFrame(envelope_rows, PROOF_SCHEMA)) if envelope_rows else explained
    stats = {
        "decisions": result.stats["decisions"] + len(forwarders),
        "newDenials": result.stats["allowedToDenied"],
        "newlyAllowed": result.stats["deniedToAllowed"],
        "errors": result.stats["errors"],
        "forwarderDenials": len(envelope_rows),
    }
    ordered = changes.orderBy(F.col("change") != NEW_DENIAL, "change", F.desc("decisions"), *GROUP_COLUMNS)
    return Proof(ordered, stats, result.release)


def _envelope_denials(forwarders: Sequence[str], candidate: Candidate) -> list[tuple[object, ...]]:
    """A proof row for each forwarding principal the candidate would refuse CLUSTER_ACTION on the cluster."""
    authorizer, supers = _authorizer(candidate.to_json())
    rows: list[tuple[object, ...]] = []
    for forwarder in forwarders:
        if forwarder in supers:
            continue
        action = Action(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        explanation = authorizer.explain(context_for(forwarder, None), action)
        if explanation.decision is Decision.DENIED:
            rows.append(
                (
                    NEW_DENIAL,
                    forwarder,
                    None,
                    ENVELOPE_METHOD,
                    "CLUSTER",
                    CLUSTER_NAME,
                    "CLUSTER_ACTION",
                    None,
                    None,
                    None,
                    f"CLUSTER_ACTION on cluster:{CLUSTER_NAME}: {explanation.reason}{binding_words(explanation.binding)}",
                )
            )
    return rows
