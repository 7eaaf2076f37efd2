"""The ACL semantics table (tests/authz/acl_semantics.py), decided by a real Kafka controller and by the embedded one.

Each case becomes a forwarded admin request whose only possible failure is
authorization: the table's principal asks from the table's host, through an
Envelope, for an API that needs exactly the case's operation on the case's
resource. Names get a per-run prefix so the table's ACLs (wildcards among
them) touch nothing else on the shared node.
"""

from __future__ import annotations

import uuid
from typing import Any

from authz import Operation, PatternType, PermissionType, ResourceType
from envelope.principal import Principal
from tests.authz.acl_semantics import ACLS, CASES, SUPER_USER, TOPICS
from tests.interop.envelope_client import Controller, EnvelopeClient
from tests.interop.upstreams import ACL_PROPAGATION, poll

AUTHORIZATION_FAILURES = {29, 31}
CLUSTER = "kafka-cluster"


class Names:
    """The table's names with a per-run prefix, except the ones Kafka gives meaning to."""

    def __init__(self) -> None:
        self.prefix = f"sem{uuid.uuid4().hex[:6]}-"

    def resource(self, name: str) -> str:
        return name if name in ("*", CLUSTER) else self.prefix + name

    def principal(self, principal: str) -> str:
        kind, _, name = principal.partition(":")
        return principal if principal == SUPER_USER or name == "*" else f"{kind}:{self.prefix}{name}"


def _probe(operation: str, resource_type: str, name: str) -> tuple[int, int, dict[str, Any]]:
    """(api key, version, request) that needs exactly `operation` on the resource."""
    match resource_type, operation:
        case "TOPIC", "CREATE":
            topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            return 19, 7, {"topics": [topic], "timeout": 30000, "validate_only": True}
        case "TOPIC", "DELETE":
            # Not validate-only, so the table names DELETE only where the topic may go (the run's own topics).
            return 20, 6, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}], "timeout": 30000}
        case "TOPIC", "ALTER":
            return 37, 3, {"topics": [{"name": name, "count": 2, "assignments": None}], "timeout": 30000, "validate_only": True}
        case "TOPIC", "ALTER_CONFIGS":
            config = {"name": "retention.ms", "value": "3600000", "config_operation": 0}
            return 44, 1, {"resources": [{"resource_type": 2, "resource_name": name, "configs": [config]}], "validate_only": True}
        case "CLUSTER", "ALTER":
            return 45, 0, {"timeout": 30000, "topics": [{"name": "sem-no-such-topic", "partitions": [{"partition_index": 0, "replicas": [1]}]}]}
        case "CLUSTER", "DESCRIBE":
            return 46, 0, {"timeout": 30000, "topics": None}
        case "CLUSTER", "ALTER_CONFIGS":
            entry = {"entity": [{"entity_type": "user", "entity_name": "sem"}], "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]}
            return 49, 1, {"entries": [entry], "validate_only": True}
    raise AssertionError(f"no probe for {operation} on {resource_type}")


def _creation(acl: dict[str, str], names: Names) -> dict[str, Any]:
    return {
        "resource_type": ResourceType[acl["resourceType"]],
        "resource_name": names.resource(acl["resourceName"]),
        "resource_pattern_type": PatternType[acl["patternType"]],
        "principal": names.principal(acl["principal"]),
        "host": acl["host"],
        "operation": Operation[acl["operation"]],
        "permission_type": PermissionType[acl["permission"]],
    }


def test_the_table_holds_on_the_controller(controller: Controller) -> None:
    names = Names()
    client = EnvelopeClient(controller)
    try:
        for topic in TOPICS:
            client.create_topic(names.resource(topic))
        client.create_acls([_creation(acl, names) for acl in ACLS])

        def decide(case: dict[str, Any]) -> str:
            api_key, version, values = _probe(case["operation"], case["resourceType"], names.resource(case["resourceName"]))
            principal = Principal.parse(names.principal(case["principal"]))
            codes = client.codes(principal, api_key, version, values, host=case["host"])
            return "DENIED" if codes & AUTHORIZATION_FAILURES else "ALLOWED"

        # A real controller applies committed ACLs a moment later: wait until the first ALLOWED case shows it.
        first_allowed = next(case for case in CASES if case["expect"] == "ALLOWED" and case["operation"] != "DELETE")
        poll(lambda: decide(first_allowed), lambda seen: seen == "ALLOWED", ACL_PROPAGATION)
        seen = {f"{case['principal']} {case['operation']} {case['resourceName']} from {case['host']} ({case['why']})": decide(case) for case in CASES}
    finally:
        client.close()
    expected = {f"{case['principal']} {case['operation']} {case['resourceName']} from {case['host']} ({case['why']})": case["expect"] for case in CASES}
    assert seen == expected, controller.kind
