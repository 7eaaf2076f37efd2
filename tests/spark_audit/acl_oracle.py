"""The unused-grant report computed in plain Python from docs/audit-job.md ("Least privilege", "Authorizer what-if")
and Kafka's ACL rules, sharing no code with the job's matching: what tests/spark_audit/test_acl_hygiene.py checks
spark_audit/acl_usage.py against."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from authz import AclBinding, Operation, PatternType, PermissionType, ResourceType
from tests.spark_audit.oracle import AUTH_CODES, Rec, quarantined

SECOND = 1_000_000
#: Methods Kafka authorizes as one operation on the cluster.
CLUSTER_CHECKS = {
    "kafka.CreateAcls": "ALTER",
    "kafka.DeleteAcls": "ALTER",
    "kafka.AlterUserScramCredentials": "ALTER",
    "kafka.AlterClientQuotas": "ALTER_CONFIGS",
}
#: Kafka's implied operations: an ALLOW of any of these allows the key.
IMPLIED = {"DESCRIBE": {"DESCRIBE", "READ", "WRITE", "DELETE", "ALTER"}, "DESCRIBE_CONFIGS": {"DESCRIBE_CONFIGS", "ALTER_CONFIGS"}}


@dataclass(frozen=True)
class Allowed:
    us: int
    principal: str
    #: None for the controller's check of the forwarding principal, whose address the records do not hold
    host: str | None
    method: str
    resource_type: str
    resource_name: str
    operation: str


def records(lines: Iterable[str]) -> list[Rec]:
    """The clean records, each id once."""
    seen: dict[str, Rec] = {}
    for line in lines:
        if not quarantined(line):
            record = Rec.of(json.loads(line))
            seen.setdefault(record.id, record)
    return list(seen.values())


def record_times(lines: Iterable[str]) -> list[int]:
    return [r.us for r in records(lines)]


def allowed(lines: Iterable[str]) -> list[Allowed]:
    """Every decision the records show as allowed: the replayed ones, and the Envelope checks of decided forwarded outcomes."""
    found = []
    for r in records(lines):
        if r.connection or r.stage not in ("outcome", "read") or r.status not in ("SUCCESS", "FAILURE") or r.principal is None:
            continue
        if r.method in CLUSTER_CHECKS:
            if not (r.error_code in AUTH_CODES or any(e.get("errorCode") in AUTH_CODES for e in r.errors)):
                found.append(Allowed(r.us, r.principal, r.address, r.method, "CLUSTER", "kafka-cluster", CLUSTER_CHECKS[r.method]))
        else:
            for x in r.resources:
                if not r.resource_denied(x):
                    found.append(Allowed(r.us, r.principal, r.address, r.method or "", x["type"], x["name"], x["operation"]))
        if r.stage == "outcome" and r.forwarding is not None:
            found.append(Allowed(r.us, r.forwarding, None, "kafka.Envelope", "CLUSTER", "kafka-cluster", "CLUSTER_ACTION"))
    return found


def _on_resource(b: AclBinding, kind: str, name: str) -> bool:
    if b.resource_type.name != kind:
        return False
    if b.pattern_type is PatternType.LITERAL:
        return b.resource_name in (name, "*")
    return name.startswith(b.resource_name)


def _for(b: AclBinding, principal: str, host: str | None) -> bool:
    return b.principal in (principal, "User:*") and (host is None or b.host in ("*", host))


def used_by(decision: Allowed, bindings: Sequence[AclBinding], super_users: frozenset[str]) -> set[int]:
    if decision.principal in super_users:
        return set()
    actions = [(decision.resource_type, decision.resource_name, decision.operation)]
    if decision.method == "kafka.CreateTopics" and decision.operation == "CREATE":
        actions.insert(0, ("CLUSTER", "kafka-cluster", "CREATE"))
    used = set()
    for kind, name, operation in actions:

        def hits(b: AclBinding, kind: str = kind, name: str = name) -> bool:
            return _on_resource(b, kind, name) and _for(b, decision.principal, decision.host)

        denied = decision.host is not None and any(
            b.permission is PermissionType.DENY and hits(b) and b.operation.name in ("ALL", operation) for b in bindings
        )
        if denied:
            continue
        granting = {"ALL", *IMPLIED.get(operation, {operation})}
        used |= {i for i, b in enumerate(bindings) if b.permission is PermissionType.ALLOW and hits(b) and b.operation.name in granting}
    return used


def binding_uses(
    lines: Sequence[str], bindings: Sequence[AclBinding], super_users: frozenset[str], window_start_us: int
) -> dict[int, tuple[int, int]]:
    """binding index -> (allowed decisions it allowed from ``window_start_us`` on, the last time it allowed one at all)."""
    uses: dict[int, tuple[int, int]] = {}
    for decision in allowed(lines):
        for index in used_by(decision, bindings, super_users):
            count, last = uses.get(index, (0, decision.us))
            uses[index] = (count + (decision.us >= window_start_us), max(last, decision.us))
    return uses


def iso(us: int) -> str:
    moment = datetime.fromtimestamp(us // SECOND, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{us % SECOND // 1000:03d}Z"


def _binding(
    principal: str, operation: str, kind: str, name: str, pattern: str = "LITERAL", host: str = "*", allow: bool = True
) -> AclBinding:
    permission = PermissionType.ALLOW if allow else PermissionType.DENY
    return AclBinding(ResourceType[kind], name, PatternType[pattern], principal, host, Operation[operation], permission)


def generated_acls(decisions: Sequence[Allowed], window_start_us: int, seed: int) -> list[AclBinding]:
    """ACLs in force over the generated names: literals, prefixes, ``*``, ``User:*``, hosts, ALL and implied operations, DENYs,
    grants nobody uses, and grants whose decisions all fall before the window."""
    rng = random.Random(seed)
    principals = sorted({d.principal for d in decisions if d.method != "kafka.Envelope"})
    topics = sorted({d.resource_name for d in decisions if d.resource_type == "TOPIC"})
    hosts = sorted({d.host for d in decisions if d.host is not None})
    forwarder = next(d.principal for d in decisions if d.method == "kafka.Envelope")
    operations = ("CREATE", "DELETE", "ALTER", "DESCRIBE", "ALL", "ALTER_CONFIGS", "DESCRIBE_CONFIGS")
    bindings = [
        _binding(rng.choice(principals), rng.choice(operations), "TOPIC", rng.choice(topics), host=rng.choice(["*", *hosts]))
        for _ in range(12)
    ]
    bindings += [
        _binding(rng.choice(principals), rng.choice(operations), "TOPIC", prefix, "PREFIXED")
        for prefix in ("orders-", "payments-", "clicks-00")
    ]
    bindings += [
        _binding("User:*", "DESCRIBE", "TOPIC", "*", host=rng.choice(hosts)),
        _binding(rng.choice(principals), "ALTER", "CLUSTER", "kafka-cluster"),
        _binding(rng.choice(principals), "CREATE", "CLUSTER", "kafka-cluster", host=rng.choice(hosts)),
        _binding(forwarder, "CLUSTER_ACTION", "CLUSTER", "kafka-cluster", host="10.9.9.9"),
        _binding(rng.choice(principals), "ALL", "TOPIC", rng.choice(topics), allow=False),
        _binding("User:*", "CREATE", "TOPIC", "logs-", "PREFIXED", host=rng.choice(hosts), allow=False),
        _binding("User:ghost", "READ", "TOPIC", "*"),  # nobody is ghost
        _binding(rng.choice(principals), "DESCRIBE", "GROUP", "*"),  # no group is ever named
    ]
    # grants of things done only before the window: unused in it, with a last use
    last_on: dict[tuple[str, str, str], int] = {}
    for d in decisions:
        key = (d.principal, d.resource_type, d.resource_name)
        last_on[key] = max(last_on.get(key, d.us), d.us)
    early = sorted(key for key, last in last_on.items() if last < window_start_us and key[1] == "TOPIC")
    for principal, kind, name in rng.sample(early, min(3, len(early))):
        operation = next(d.operation for d in decisions if (d.principal, d.resource_type, d.resource_name) == (principal, kind, name))
        bindings.append(_binding(principal, operation, kind, name))
    return bindings
