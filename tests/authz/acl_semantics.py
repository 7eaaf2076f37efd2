"""One table of Kafka's ACL semantics, in the file formats `envelope-proxy authz check` reads.

The same table is decided by the built-in authorizer (tests/authz), by the CLI
(tests/authz/test_authz_check_cli.py) and by a real Kafka controller
(tests/interop/test_acl_semantics_kafka.py), so the three cannot drift apart.
Only operations a forwarded admin request can show on a real controller are
used: CREATE, DELETE, ALTER, ALTER_CONFIGS on topics; ALTER, DESCRIBE,
ALTER_CONFIGS on the cluster.
"""

from typing import Any

SUPER_USER = "User:admin"


def _acl(resource_type: str, name: str, pattern: str, principal: str, operation: str, permission: str = "ALLOW", host: str = "*") -> dict[str, str]:
    return {
        "resourceType": resource_type,
        "resourceName": name,
        "patternType": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission": permission,
    }


ACLS: list[dict[str, str]] = [
    _acl("TOPIC", "orders", "LITERAL", "User:alice", "CREATE"),
    _acl("TOPIC", "pay-", "PREFIXED", "User:bob", "ALTER"),
    _acl("TOPIC", "*", "LITERAL", "User:carol", "ALTER_CONFIGS"),
    _acl("TOPIC", "pay-", "PREFIXED", "User:*", "DELETE"),
    _acl("TOPIC", "pay-secret", "LITERAL", "User:*", "DELETE", "DENY"),
    _acl("TOPIC", "orders", "LITERAL", "User:dave", "CREATE", host="10.0.0.9"),
    _acl("CLUSTER", "kafka-cluster", "LITERAL", "User:erin", "ALTER"),
    _acl("CLUSTER", "kafka-cluster", "LITERAL", "User:frank", "ALL"),
    _acl("CLUSTER", "kafka-cluster", "LITERAL", "User:frank", "ALTER_CONFIGS", "DENY"),
    _acl("TOPIC", "gamma", "LITERAL", "User:gina", "ALL"),
    _acl("TOPIC", "gamma", "LITERAL", "User:gina", "ALTER", "DENY", host="10.0.0.66"),
]

TOPICS = ("orders", "pay-eu", "pay-secret", "gamma", "other")
"""Topics the table names; the real-controller run creates them first so only authorization can fail."""


def _case(principal: str, operation: str, resource_type: str, name: str, expect: str, host: str = "10.0.0.1", why: str = "") -> dict[str, Any]:
    return {
        "principal": principal,
        "host": host,
        "operation": operation,
        "resourceType": resource_type,
        "resourceName": name,
        "expect": expect,
        "why": why,
    }


CASES: list[dict[str, Any]] = [
    _case("User:alice", "CREATE", "TOPIC", "orders", "ALLOWED", why="literal match"),
    _case("User:alice", "CREATE", "TOPIC", "orders-2", "DENIED", why="a literal name is not a prefix"),
    _case("User:alice", "DELETE", "TOPIC", "orders", "DENIED", why="another operation"),
    _case("User:bob", "ALTER", "TOPIC", "pay-eu", "ALLOWED", why="prefixed match"),
    _case("User:bob", "ALTER", "TOPIC", "orders", "DENIED", why="outside the prefix"),
    _case("User:carol", "ALTER_CONFIGS", "TOPIC", "other", "ALLOWED", why="wildcard resource name"),
    _case("User:carol", "ALTER", "TOPIC", "other", "DENIED", why="ALTER_CONFIGS does not imply ALTER"),
    _case("User:zed", "DELETE", "TOPIC", "pay-eu", "ALLOWED", why="wildcard principal"),
    _case("User:zed", "DELETE", "TOPIC", "pay-secret", "DENIED", why="DENY overrides ALLOW"),
    _case("User:bob", "DELETE", "TOPIC", "pay-secret", "DENIED", why="a wildcard DENY applies to everyone"),
    _case("User:dave", "CREATE", "TOPIC", "orders", "ALLOWED", host="10.0.0.9", why="the bound host"),
    _case("User:dave", "CREATE", "TOPIC", "orders", "DENIED", host="10.0.0.8", why="another host"),
    _case("User:erin", "ALTER", "CLUSTER", "kafka-cluster", "ALLOWED", why="cluster ACL"),
    _case("User:erin", "DESCRIBE", "CLUSTER", "kafka-cluster", "ALLOWED", why="ALTER implies DESCRIBE"),
    _case("User:erin", "ALTER_CONFIGS", "CLUSTER", "kafka-cluster", "DENIED", why="ALTER does not imply ALTER_CONFIGS"),
    _case("User:frank", "ALTER", "CLUSTER", "kafka-cluster", "ALLOWED", why="ALL"),
    _case("User:frank", "ALTER_CONFIGS", "CLUSTER", "kafka-cluster", "DENIED", why="DENY overrides ALL"),
    _case("User:gina", "ALTER", "TOPIC", "gamma", "ALLOWED", why="ALL on the topic"),
    _case("User:gina", "ALTER", "TOPIC", "gamma", "DENIED", host="10.0.0.66", why="a host-bound DENY"),
    _case("User:gina", "DELETE", "TOPIC", "gamma", "ALLOWED", host="10.0.0.66", why="the DENY names ALTER only"),
    _case(SUPER_USER, "ALTER_CONFIGS", "CLUSTER", "kafka-cluster", "ALLOWED", why="super user"),
    _case("User:nobody", "CREATE", "TOPIC", "other", "DENIED", why="no ACL found"),
    _case("User:nobody", "DESCRIBE", "CLUSTER", "kafka-cluster", "DENIED", why="no ACL found"),
]
