"""The differential suite's scenarios, as data: groups of calls, each group with the ACLs and topics it needs.

Names are relative to a group (`n("orders")` is this run's `<prefix>orders`);
ACL texts may say `{p}` for the prefix. Users: admin (a super user on both
upstreams), alice and bob (ordinary), mallory (the harness's probe user:
nothing else is granted to it); calls sent in Envelopes may be any principal. Nothing here says what the answer should be:
the real Kafka controller's answer is the expected one.
"""

from __future__ import annotations

import uuid
from typing import Any

from authz import Operation, PatternType, PermissionType, ResourceType
from envelope.apis import ApiKey
from envelope.config_resources import CONFIG_BROKER, CONFIG_TOPIC, OP_DELETE, OP_SET
from tests.interop.differential import Acl, Call, Group

ZERO = uuid.UUID(int=0)
UNKNOWN_ID = uuid.UUID("5ca1ab1e-0000-4000-8000-00000000d1ff")
BROKER = 1  # the real node's id, and the embedded controller's one registered broker
UNREGISTERED_BROKER = 99
TIMEOUT_MS = 30000
CLUSTER = "kafka-cluster"
PREFERRED, UNCLEAN = 0, 1
SHA_256, SHA_512 = 1, 2
UNKNOWN_CODE = 99  # a code Kafka 4.3 does not know: it reads it as UNKNOWN

CREATE_TOPICS_V, DELETE_TOPICS_V, DELETE_TOPICS_NAMES_V, CREATE_PARTITIONS_V = 7, 6, 5, 3
CREATE_ACLS_V, DELETE_ACLS_V, DESCRIBE_ACLS_V = 3, 3, 3
INCREMENTAL_V, ALTER_CONFIGS_V, QUOTAS_V, SCRAM_V = 1, 2, 1, 0
ELECT_V, REASSIGN_V, LIST_REASSIGN_V = 2, 1, 0


# --------------------------------------------------------------------------- request builders


def topic(name: str, partitions: int = 1, replication: int = 1, *, configs: dict[str, str | None] | None = None, assignments: list[list[int]] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": [{"partition_index": i, "broker_ids": b} for i, b in enumerate(assignments or [])],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def create(*topics: dict[str, Any], validate_only: bool = False) -> dict[str, Any]:
    return {"topics": list(topics), "timeout": TIMEOUT_MS, "validate_only": validate_only}


def delete(*topics: tuple[str | None, uuid.UUID]) -> dict[str, Any]:
    return {"topics": [{"name": name, "topic_id": topic_id} for name, topic_id in topics], "timeout": TIMEOUT_MS}


def delete_names(*names: str) -> dict[str, Any]:
    return {"topic_names": list(names), "timeout": TIMEOUT_MS}


def grow(*items: tuple[str, int] | tuple[str, int, list[list[int]] | None], validate_only: bool = False) -> dict[str, Any]:
    topics = []
    for item in items:
        assignments = item[2] if len(item) > 2 else None  # type: ignore[misc]
        topics.append({"name": item[0], "count": item[1], "assignments": None if assignments is None else [{"broker_ids": b} for b in assignments]})
    return {"topics": topics, "timeout": TIMEOUT_MS, "validate_only": validate_only}


def binding(
    name: str,
    principal: str,
    operation: int = Operation.READ,
    *,
    resource_type: int = ResourceType.TOPIC,
    pattern: int = PatternType.LITERAL,
    permission: int = PermissionType.ALLOW,
    host: str = "*",
) -> dict[str, Any]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def creations(*bindings: dict[str, Any]) -> dict[str, Any]:
    return {"creations": list(bindings)}


def acl_filter(
    name: str | None = None,
    principal: str | None = None,
    *,
    resource_type: int = ResourceType.ANY,
    pattern: int = PatternType.ANY,
    host: str | None = None,
    operation: int = Operation.ANY,
    permission: int = PermissionType.ANY,
) -> dict[str, Any]:
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": host,
        "operation": operation,
        "permission_type": permission,
    }


def deletions(*filters: dict[str, Any]) -> dict[str, Any]:
    return {"filters": list(filters)}


def incremental(*resources: tuple[int, str, list[tuple[str, int, str | None]]], validate_only: bool = False) -> dict[str, Any]:
    return {
        "resources": [
            {"resource_type": kind, "resource_name": name, "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in configs]}
            for kind, name, configs in resources
        ],
        "validate_only": validate_only,
    }


def legacy(*resources: tuple[int, str, dict[str, str | None]], validate_only: bool = False) -> dict[str, Any]:
    return {
        "resources": [
            {"resource_type": kind, "resource_name": name, "configs": [{"name": k, "value": v} for k, v in configs.items()]} for kind, name, configs in resources
        ],
        "validate_only": validate_only,
    }


def quotas(*entries: tuple[list[tuple[str, str | None]], list[tuple[str, float, bool]]], validate_only: bool = True) -> dict[str, Any]:
    return {
        "entries": [
            {
                "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
                "ops": [{"key": key, "value": value, "remove": remove} for key, value, remove in ops],
            }
            for entity, ops in entries
        ],
        "validate_only": validate_only,
    }


def upsert(name: str, mechanism: int = SHA_256, iterations: int = 4096, salted: bytes = b"\x01" * 32) -> dict[str, Any]:
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": b"\x02" * 16, "salted_password": salted}


def scram(deletions_: list[tuple[str, int]] = (), upsertions: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"deletions": [{"name": n, "mechanism": m} for n, m in deletions_], "upsertions": list(upsertions)}


def elect(partitions: dict[str, list[int]] | None, election_type: int = PREFERRED) -> dict[str, Any]:
    asked = None if partitions is None else [{"topic": t, "partitions": p} for t, p in partitions.items()]
    return {"election_type": election_type, "topic_partitions": asked, "timeout": TIMEOUT_MS}


def reassign(moves: dict[str, dict[int, list[int] | None]], allow_rf_change: bool = True) -> dict[str, Any]:
    return {
        "timeout": TIMEOUT_MS,
        "allow_replication_factor_change": allow_rf_change,
        "topics": [{"name": t, "partitions": [{"partition_index": p, "replicas": r} for p, r in parts.items()]} for t, parts in moves.items()],
    }


def listing(topics: dict[str, list[int]] | None) -> dict[str, Any]:
    return {"timeout": TIMEOUT_MS, "topics": None if topics is None else [{"name": t, "partition_indexes": p} for t, p in topics.items()]}


def ct(name: str, values: Any, user: str = "alice", host: str = "127.0.0.1") -> Call:
    return Call(name, ApiKey.CREATE_TOPICS, CREATE_TOPICS_V, values, user, host)


def dt(name: str, values: Any, user: str = "alice", host: str = "127.0.0.1", version: int = DELETE_TOPICS_V) -> Call:
    return Call(name, ApiKey.DELETE_TOPICS, version, values, user, host)


def cp(name: str, values: Any, user: str = "alice", host: str = "127.0.0.1") -> Call:
    return Call(name, ApiKey.CREATE_PARTITIONS, CREATE_PARTITIONS_V, values, user, host)


def ca(name: str, values: Any, user: str = "admin", host: str = "127.0.0.1") -> Call:
    return Call(name, ApiKey.CREATE_ACLS, CREATE_ACLS_V, values, user, host)


def da(name: str, values: Any, user: str = "admin", host: str = "127.0.0.1") -> Call:
    return Call(name, ApiKey.DELETE_ACLS, DELETE_ACLS_V, values, user, host)


def ds(name: str, values: Any, user: str = "admin", host: str = "127.0.0.1") -> Call:
    return Call(name, ApiKey.DESCRIBE_ACLS, DESCRIBE_ACLS_V, values, user, host)


def ic(name: str, values: Any, user: str = "alice", host: str = "127.0.0.1") -> Call:
    return Call(name, ApiKey.INCREMENTAL_ALTER_CONFIGS, INCREMENTAL_V, values, user, host)


def ac(name: str, values: Any, user: str = "alice", host: str = "127.0.0.1") -> Call:
    return Call(name, ApiKey.ALTER_CONFIGS, ALTER_CONFIGS_V, values, user, host)


def qa(name: str, values: Any, user: str = "admin") -> Call:
    return Call(name, ApiKey.ALTER_CLIENT_QUOTAS, QUOTAS_V, values, user)


def sc(name: str, values: Any, user: str = "admin") -> Call:
    return Call(name, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, SCRAM_V, values, user)


def el(name: str, values: Any, user: str = "admin") -> Call:
    return Call(name, ApiKey.ELECT_LEADERS, ELECT_V, values, user)


def ra(name: str, values: Any, user: str = "admin") -> Call:
    return Call(name, ApiKey.ALTER_PARTITION_REASSIGNMENTS, REASSIGN_V, values, user)


def lr(name: str, values: Any, user: str = "admin") -> Call:
    return Call(name, ApiKey.LIST_PARTITION_REASSIGNMENTS, LIST_REASSIGN_V, values, user)


TOKEN_CREATE_V, TOKEN_RENEW_V, TOKEN_EXPIRE_V, TOKEN_DESCRIBE_V = 3, 2, 2, 3
DAY_MS, HOUR_MS, MINUTE_MS = 86_400_000, 3_600_000, 60_000
LONG_MAX, LONG_MIN = 2**63 - 1, -(2**63)
MANY_RENEWERS = 10_000
# Principals of the token groups: `{p}` inside the name (not at its start, where the harness would take it for a topic).
OWNER, RENEWER, STRANGER, REQUESTER = "User:t-{p}owner", "User:t-{p}renewer", "User:t-{p}stranger", "User:t-{p}requester"


def _principal(n: Any, text: str) -> tuple[str, str]:
    kind, _, name = n.resource(text).partition(":")
    return kind, name


def new_token(owner: tuple[str | None, str | None] = (None, None), renewers: tuple[str, ...] = (), lifetime: int = -1) -> Any:
    """CreateDelegationToken values; principals may say `{p}`."""

    def values(n: Any) -> dict[str, Any]:
        return {
            "owner_principal_type": owner[0],
            "owner_principal_name": None if owner[1] is None else n.resource(owner[1]),
            "renewers": [dict(zip(("principal_type", "principal_name"), _principal(n, r), strict=True)) for r in renewers],
            "max_lifetime": lifetime,
        }

    return values


def many_renewers(count: int) -> tuple[str, ...]:
    return tuple(f"User:t-{{p}}r{i}" for i in range(count))


def renewal(label: str, period: int = -1) -> Any:
    return lambda n: {"hmac": n.hmac(label), "renew_period": period}


def expiry(label: str, period: int = -1) -> Any:
    return lambda n: {"hmac": n.hmac(label), "expiry_time_period": period}


def raw_hmac(hmac: bytes, period: int = -1) -> Any:
    return lambda _n: {"hmac": hmac, "renew_period": period}


def owners(*principals: str) -> Any:
    return lambda n: {"owners": [dict(zip(("principal_type", "principal_name"), _principal(n, o), strict=True)) for o in principals]}


def tc(name: str, values: Any, user: str = "alice", **how: Any) -> Call:
    """CreateDelegationToken; `how`: via, principal, token_login, keep, pause (see Call), version."""
    return Call(name, ApiKey.CREATE_DELEGATION_TOKEN, how.pop("version", TOKEN_CREATE_V), values, user, **how)


def tr(name: str, values: Any, user: str = "alice", **how: Any) -> Call:
    return Call(name, ApiKey.RENEW_DELEGATION_TOKEN, how.pop("version", TOKEN_RENEW_V), values, user, **how)


def te(name: str, values: Any, user: str = "alice", **how: Any) -> Call:
    return Call(name, ApiKey.EXPIRE_DELEGATION_TOKEN, how.pop("version", TOKEN_EXPIRE_V), values, user, **how)


def td(name: str, values: Any, user: str = "admin", **how: Any) -> Call:
    """DescribeDelegationToken where a client reads without the proxy (a broker answers it, not the controller)."""
    return Call(name, ApiKey.DESCRIBE_DELEGATION_TOKEN, how.pop("version", TOKEN_DESCRIBE_V), values, user, via="read", **how)


def env(principal: str, **how: Any) -> dict[str, Any]:
    """An Envelope to the controller as `principal`."""
    return {"via": "envelope", "principal": principal, **how}


def unregister(broker_id: int) -> Any:
    return lambda _n: {"broker_id": broker_id}


def add_voter(voter_id: int, directory: uuid.UUID | None, listeners: list[tuple[str, str, int]], cluster_id: str | None = None) -> Any:
    return lambda _n: {
        "cluster_id": cluster_id,
        "timeout": TIMEOUT_MS,
        "voter_id": voter_id,
        "voter_directory_id": directory,
        "listeners": [{"name": name, "host": host, "port": port} for name, host, port in listeners],
        "ack_when_committed": True,
    }


def remove_voter(voter_id: int, directory: uuid.UUID | None, cluster_id: str | None = None) -> Any:
    return lambda _n: {"cluster_id": cluster_id, "voter_id": voter_id, "voter_directory_id": directory}


def ub(name: str, values: Any, user: str = "admin") -> Call:
    return Call(name, ApiKey.UNREGISTER_BROKER, 0, values, user)


def av(name: str, values: Any, user: str = "admin", version: int = 1) -> Call:
    return Call(name, ApiKey.ADD_RAFT_VOTER, version, values, user)


def rv(name: str, values: Any, user: str = "admin") -> Call:
    return Call(name, ApiKey.REMOVE_RAFT_VOTER, 0, values, user)


# --------------------------------------------------------------------------- groups


def _groups() -> list[Group]:
    groups: list[Group] = []

    # DeleteTopics: a DENY DESCRIBE beside a wildcard ALLOW, names and ids.
    groups.append(
        Group(
            "delete-topics: DENY DESCRIBE beside a wildcard ALLOW",
            acls=(
                Acl("User:alice", "ALL", name="*", pattern="LITERAL"),
                Acl("User:alice", "DESCRIBE", name="{p}secret", pattern="LITERAL", permission="DENY"),
                Acl("User:bob", "DELETE", name="{p}bobdel", pattern="LITERAL"),
            ),
            topics=("a", "secret", "keep", "bobdel", "byid"),
            calls=(
                dt("alice deletes the topic she may not describe, by name", lambda n: delete((n("secret"), ZERO))),
                dt("alice deletes it by id: no name comes back", lambda n: delete((None, n.id("secret")))),
                dt("alice deletes it with v5 (names only)", lambda n: delete_names(n("secret")), version=DELETE_TOPICS_NAMES_V),
                dt("alice deletes an allowed topic by name", lambda n: delete((n("a"), ZERO))),
                dt("alice deletes an allowed topic by id", lambda n: delete((None, n.id("byid")))),
                dt("alice deletes a topic that does not exist (describable through the wildcard)", lambda n: delete((n("nothing"), ZERO))),
                dt("alice deletes an unknown topic id", lambda _n: delete((None, UNKNOWN_ID))),
                dt("bob deletes a topic he has no ACL for", lambda n: delete((n("keep"), ZERO)), user="bob"),
                dt("bob deletes it by id: no name", lambda n: delete((None, n.id("keep"))), user="bob"),
                dt("bob deletes a topic that does not exist: not describable", lambda n: delete((n("ghost"), ZERO)), user="bob"),
                dt("bob deletes an unknown id", lambda _n: delete((None, UNKNOWN_ID)), user="bob"),
                dt("bob deletes with DELETE only (implies DESCRIBE)", lambda n: delete((n("bobdel"), ZERO)), user="bob"),
                dt("mixed batch: allowed, denied, unknown, by id", lambda n: delete((n("keep"), ZERO), (n("secret"), ZERO), (n("nope"), ZERO), (None, n.id("secret")))),
            ),
        )
    )

    # DeleteTopics: DELETE on the CLUSTER resource allows every topic.
    groups.append(
        Group(
            "delete-topics: DELETE granted on the cluster",
            acls=(Acl("User:alice", "DELETE", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),),
            topics=("x", "y", "z"),
            calls=(
                dt("alice deletes a topic by name with cluster DELETE", lambda n: delete((n("x"), ZERO))),
                dt("alice deletes a topic by id with cluster DELETE", lambda n: delete((None, n.id("y")))),
                dt("alice deletes an unknown topic with cluster DELETE", lambda n: delete((n("missing"), ZERO))),
                dt("alice deletes with v5 and cluster DELETE", lambda n: delete_names(n("z")), version=DELETE_TOPICS_NAMES_V),
                dt("bob has no cluster DELETE", lambda n: delete((n("missing"), ZERO)), user="bob"),
            ),
        )
    )

    # DeleteTopics: what a client library would refuse to send.
    groups.append(
        Group(
            "delete-topics: malformed requests",
            topics=("m1", "m2", "m3", "m4"),
            calls=(
                dt("neither name nor id", lambda _n: delete((None, ZERO)), user="admin"),
                dt("both name and id", lambda n: delete((n("m1"), n.id("m1"))), user="admin"),
                dt("the same id twice", lambda n: delete((None, n.id("m1")), (None, n.id("m1"))), user="admin"),
                dt("the same unknown id twice", lambda _n: delete((None, UNKNOWN_ID), (None, UNKNOWN_ID)), user="admin"),
                dt("the same name twice", lambda n: delete((n("m1"), ZERO), (n("m1"), ZERO)), user="admin"),
                dt("the same name three times", lambda n: delete((n("m1"), ZERO), (n("m1"), ZERO), (n("m1"), ZERO)), user="admin"),
                dt("a name and its own id", lambda n: delete((n("m2"), ZERO), (None, n.id("m2"))), user="admin"),
                dt("a name and its id, by a caller who may not delete it", lambda n: delete((n("m3"), ZERO), (None, n.id("m3"))), user="bob"),
                dt("v5 duplicate names", lambda n: delete_names(n("m4"), n("m4")), user="admin", version=DELETE_TOPICS_NAMES_V),
                dt("an empty name", lambda _n: delete(("", ZERO)), user="admin"),
                dt("an invalid name", lambda _n: delete(("no spaces!", ZERO)), user="admin"),
                dt("__cluster_metadata", lambda _n: delete(("__cluster_metadata", ZERO)), user="admin"),
                dt("nothing at all", lambda _n: delete(), user="admin"),
                dt("mixed: neither, both, duplicate and a good one", lambda n: delete((None, ZERO), (n("m1"), n.id("m1")), (n("m4"), ZERO), (n("m4"), ZERO), (n("m3"), ZERO)), user="admin"),
            ),
        )
    )

    # CreateTopics: validation, as a super user.
    long_name = "x" * 250
    groups.append(
        Group(
            "create-topics: validation",
            topics=("exists", "dot.ted"),
            calls=(
                ct("__cluster_metadata", lambda _n: create(topic("__cluster_metadata")), user="admin"),
                ct("__cluster_metadata as alice", lambda _n: create(topic("__cluster_metadata"))),
                ct("a duplicate name", lambda n: create(topic(n("dup")), topic(n("dup")), validate_only=True), user="admin"),
                ct("an empty name", lambda _n: create(topic("")), user="admin"),
                ct("a dot", lambda _n: create(topic(".")), user="admin"),
                ct("two dots", lambda _n: create(topic("..")), user="admin"),
                ct("too long", lambda _n: create(topic(long_name)), user="admin"),
                ct("illegal characters", lambda n: create(topic(n("sp ace"))), user="admin"),
                ct("collides with an existing topic", lambda n: create(topic(n("dot_ted")), validate_only=True), user="admin"),
                ct("already exists", lambda n: create(topic(n("exists"))), user="admin"),
                ct("replication factor 0", lambda n: create(topic(n("rf0"), 1, 0)), user="admin"),
                ct("replication factor -2", lambda n: create(topic(n("rfm2"), 1, -2)), user="admin"),
                ct("0 partitions and replication factor 0", lambda n: create(topic(n("p0rf0"), 0, 0)), user="admin"),
                ct("0 partitions", lambda n: create(topic(n("p0"), 0, 1)), user="admin"),
                ct("-5 partitions", lambda n: create(topic(n("pm5"), -5, 1)), user="admin"),
                ct("more replicas than brokers", lambda n: create(topic(n("rf3"), 1, 3)), user="admin"),
                ct("assignments and a partition count", lambda n: create(topic(n("as1"), 1, -1, assignments=[[BROKER]])), user="admin"),
                ct("assignments and a replication factor", lambda n: create(topic(n("as2"), -1, 1, assignments=[[BROKER]])), user="admin"),
                ct("an empty replica list", lambda n: create(topic(n("as3"), -1, -1, assignments=[[]])), user="admin"),
                ct("an unregistered broker", lambda n: create(topic(n("as4"), -1, -1, assignments=[[UNREGISTERED_BROKER]])), user="admin"),
                ct("a broker twice", lambda n: create(topic(n("as5"), -1, -1, assignments=[[BROKER, BROKER]])), user="admin"),
                ct(
                    "the same partition assigned twice",
                    lambda n: {
                        **create(topic(n("as6"), -1, -1)),
                        "topics": [{**topic(n("as6"), -1, -1), "assignments": [{"partition_index": 0, "broker_ids": [BROKER]}, {"partition_index": 0, "broker_ids": [BROKER]}]}],
                    },
                    user="admin",
                ),
                ct(
                    "partitions that are not 0..n-1",
                    lambda n: {**create(), "topics": [{**topic(n("as7"), -1, -1), "assignments": [{"partition_index": 1, "broker_ids": [BROKER]}]}]},
                    user="admin",
                ),
                ct("a null config value", lambda n: create(topic(n("cfgnull"), configs={"retention.ms": None, "cleanup.policy": None})), user="admin"),
                ct("more than 10,000 partitions in one request", lambda n: create(topic(n("big1"), 6000), topic(n("big2"), 6000), validate_only=True), user="admin"),
                ct("10,000 partitions: more than 10,000 records", lambda n: create(topic(n("big3"), 10000), validate_only=True), user="admin"),
                ct("9,998 partitions and a config: 10,000 records", lambda n: create(topic(n("big4"), 9998, configs={"retention.ms": "1000"}), validate_only=True), user="admin"),
                ct("9,998 partitions and two configs: 10,001 records", lambda n: create(topic(n("big5"), 9998, configs={"retention.ms": "1000", "flush.ms": "1000"}), validate_only=True), user="admin"),
                ct("manual assignment, validate only", lambda n: create(topic(n("manual"), -1, -1, assignments=[[BROKER], [BROKER]]), validate_only=True), user="admin"),
                ct("alice may not create, and the name is invalid", lambda _n: create(topic("bad name!"))),
                ct("nothing at all", lambda _n: create(), user="admin"),
            ),
        )
    )

    # CreateTopics: who may create, and who gets the KIP-525 details.
    groups.append(
        Group(
            "create-topics: authorization and KIP-525 details",
            acls=(
                Acl("User:alice", "CREATE"),
                Acl("User:bob", "CREATE", name="{p}b"),
                Acl("User:bob", "DESCRIBE_CONFIGS", name="{p}b"),
                Acl("User:alice", "ALTER_CONFIGS", name="{p}ac", pattern="LITERAL"),
                Acl("User:alice", "CREATE", name="{p}deny", permission="DENY"),
                Acl("User:alice", "CREATE", name="{p}host", pattern="PREFIXED", host="127.0.0.2"),
            ),
            calls=(
                ct("alice creates without DESCRIBE_CONFIGS: no details", lambda n: create(topic(n("a1")), validate_only=True)),
                ct("alice creates for real without DESCRIBE_CONFIGS", lambda n: create(topic(n("a2")))),
                ct("alice creates where ALTER_CONFIGS implies DESCRIBE_CONFIGS", lambda n: create(topic(n("ac")), validate_only=True)),
                ct("alice is denied CREATE by a prefixed DENY", lambda n: create(topic(n("deny1")), validate_only=True)),
                ct("alice outside her prefix", lambda _n: create(topic("elsewhere-topic"), validate_only=True)),
                ct("bob creates with DESCRIBE_CONFIGS: details", lambda n: create(topic(n("b1"), 2, 1), validate_only=True), user="bob"),
                ct("bob creates with configs: details with them", lambda n: create(topic(n("b2"), configs={"retention.ms": "3600000"}), validate_only=True), user="bob"),
                ct("bob outside his prefix", lambda n: create(topic(n("a3")), validate_only=True), user="bob"),
                ct("mixed batch: allowed, denied, duplicate, invalid", lambda n: create(topic(n("a4")), topic(n("deny2")), topic(n("a5")), topic(n("a5")), topic(n("a 6")), validate_only=True)),
                ct("alice from the host her extra grant names", lambda n: create(topic(n("hostx")), validate_only=True), host="127.0.0.2"),
                ct("the deny holds from that host too", lambda n: create(topic(n("deny3")), validate_only=True), host="127.0.0.2"),
                ct("mallory has nothing", lambda n: create(topic(n("m")), validate_only=True), user="mallory"),
            ),
        )
    )

    # CreateTopics with CREATE on the cluster, DENY precedence and wildcards.
    groups.append(
        Group(
            "create-topics: cluster CREATE, DENY precedence, wildcards",
            acls=(
                Acl("User:alice", "CREATE", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),
                Acl("User:bob", "CREATE", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL", permission="DENY"),
                Acl("User:bob", "CREATE", name="{p}"),
                Acl("User:*", "CREATE", name="{p}star", pattern="PREFIXED"),
                Acl("User:*", "ALL", name="{p}stardeny", pattern="LITERAL", permission="DENY"),
                Acl("Group:bob", "CREATE", name="{p}group", pattern="PREFIXED"),
                Acl("User:bob", "ALL", name="{p}alldeny", pattern="PREFIXED", permission="DENY"),
                Acl("User:bob", "CREATE", name="{p}alldeny-lit", pattern="LITERAL"),
            ),
            calls=(
                ct("alice creates anywhere with cluster CREATE", lambda _n: create(topic("anywhere-dc-topic"), validate_only=True)),
                ct("alice creates and a topic DENY does not matter", lambda n: create(topic(n("stardeny")), validate_only=True)),
                ct("bob: a cluster DENY leaves the topic grant", lambda n: create(topic(n("t1")), validate_only=True), user="bob"),
                ct("bob: a User:* grant", lambda n: create(topic(n("star1")), validate_only=True), user="bob"),
                ct("mallory: the User:* grant applies to everyone", lambda n: create(topic(n("star2")), validate_only=True), user="mallory"),
                ct("mallory: a User:* DENY ALL", lambda n: create(topic(n("stardeny")), validate_only=True), user="mallory"),
                ct("bob: a Group principal is not bob", lambda n: create(topic("x" + n("group")), validate_only=True), user="bob"),
                ct("bob: DENY ALL prefixed beats ALLOW literal", lambda n: create(topic(n("alldeny-lit")), validate_only=True), user="bob"),
                ct("bob: DENY ALL prefixed on another name", lambda n: create(topic(n("alldeny2")), validate_only=True), user="bob"),
                ct("alice: cluster CREATE, __cluster_metadata", lambda _n: create(topic("__cluster_metadata"), validate_only=True)),
            ),
        )
    )

    # CreatePartitions.
    groups.append(
        Group(
            "create-partitions",
            acls=(
                Acl("User:alice", "ALTER", name="{p}grow"),
                Acl("User:alice", "ALTER", name="{p}grow3", pattern="LITERAL", permission="DENY"),
                Acl("User:bob", "ALTER", name="*", pattern="LITERAL", host="127.0.0.2"),
            ),
            topics=("grow1", "grow2", "grow3", "other"),
            calls=(
                cp("alice grows a topic", lambda n: grow((n("grow1"), 2))),
                cp("alice asks for the same count", lambda n: grow((n("grow1"), 2))),
                cp("alice asks for fewer", lambda n: grow((n("grow1"), 1))),
                cp("alice asks for 0", lambda n: grow((n("grow1"), 0))),
                cp("validate only", lambda n: grow((n("grow2"), 5), validate_only=True)),
                cp("an unknown topic under her prefix", lambda n: grow((n("grow-missing"), 2))),
                cp("a topic she may not alter", lambda n: grow((n("other"), 2))),
                cp("a prefixed grant and a literal DENY", lambda n: grow((n("grow3"), 2))),
                cp("the same topic twice", lambda n: grow((n("grow2"), 3), (n("grow2"), 4))),
                cp("assignments that do not match the count", lambda n: grow((n("grow2"), 3, [[BROKER]]))),
                cp("an assignment with an unregistered broker", lambda n: grow((n("grow2"), 2, [[UNREGISTERED_BROKER]]))),
                cp("an assignment with a broker twice", lambda n: grow((n("grow2"), 2, [[BROKER, BROKER]]))),
                cp("an assignment with two replicas for a factor of one", lambda n: grow((n("grow2"), 2, [[BROKER, UNREGISTERED_BROKER]]))),
                cp("an empty assignment", lambda n: grow((n("grow2"), 2, [[]]))),
                cp("a good assignment", lambda n: grow((n("grow2"), 2, [[BROKER]]))),
                cp("bob from the host his wildcard names", lambda n: grow((n("other"), 3)), user="bob", host="127.0.0.2"),
                cp("bob from another host", lambda n: grow((n("other"), 4)), user="bob"),
                cp("mixed batch", lambda n: grow((n("grow1"), 3), (n("other"), 9), (n("nope"), 2), (n("grow3"), 5))),
                cp("nothing at all", lambda _n: grow(), user="admin"),
            ),
        )
    )

    # CreateAcls: every invalid binding, one by one, as a super user.
    def c(**kwargs: Any) -> Any:
        """A CreateAcls request with one binding: carol reads `{p}t`, but for what `kwargs` change."""
        spec = {"name": "{p}t", "principal": "User:{p}carol", **kwargs}
        name, principal = str(spec.pop("name")), str(spec.pop("principal"))
        return lambda n: creations(binding(n.resource(name), n.resource(principal), **spec))

    groups.append(
        Group(
            "create-acls: validation one binding at a time",
            calls=(
                ca("a valid literal binding", c()),
                ca("a valid prefixed DENY", c(pattern=PatternType.PREFIXED, permission=PermissionType.DENY, operation=Operation.ALL)),
                ca("the same binding again", c()),
                ca("a CLUSTER resource with another name", c(name="other-cluster", resource_type=ResourceType.CLUSTER, operation=Operation.ALTER)),
                ca("the CLUSTER resource by its name", c(name=CLUSTER, resource_type=ResourceType.CLUSTER, operation=Operation.ALTER)),
                ca("a CLUSTER resource with an empty name", c(name="", resource_type=ResourceType.CLUSTER)),
                ca("an empty resource name", c(name="")),
                ca("an unknown resource type code", c(resource_type=UNKNOWN_CODE)),
                ca("an unknown pattern type code", c(pattern=UNKNOWN_CODE)),
                ca("an unknown operation code", c(operation=UNKNOWN_CODE)),
                ca("an unknown permission code", c(permission=UNKNOWN_CODE)),
                ca("resource type UNKNOWN (0)", c(resource_type=ResourceType.UNKNOWN)),
                ca("pattern type UNKNOWN (0)", c(pattern=PatternType.UNKNOWN)),
                ca("operation UNKNOWN (0)", c(operation=Operation.UNKNOWN)),
                ca("permission UNKNOWN (0)", c(permission=PermissionType.UNKNOWN)),
                ca("resource type ANY", c(resource_type=ResourceType.ANY)),
                ca("pattern type MATCH", c(pattern=PatternType.MATCH)),
                ca("pattern type ANY", c(pattern=PatternType.ANY)),
                ca("operation ANY", c(operation=Operation.ANY)),
                ca("permission ANY", c(permission=PermissionType.ANY)),
                ca("a principal without a type", c(principal="{p}carol")),
                ca("a principal with an empty type", c(principal=":{p}carol")),
                ca("a principal with an empty name", c(principal="User:", name="{p}emptyname")),
                ca("another principal type", c(principal="Group:{p}g")),
                ca("User:* on a prefixed name", c(principal="User:*", name="{p}star", pattern=PatternType.PREFIXED)),
                ca("a host that is no address", c(host="not an address")),
                ca("an IPv6 host", c(host="::1")),
                ca("TWO_PHASE_COMMIT on a transactional id", c(resource_type=ResourceType.TRANSACTIONAL_ID, name="{p}tx", operation=Operation.TWO_PHASE_COMMIT)),
                ca("CREATE_TOKENS on a user", c(resource_type=ResourceType.USER, name="User:{p}dave", operation=Operation.CREATE_TOKENS)),
                ca("a group resource", c(resource_type=ResourceType.GROUP, name="{p}group")),
                ca(
                    "a mixed batch: valid, invalid, valid twice",
                    lambda n: creations(
                        binding(n("m1"), n.resource("User:{p}erin")),
                        binding("", n.resource("User:{p}erin")),
                        binding(n("m2"), n.resource("{p}erin")),
                        binding(n("m1"), n.resource("User:{p}erin")),
                    ),
                ),
                ca("a batch with one filter-only value", lambda n: creations(binding(n("m3"), n.resource("User:{p}erin")), binding(n("m4"), n.resource("User:{p}erin"), operation=Operation.ANY))),
                ca("alice may not create ACLs", c(), user="alice"),
                ca("alice may not, even with a filter-only value", c(operation=Operation.ANY), user="alice"),
                ca("alice may not, with an UNKNOWN code", c(operation=Operation.UNKNOWN), user="alice"),
                ca("nothing at all", lambda _n: creations()),
                ds("what was stored", lambda n: acl_filter(principal=n.resource("User:{p}carol"))),
                ds("what was stored for other principals", lambda n: acl_filter(name=n("m1"))),
            ),
        )
    )

    # DeleteAcls and DescribeAcls filters.
    carol, dan = "User:{p}carol", "User:{p}dan"
    groups.append(
        Group(
            "delete-acls and describe-acls: filters",
            acls=(
                Acl(carol, "READ", name="{p}orders", pattern="LITERAL"),
                Acl(carol, "WRITE", name="{p}orders", pattern="LITERAL"),
                Acl(carol, "READ", name="{p}ord", pattern="PREFIXED"),
                Acl(carol, "READ", name="{p}pay", pattern="LITERAL", permission="DENY", host="127.0.0.9"),
                Acl(dan, "DESCRIBE", name="{p}orders", pattern="LITERAL"),
                Acl(dan, "ALTER", resource_type="GROUP", name="{p}grp", pattern="PREFIXED"),
                Acl(dan, "ALTER", name="{p}orders-eu", pattern="LITERAL"),
            ),
            calls=(
                ds("describe by principal", lambda n: acl_filter(principal=n.resource(carol))),
                ds("describe a literal name", lambda n: acl_filter(name=n("orders"), pattern=PatternType.LITERAL)),
                ds("describe a name with any pattern", lambda n: acl_filter(name=n("ord"))),
                ds("describe MATCH: everything that applies to a name", lambda n: acl_filter(name=n("orders-eu"), pattern=PatternType.MATCH)),
                ds("describe MATCH without a name, one principal", lambda n: acl_filter(principal=n.resource(dan), pattern=PatternType.MATCH)),
                ds("describe prefixed ones of one principal", lambda n: acl_filter(principal=n.resource(carol), pattern=PatternType.PREFIXED)),
                ds("describe by host", lambda n: acl_filter(principal=n.resource(carol), host="127.0.0.9")),
                ds("describe by operation", lambda n: acl_filter(principal=n.resource(carol), operation=Operation.WRITE)),
                ds("describe by permission", lambda n: acl_filter(principal=n.resource(carol), permission=PermissionType.DENY)),
                ds("describe by resource type", lambda n: acl_filter(principal=n.resource(dan), resource_type=ResourceType.GROUP)),
                ds("describe nothing that matches", lambda n: acl_filter(principal=n.resource("User:{p}nobody"))),
                ds("alice may not describe ACLs", lambda n: acl_filter(principal=n.resource(carol)), user="alice"),
                da("alice may not delete ACLs", lambda n: deletions(acl_filter(principal=n.resource(carol))), user="alice"),
                da("an unknown resource type code", lambda n: deletions(acl_filter(principal=n.resource(carol), resource_type=UNKNOWN_CODE))),
                da("an unknown operation code", lambda n: deletions(acl_filter(principal=n.resource(carol), operation=UNKNOWN_CODE))),
                da("an unknown pattern code beside a good filter", lambda n: deletions(acl_filter(principal=n.resource(dan), pattern=UNKNOWN_CODE), acl_filter(principal=n.resource("User:{p}none")))),
                da("operation UNKNOWN (0)", lambda n: deletions(acl_filter(principal=n.resource(carol), operation=Operation.UNKNOWN))),
                da("overlapping filters each report what they match", lambda n: deletions(acl_filter(name=n("orders"), pattern=PatternType.LITERAL, principal=n.resource(carol)), acl_filter(principal=n.resource(carol), operation=Operation.READ))),
                ds("what is left of carol's", lambda n: acl_filter(principal=n.resource(carol))),
                da("MATCH deletes what applies to a name", lambda n: deletions(acl_filter(name=n("orders-eu"), pattern=PatternType.MATCH, principal=n.resource(dan)))),
                da("a filter that matches nothing", lambda n: deletions(acl_filter(principal=n.resource("User:{p}nobody")))),
                da("the same filter twice", lambda n: deletions(acl_filter(principal=n.resource(carol)), acl_filter(principal=n.resource(carol)))),
                ds("what is left of dan's", lambda n: acl_filter(principal=n.resource(dan))),
                da("no filters", lambda _n: deletions()),
            ),
        )
    )

    # Implied operations and hosts, seen through what each API needs.
    groups.append(
        Group(
            "implied operations and host rules",
            acls=(
                Acl("User:alice", "ALTER", name="{p}alt", pattern="LITERAL"),
                Acl("User:alice", "DELETE", name="{p}del", pattern="LITERAL"),
                Acl("User:alice", "READ", name="{p}read", pattern="LITERAL"),
                Acl("User:alice", "WRITE", name="{p}write", pattern="LITERAL"),
                Acl("User:alice", "DESCRIBE", name="{p}desc", pattern="LITERAL"),
                Acl("User:alice", "READ", name="{p}deny-read", pattern="LITERAL", permission="DENY"),
                Acl("User:alice", "DELETE", name="{p}deny-read", pattern="LITERAL"),
                Acl("User:alice", "DELETE", name="{p}h", pattern="PREFIXED", host="127.0.0.2"),
                Acl("User:alice", "DELETE", name="{p}h", pattern="PREFIXED", host="127.0.0.3", permission="DENY"),
                Acl("User:alice", "ALTER_CONFIGS", name="{p}cfg", pattern="LITERAL"),
            ),
            topics=("alt", "del", "read", "write", "desc", "deny-read", "h1", "h2", "h3", "cfg"),
            calls=(
                dt("ALTER implies DESCRIBE but not DELETE", lambda n: delete((n("alt"), ZERO))),
                dt("READ implies DESCRIBE, not DELETE (by id)", lambda n: delete((None, n.id("read")))),
                dt("WRITE implies DESCRIBE, not DELETE", lambda n: delete((n("write"), ZERO))),
                dt("DESCRIBE alone", lambda n: delete((None, n.id("desc")))),
                dt("a DENY READ does not deny DESCRIBE", lambda n: delete((n("deny-read"), ZERO))),
                dt("DELETE from the host it names", lambda n: delete((n("h1"), ZERO)), host="127.0.0.2"),
                dt("DELETE from another host", lambda n: delete((n("h2"), ZERO))),
                dt("DELETE from the host a DENY names", lambda n: delete((n("h3"), ZERO)), host="127.0.0.3"),
                dt("DELETE implies DESCRIBE", lambda n: delete((n("del"), ZERO))),
                cp("ALTER on a topic allows CreatePartitions", lambda n: grow((n("alt"), 2), validate_only=True)),
                cp("DELETE does not", lambda n: grow((n("h2"), 2), validate_only=True)),
                ic("ALTER_CONFIGS allows IncrementalAlterConfigs", lambda n: incremental((CONFIG_TOPIC, n("cfg"), [("retention.ms", OP_SET, "3600000")]), validate_only=True)),
                ic("ALTER does not", lambda n: incremental((CONFIG_TOPIC, n("alt"), [("retention.ms", OP_SET, "3600000")]), validate_only=True)),
            ),
        )
    )

    # Cluster-level APIs: who may, and validation.
    groups.append(
        Group(
            "cluster grants: reassignments, elections, listing",
            acls=(
                Acl("User:alice", "ALTER", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),
                Acl("User:bob", "DESCRIBE", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),
                Acl("User:bob", "ALTER", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL", permission="DENY"),
            ),
            topics=("r1", "r2"),
            calls=(
                el("alice elects with cluster ALTER", lambda n: elect({n("r1"): [0]}), user="alice"),
                el("bob is denied ALTER", lambda n: elect({n("r1"): [0]}), user="bob"),
                el("mallory has nothing", lambda n: elect({n("r1"): [0, 1]}), user="mallory"),
                el("an unknown topic", lambda n: elect({n("missing"): [0]})),
                el("an unknown partition", lambda n: elect({n("r1"): [5]})),
                el("unclean", lambda n: elect({n("r1"): [0]}, UNCLEAN)),
                el("an unknown election type", lambda n: elect({n("r1"): [0]}, 7)),
                el("an unknown election type with nothing asked", lambda _n: elect({}, 7)),
                el("nothing asked", lambda _n: elect({})),
                el("mixed", lambda n: elect({n("r1"): [0, 3], n("r2"): [0], n("gone"): [1]})),
                ra("alice reassigns to the current replicas", lambda n: reassign({n("r1"): {0: [BROKER]}}), user="alice"),
                ra("bob is denied", lambda n: reassign({n("r1"): {0: [BROKER]}, n("r2"): {0: None}}), user="bob"),
                ra("an unregistered broker", lambda n: reassign({n("r1"): {0: [BROKER, UNREGISTERED_BROKER]}})),
                ra("a broker twice", lambda n: reassign({n("r1"): {0: [BROKER, BROKER]}})),
                ra("an empty replica list", lambda n: reassign({n("r1"): {0: []}})),
                ra("cancel with nothing in progress", lambda n: reassign({n("r1"): {0: None}})),
                ra("an unknown partition", lambda n: reassign({n("r1"): {4: [BROKER]}})),
                ra("an unknown topic", lambda n: reassign({n("missing"): {0: [BROKER]}})),
                ra("a changed replication factor refused", lambda n: reassign({n("r2"): {0: [BROKER, UNREGISTERED_BROKER]}}, allow_rf_change=False)),
                ra("nothing asked", lambda _n: reassign({})),
                ra("mixed", lambda n: reassign({n("r1"): {0: [BROKER], 1: [BROKER]}, n("r2"): {0: [BROKER]}})),
                lr("bob lists with DESCRIBE", lambda _n: listing(None), user="bob"),
                lr("alice: ALTER does not imply DESCRIBE on the cluster", lambda n: listing({n("r1"): [0, 1]}), user="alice"),
                lr("mallory lists nothing", lambda _n: listing(None), user="mallory"),
                lr("named topics", lambda n: listing({n("r1"): [0], n("missing"): [0]})),
                lr("an empty list", lambda _n: listing({})),
            ),
        )
    )

    # Client quotas.
    alice_q = [("user", "{p}qa")]
    groups.append(
        Group(
            "alter-client-quotas",
            acls=(Acl("User:bob", "ALTER_CONFIGS", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),),
            quota_entities=((("user", "{p}qa"),), (("user", "{p}qb"), ("client-id", "{p}cb"))),
            calls=(
                qa("a valid user quota", lambda n: quotas(([(k, n.resource(v)) for k, v in alice_q], [("producer_byte_rate", 1024.0, False)]))),
                qa("the default user", lambda _n: quotas(([("user", None)], [("consumer_byte_rate", 2048.0, False)]))),
                qa("the default client-id", lambda _n: quotas(([("client-id", None)], [("request_percentage", 50.5, False)]))),
                qa("user and client-id", lambda n: quotas(([("user", n("u")), ("client-id", n("c"))], [("controller_mutation_rate", 10.0, False)]))),
                qa("an unknown key", lambda n: quotas(([("user", n("u"))], [("no_such_quota", 1.0, False)]))),
                qa("zero", lambda n: quotas(([("user", n("u"))], [("producer_byte_rate", 0.0, False)]))),
                qa("negative", lambda n: quotas(([("user", n("u"))], [("request_percentage", -1.0, False)]))),
                qa("a fraction of a byte", lambda n: quotas(([("user", n("u"))], [("producer_byte_rate", 1.5, False)]))),
                qa("too large for a long", lambda n: quotas(([("user", n("u"))], [("consumer_byte_rate", 1e20, False)]))),
                qa("a connection rate on an ip", lambda _n: quotas(([("ip", "127.0.0.9")], [("connection_creation_rate", 10.0, False)]))),
                qa("too large for an int", lambda _n: quotas(([("ip", "127.0.0.9")], [("connection_creation_rate", 3e9, False)]))),
                qa("a user key on an ip", lambda _n: quotas(([("ip", "127.0.0.9")], [("producer_byte_rate", 1.0, False)]))),
                qa("ip combined with user", lambda n: quotas(([("user", n("u")), ("ip", "127.0.0.9")], [("producer_byte_rate", 1.0, False)]))),
                qa("an ip that is no address", lambda _n: quotas(([("ip", "not an address")], [("connection_creation_rate", 1.0, False)]))),
                qa("the default ip", lambda _n: quotas(([("ip", None)], [("connection_creation_rate", 5.0, False)]))),
                qa("an unknown entity type", lambda _n: quotas(([("group", "g")], [("producer_byte_rate", 1.0, False)]))),
                qa("an empty entity", lambda _n: quotas(([], [("producer_byte_rate", 1.0, False)]))),
                qa("an empty user name", lambda _n: quotas(([("user", "")], [("producer_byte_rate", 1.0, False)]))),
                qa("a type given twice", lambda n: quotas(([("user", n("u1")), ("user", n("u2"))], [("producer_byte_rate", 1.0, False)]))),
                qa("the same entity twice", lambda n: quotas(([("user", n("u"))], [("producer_byte_rate", 1.0, False)]), ([("user", n("u"))], [("consumer_byte_rate", 1.0, False)]))),
                qa("the same key twice", lambda n: quotas(([("user", n("u"))], [("producer_byte_rate", 1.0, False), ("producer_byte_rate", 2.0, False)]))),
                qa("removing an unknown key", lambda n: quotas(([("user", n("u"))], [("no_such_quota", 0.0, True)]))),
                qa("two bad keys: which one is reported", lambda n: quotas(([("user", n("u"))], [("zzz", 1.0, False), ("producer_byte_rate", 0.5, False), ("aaa", 1.0, False)]))),
                qa("an entity with two problems", lambda _n: quotas(([("group", "g"), ("user", "")], [("producer_byte_rate", 1.0, False)]))),
                qa("a mixed batch", lambda n: quotas(([("user", n("u"))], [("producer_byte_rate", 1.0, False)]), ([("ip", "x y")], [("connection_creation_rate", 1.0, False)]), ([("client-id", n("c"))], [("bogus", 1.0, False)]))),
                qa("for real: set", lambda n: quotas(([("user", n.resource("{p}qb")), ("client-id", n.resource("{p}cb"))], [("producer_byte_rate", 4096.0, False)]), validate_only=False)),
                qa("for real: remove", lambda n: quotas(([("user", n.resource("{p}qb")), ("client-id", n.resource("{p}cb"))], [("producer_byte_rate", 0.0, True)]), validate_only=False)),
                qa("bob with cluster ALTER_CONFIGS", lambda n: quotas(([("user", n("u"))], [("producer_byte_rate", 1.0, False)])), user="bob"),
                qa("alice without", lambda n: quotas(([("user", n("u")), ("user", n("v"))], [("producer_byte_rate", 1.0, False)]), ([("client-id", None)], [])), user="alice"),
                qa("nothing at all", lambda _n: quotas()),
            ),
        )
    )

    # SCRAM credentials.
    groups.append(
        Group(
            "alter-user-scram-credentials",
            scram_users=("{p}u1", "{p}u2", "{p}u3"),
            acls=(Acl("User:bob", "ALTER", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),),
            calls=(
                sc("an upsertion", lambda n: scram(upsertions=[upsert(n("u1"))])),
                sc("a second mechanism", lambda n: scram(upsertions=[upsert(n("u1"), SHA_512, 8192)])),
                sc("deleting what exists", lambda n: scram([(n("u1"), SHA_512)])),
                sc("deleting what does not exist", lambda n: scram([(n("u1"), SHA_512)])),
                sc("too few iterations", lambda n: scram(upsertions=[upsert(n("u2"), iterations=1000)])),
                sc("too many iterations", lambda n: scram(upsertions=[upsert(n("u2"), iterations=20000)])),
                sc("an unknown mechanism", lambda n: scram(upsertions=[upsert(n("u2"), mechanism=9)])),
                sc("deleting with an unknown mechanism", lambda n: scram([(n("u1"), 0)])),
                sc("an empty user name", lambda _n: scram(upsertions=[upsert("")])),
                sc("an empty user name in a deletion", lambda _n: scram([("", SHA_256)])),
                sc("an empty salted password", lambda n: scram(upsertions=[upsert(n("u2"), salted=b"")])),
                sc("one user upserted twice", lambda n: scram(upsertions=[upsert(n("u2")), upsert(n("u2"), SHA_512)])),
                sc("deleted and upserted", lambda n: scram([(n("u1"), SHA_256)], [upsert(n("u1"), SHA_512)])),
                sc("deleted twice", lambda n: scram([(n("u1"), SHA_256), (n("u1"), SHA_256)])),
                sc("a failed deletion and an upsertion", lambda n: scram([(n("u3"), SHA_256)], [upsert(n("u3"))])),
                sc("a mixed batch", lambda n: scram([(n("nobody"), SHA_256)], [upsert(n("u2")), upsert(n("u3"), iterations=5), upsert("", SHA_512)])),
                sc("bob with cluster ALTER", lambda n: scram(upsertions=[upsert(n("u3"), SHA_512)]), user="bob"),
                sc("alice without", lambda n: scram([(n("zed"), SHA_256)], [upsert(n("amy")), upsert(n("amy"))]), user="alice"),
                sc("nothing at all", lambda _n: scram()),
            ),
        )
    )

    # Cluster-wide ALL, DENY against cluster grants, existence hidden behind authorization.
    groups.append(
        Group(
            "cluster ALL, cluster DENY and hidden existence",
            acls=(
                Acl("User:alice", "ALL", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),
                Acl("User:alice", "ALL", name="*", pattern="LITERAL", permission="DENY"),
                Acl("User:bob", "ALL", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL", permission="DENY"),
                Acl("User:bob", "ALL", name="{p}"),
                Acl("User:bob", "DELETE", name="{p}bd", pattern="PREFIXED", permission="DENY"),
                Acl("User:bob", "DELETE", name="{p}bd-allowed", pattern="LITERAL"),
            ),
            topics=("e1", "e2", "bd-allowed", "bd-other", "exists"),
            calls=(
                ct("alice: cluster ALL creates, a topic DENY ALL hides the details", lambda n: create(topic(n("new1")), validate_only=True)),
                dt("alice: cluster ALL deletes, whatever the topic DENY says", lambda n: delete((n("e1"), ZERO), (None, n.id("e2")))),
                cp("alice: cluster ALL does not alter topics", lambda n: grow((n("exists"), 2), validate_only=True)),
                ct("bob: a cluster DENY ALL leaves his topic grants", lambda n: create(topic(n("new2")), validate_only=True), user="bob"),
                ct("bob: an existing topic he may create", lambda n: create(topic(n("exists"))), user="bob"),
                ct("mallory: an existing topic she may not create", lambda n: create(topic(n("exists"))), user="mallory"),
                dt("bob: DENY DELETE prefixed beats ALLOW DELETE literal", lambda n: delete((n("bd-allowed"), ZERO)), user="bob"),
                dt("bob: DENY DELETE prefixed, by id", lambda n: delete((None, n.id("bd-other"))), user="bob"),
                el("bob: a cluster DENY ALL denies elections", lambda n: elect({n("exists"): [0]}), user="bob"),
                el("alice: cluster ALL elects", lambda n: elect({n("exists"): [0]}), user="alice"),
                lr("alice: cluster ALL lists", lambda _n: listing(None), user="alice"),
                qa("alice: cluster ALL alters quotas", lambda n: quotas(([("user", n("q"))], [("producer_byte_rate", 1.0, False)])), user="alice"),
                ca("alice: cluster ALL creates ACLs", lambda n: creations(binding(n("x"), n.resource("User:{p}zoe"))), user="alice"),
                da("alice: cluster ALL deletes ACLs", lambda n: deletions(acl_filter(principal=n.resource("User:{p}zoe"))), user="alice"),
            ),
        )
    )

    # Timeouts: what the controller does with a deadline already past.
    groups.append(
        Group(
            "timeouts",
            topics=("to1",),
            calls=(
                ct("CreateTopics with timeout 0", lambda n: {**create(topic(n("t0"))), "timeout": 0}, user="admin"),
                ct("CreateTopics with timeout -1", lambda n: {**create(topic(n("tm1")), validate_only=True), "timeout": -1}, user="admin"),
                dt("DeleteTopics with timeout 0", lambda n: {**delete((n("to1"), ZERO)), "timeout": 0}, user="admin"),
                dt("DeleteTopics with timeout -1, by id", lambda n: {**delete((None, n.id("to1"))), "timeout": -1}, user="admin"),
                cp("CreatePartitions with timeout 0", lambda n: {**grow((n("to1"), 2)), "timeout": 0}, user="admin"),
                el("ElectLeaders with timeout 0", lambda n: {**elect({n("to1"): [0]}), "timeout": 0}),
                ra("AlterPartitionReassignments with timeout -5", lambda n: {**reassign({n("to1"): {0: [BROKER]}}), "timeout": -5}),
            ),
        )
    )

    # Older request versions, odd principals and names, super users.
    def old_create(version: int, values: Any, user: str = "admin") -> Call:
        return Call(f"CreateTopics v{version}: " + values[0], ApiKey.CREATE_TOPICS, version, values[1], user)

    groups.append(
        Group(
            "older versions, odd names, super users",
            acls=(
                Acl("User:admin", "ALL", name="{p}", permission="DENY"),
                Acl("User:alice", "CREATE", name="*", pattern="PREFIXED"),
                Acl("User:Alice", "ALL", name="{p}case", pattern="PREFIXED"),
                Acl("User:bob", "CREATE", name="{p}", pattern="PREFIXED", host="127.0.0.2"),
                Acl("User:bob", "CREATE", name="{p}", pattern="PREFIXED", host="127.0.0.3", permission="DENY"),
                Acl("User:*", "CREATE", name="{p}wild", pattern="PREFIXED", permission="DENY"),
                Acl("User:bob", "CREATE", name="{p}wild-bob", pattern="LITERAL"),
            ),
            topics=("v1", "v2", "v3", "v4"),
            calls=(
                old_create(2, ("a duplicate and a bad name", lambda n: create(topic(n("o1")), topic(n("o1")), topic("bad name"), validate_only=True))),
                old_create(4, ("too many replicas", lambda n: create(topic(n("o2"), 1, 5), validate_only=True))),
                old_create(5, ("details for a super user", lambda n: create(topic(n("o3")), validate_only=True))),
                Call("DeleteTopics v1: duplicates and unknown", ApiKey.DELETE_TOPICS, 1, lambda n: delete_names(n("v1"), n("v1"), n("none")), "admin"),
                Call("DeleteTopics v4: one exists, one does not", ApiKey.DELETE_TOPICS, 4, lambda n: delete_names(n("v2"), n("none")), "admin"),
                Call("DeleteTopics v4: bob may not", ApiKey.DELETE_TOPICS, 4, lambda n: delete_names(n("v3")), "bob"),
                Call("CreatePartitions v0: grow and duplicates", ApiKey.CREATE_PARTITIONS, 0, lambda n: grow((n("v4"), 2), (n("x"), 2), (n("x"), 3), validate_only=True), "admin"),
                Call("CreateAcls v1: a prefixed binding", ApiKey.CREATE_ACLS, 1, lambda n: creations(binding(n("v"), n.resource("User:{p}ivy"), pattern=PatternType.PREFIXED)), "admin"),
                Call("DeleteAcls v1: by principal", ApiKey.DELETE_ACLS, 1, lambda n: deletions(acl_filter(principal=n.resource("User:{p}ivy"))), "admin"),
                Call("ElectLeaders v0", ApiKey.ELECT_LEADERS, 0, lambda n: {"topic_partitions": [{"topic": n("v4"), "partitions": [0, 9]}], "timeout": TIMEOUT_MS}, "admin"),
                Call("ElectLeaders v1", ApiKey.ELECT_LEADERS, 1, lambda n: {"election_type": UNCLEAN, "topic_partitions": [{"topic": n("v4"), "partitions": [0]}], "timeout": TIMEOUT_MS}, "admin"),
                Call("AlterPartitionReassignments v0", ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, lambda n: {"timeout": TIMEOUT_MS, "topics": [{"name": n("v4"), "partitions": [{"partition_index": 0, "replicas": [BROKER]}]}]}, "admin"),
                Call("AlterClientQuotas v0", ApiKey.ALTER_CLIENT_QUOTAS, 0, lambda n: quotas(([("user", n("q0"))], [("producer_byte_rate", 10.0, False)])), "admin"),
                ct("a super user ignores a DENY ALL", lambda n: create(topic(n("superdeny")), validate_only=True), user="admin"),
                ct("PREFIXED * is no wildcard: '*x' is authorized, then invalid", lambda _n: create(topic("*x"), validate_only=True)),
                ct("PREFIXED * does not match other names", lambda n: create(topic(n("star")), validate_only=True)),
                ct("User:Alice is not User:alice", lambda n: create(topic(n("case1")), validate_only=True)),
                ct("bob from the host his ALLOW names", lambda n: create(topic(n("h")), validate_only=True), user="bob", host="127.0.0.2"),
                ct("bob from the host his DENY names", lambda n: create(topic(n("h")), validate_only=True), user="bob", host="127.0.0.3"),
                ct("bob from elsewhere", lambda n: create(topic(n("h")), validate_only=True), user="bob"),
                ct("User:* DENY prefixed beats bob's literal ALLOW", lambda n: create(topic(n("wild-bob")), validate_only=True), user="bob", host="127.0.0.2"),
                ct("a config Kafka does not know", lambda n: create(topic(n("cfg1"), configs={"no.such.config": "1"}), validate_only=True), user="admin"),
                ct("a config value Kafka refuses", lambda n: create(topic(n("cfg2"), configs={"retention.ms": "soon"}), validate_only=True), user="admin"),
                ct("a broker config on a topic", lambda n: create(topic(n("cfg3"), configs={"log.retention.ms": "1000"}), validate_only=True), user="admin"),
                ds("alice describes ACLs without DESCRIBE on the cluster", lambda n: acl_filter(principal=n.resource("User:{p}ivy")), user="alice"),
                ds("an unknown code in the describe filter", lambda n: acl_filter(principal=n.resource("User:{p}ivy"), operation=UNKNOWN_CODE)),
                ds("operation UNKNOWN (0) in the describe filter", lambda n: acl_filter(principal=n.resource("User:{p}ivy"), operation=Operation.UNKNOWN)),
            ),
        )
    )

    # Edges: defaults, name lengths, collisions within a request, odd quota values, the reads of quotas and credentials.
    def dq(name: str, values: Any, user: str = "admin") -> Call:
        return Call(name, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, values, user)

    def du(name: str, values: Any, user: str = "admin") -> Call:
        return Call(name, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, values, user)

    groups.append(
        Group(
            "edges: defaults, lengths, collisions, odd values, reads",
            acls=(
                Acl("User:alice", "ALL", name="*", pattern="LITERAL"),
                Acl("User:bob", "DESCRIBE", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),
                Acl("User:{p}carol", "READ", name="*", pattern="LITERAL"),
            ),
            topics=("e1",),
            scram_users=("{p}s1", "{p}s2"),
            quota_entities=((("user", "{p}q1"),), (("user", "{p}q1"), ("client-id", "{p}c1"))),
            calls=(
                ct("default partitions and replication factor", lambda n: create(topic(n("d1"), -1, -1)), user="admin"),
                ct("a name of 249 characters", lambda n: create(topic(n("x") + "x" * (249 - len(n("x")))), validate_only=True), user="admin"),
                ct("two new names that collide with each other", lambda n: create(topic(n("c.x")), topic(n("c_x")), validate_only=True), user="admin"),
                dt("alice deletes an invalid name she may describe", lambda _n: delete(("bad name!", ZERO))),
                dt("alice deletes a name too long for a topic", lambda _n: delete(("y" * 300, ZERO))),
                qa("NaN", lambda n: quotas(([("user", n("q"))], [("request_percentage", float("nan"), False)]))),
                qa("infinity", lambda n: quotas(([("user", n("q"))], [("producer_byte_rate", float("inf"), False)]))),
                qa("infinity as a double", lambda n: quotas(([("user", n("q"))], [("controller_mutation_rate", float("inf"), False)]))),
                qa("a bracketed IPv6 ip", lambda _n: quotas(([("ip", "[::1]")], [("connection_creation_rate", 1.0, False)]))),
                qa("a short IPv4 form", lambda _n: quotas(([("ip", "127.1")], [("connection_creation_rate", 1.0, False)]))),
                qa("localhost", lambda _n: quotas(([("ip", "localhost")], [("connection_creation_rate", 1.0, False)]))),
                qa("set two quotas", lambda n: quotas(([("user", n.resource("{p}q1"))], [("producer_byte_rate", 100.0, False), ("request_percentage", 12.5, False)]), ([("user", n.resource("{p}q1")), ("client-id", n.resource("{p}c1"))], [("consumer_byte_rate", 300.0, False)]), validate_only=False)),
                dq("describe one user's quotas", lambda n: {"components": [{"entity_type": "user", "match_type": 0, "match": n.resource("{p}q1")}], "strict": True}),
                dq("describe a user's quotas, not strict", lambda n: {"components": [{"entity_type": "user", "match_type": 0, "match": n.resource("{p}q1")}], "strict": False}),
                dq("describe with an unknown entity type", lambda _n: {"components": [{"entity_type": "group", "match_type": 0, "match": "g"}], "strict": False}),
                dq("describe with a type twice", lambda n: {"components": [{"entity_type": "user", "match_type": 2, "match": None}, {"entity_type": "user", "match_type": 0, "match": n("x")}], "strict": False}),
                dq("describe ip with user", lambda _n: {"components": [{"entity_type": "ip", "match_type": 2, "match": None}, {"entity_type": "user", "match_type": 2, "match": None}], "strict": False}),
                dq("describe quotas without DESCRIBE_CONFIGS", lambda n: {"components": [{"entity_type": "user", "match_type": 0, "match": n.resource("{p}q1")}], "strict": True}, user="bob"),
                sc("store two credentials", lambda n: scram(upsertions=[upsert(n("s1")), upsert(n("s2"), SHA_512, 10000)])),
                du("describe both", lambda n: {"users": [{"name": n("s1")}, {"name": n("s2")}]}),
                du("describe one twice and one unknown", lambda n: {"users": [{"name": n("s1")}, {"name": n("s1")}, {"name": n("nobody")}]}),
                du("bob describes with DESCRIBE on the cluster", lambda n: {"users": [{"name": n("s2")}]}, user="bob"),
                du("alice may not describe credentials", lambda n: {"users": [{"name": n("s2")}]}, user="alice"),
                ds("a LITERAL '*' filter finds the wildcard ACL only", lambda n: acl_filter(name="*", pattern=PatternType.LITERAL, principal=n.resource("User:{p}carol"))),
                ds("a MATCH filter finds the wildcard ACL too", lambda n: acl_filter(name=n("anything"), pattern=PatternType.MATCH, principal=n.resource("User:{p}carol"))),
                da("a LITERAL '*' filter deletes the wildcard ACL", lambda n: deletions(acl_filter(name="*", pattern=PatternType.LITERAL, principal=n.resource("User:{p}carol")))),
            ),
        )
    )

    # Fine points of the rules: one-operation DENYs, implied DESCRIBE_CONFIGS, case, prefixes, User:* per host.
    groups.append(
        Group(
            "fine points: implied operations, case, prefixes, wildcard principals by host",
            acls=(
                Acl("User:alice", "CREATE", name="{p}"),
                Acl("User:alice", "DESCRIBE_CONFIGS", name="{p}dc", pattern="PREFIXED"),
                Acl("User:alice", "ALTER_CONFIGS", name="{p}dc-deny", pattern="LITERAL", permission="DENY"),
                Acl("User:alice", "ALL", name="{p}all", pattern="PREFIXED"),
                Acl("User:alice", "DESCRIBE_CONFIGS", name="{p}all-deny", pattern="LITERAL", permission="DENY"),
                Acl("User:bob", "CREATE", name="{p}Case", pattern="LITERAL"),
                Acl("User:bob", "CREATE", name="{p}abc", pattern="PREFIXED"),
                Acl("User:*", "CREATE", name="{p}anyone", pattern="PREFIXED"),
                Acl("User:*", "CREATE", name="{p}anyone", pattern="PREFIXED", host="127.0.0.3", permission="DENY"),
                Acl("User:bob", "CREATE", resource_type="CLUSTER", name=CLUSTER, pattern="PREFIXED", host="127.0.0.4"),
                Acl("User:alice", "DESCRIBE", resource_type="CLUSTER", name=CLUSTER, pattern="LITERAL"),
            ),
            calls=(
                ct("DESCRIBE_CONFIGS shows the details", lambda n: create(topic(n("dc1")), validate_only=True)),
                ct("a DENY ALTER_CONFIGS does not deny DESCRIBE_CONFIGS", lambda n: create(topic(n("dc-deny")), validate_only=True)),
                ct("ALL implies DESCRIBE_CONFIGS", lambda n: create(topic(n("all1")), validate_only=True)),
                ct("a DENY DESCRIBE_CONFIGS beside ALL hides the details", lambda n: create(topic(n("all-deny")), validate_only=True)),
                ct("names are case sensitive", lambda n: create(topic(n("case")), topic(n("Case")), validate_only=True), user="bob"),
                ct("a prefix longer than the name", lambda n: create(topic(n("ab")), topic(n("abc")), topic(n("abcd")), validate_only=True), user="bob"),
                ct("User:* from any host", lambda n: create(topic(n("anyone1")), validate_only=True), user="mallory", host="127.0.0.2"),
                ct("User:* DENY from its host", lambda n: create(topic(n("anyone2")), validate_only=True), user="bob", host="127.0.0.3"),
                ct("a PREFIXED cluster grant from its host", lambda _n: create(topic("dc-anywhere-topic"), validate_only=True), user="bob", host="127.0.0.4"),
                ct("the PREFIXED cluster grant from another host", lambda _n: create(topic("dc-anywhere-topic"), validate_only=True), user="bob"),
                ds("alice describes ACLs with DESCRIBE on the cluster", lambda n: acl_filter(name=n("anyone"), pattern=PatternType.PREFIXED), user="alice"),
            ),
        )
    )

    # Configs (controller/configs.py: another engineer's part; these say whether it agrees).
    groups.append(
        Group(
            "configs: alter and incremental alter",
            acls=(
                Acl("User:alice", "ALTER_CONFIGS", name="{p}c"),
                Acl("User:alice", "ALTER_CONFIGS", name="{p}cdeny", pattern="LITERAL", permission="DENY"),
            ),
            topics=("c1", "cdeny", "other"),
            calls=(
                ic("alice sets a topic config", lambda n: incremental((CONFIG_TOPIC, n("c1"), [("retention.ms", OP_SET, "7200000")]))),
                ic("validate only", lambda n: incremental((CONFIG_TOPIC, n("c1"), [("cleanup.policy", OP_SET, "compact")]), validate_only=True)),
                ic("an unknown topic under her prefix", lambda n: incremental((CONFIG_TOPIC, n("c-missing"), [("retention.ms", OP_SET, "1")]))),
                ic("a topic she may not alter", lambda n: incremental((CONFIG_TOPIC, n("other"), [("retention.ms", OP_SET, "1")]))),
                ic("a DENY on the topic", lambda n: incremental((CONFIG_TOPIC, n("cdeny"), [("retention.ms", OP_SET, "1")]))),
                ic("a broker config without cluster ALTER_CONFIGS", lambda _n: incremental((CONFIG_BROKER, "", [("log.cleaner.threads", OP_SET, "2")]), validate_only=True)),
                ic("an unknown resource type", lambda n: incremental((UNKNOWN_CODE, n("c1"), [("retention.ms", OP_SET, "1")]))),
                ic("the same resource twice", lambda n: incremental((CONFIG_TOPIC, n("c1"), [("retention.ms", OP_SET, "1")]), (CONFIG_TOPIC, n("c1"), [("retention.ms", OP_SET, "2")]))),
                ic("an unknown key", lambda n: incremental((CONFIG_TOPIC, n("c1"), [("no.such.config", OP_SET, "1")]))),
                ic("a bad value", lambda n: incremental((CONFIG_TOPIC, n("c1"), [("retention.ms", OP_SET, "soon")]))),
                ic("deleting a key", lambda n: incremental((CONFIG_TOPIC, n("c1"), [("retention.ms", OP_DELETE, None)]))),
                ac("legacy AlterConfigs on a topic", lambda n: legacy((CONFIG_TOPIC, n("c1"), {"retention.ms": "3600000"}))),
                ac("legacy AlterConfigs on a topic she may not alter", lambda n: legacy((CONFIG_TOPIC, n("other"), {"retention.ms": "1"}))),
                ac("legacy AlterConfigs, the same resource twice", lambda n: legacy((CONFIG_TOPIC, n("c1"), {}), (CONFIG_TOPIC, n("c1"), {}))),
                ac("legacy AlterConfigs, an unknown resource type", lambda n: legacy((UNKNOWN_CODE, n("c1"), {}))),
            ),
        )
    )
    groups.extend(_token_groups())
    groups.append(_membership_group())
    return groups


def _token_groups() -> list[Group]:
    """Delegation tokens (KIP-48, KIP-373): through the proxy as logged-in users, and in Envelopes as any principal,
    token-authenticated ones too; DescribeDelegationToken where a broker answers it. Every token a group makes is
    expired before it ends (those calls are scenarios too)."""
    removed = 1.0  # seconds for the node's token cache to forget a token (its publisher runs after the commit)
    through_the_proxy = Group(
        "delegation tokens: create, renew and expire through the proxy",
        acls=(Acl("User:alice", "CREATE_TOKENS", resource_type="USER", name="User:t-{p}owned", pattern="LITERAL"),),
        calls=(
            tc("alice creates her own token, bob may renew it", new_token(renewers=("User:bob",)), keep="a"),
            tr("bob renews it for an hour", renewal("a", HOUR_MS), user="bob"),
            tr("mallory may not renew it", renewal("a", HOUR_MS), user="mallory"),
            tr("nor may a super user who is not its owner", renewal("a", HOUR_MS), user="admin"),
            tr("alice renews it for the default period", renewal("a", -1)),
            tr("a period longer than the expiry time is cut to it", renewal("a", LONG_MAX)),
            tc("alice asks a token for another owner without CREATE_TOKENS", new_token(owner=("User", "t-{p}someone"))),
            tc("alice asks one for the owner she has CREATE_TOKENS on", new_token(owner=("User", "t-{p}owned")), keep="owned"),
            tr("the requester is not a renewer", renewal("owned", MINUTE_MS)),
            tc("a Group renewer", new_token(renewers=("User:bob", "Group:ops"))),
            tc("a max lifetime of an hour", new_token(lifetime=HOUR_MS), keep="hour"),
            tc("version 1: no owner, no requester in the answer", new_token(), version=1, keep="v1"),
            tc("version 2", new_token(), version=2, keep="v2"),
            tc("ten thousand renewers", new_token(renewers=many_renewers(MANY_RENEWERS)), keep="many"),
            tr("renewer 9,999 renews", renewal("many", MINUTE_MS), **env("User:t-{p}r9999")),
            te("bob expires alice's token in a minute", expiry("a", MINUTE_MS), user="bob"),
            te("mallory may not expire it", expiry("a"), user="mallory"),
            te("alice expires it at once", expiry("a")),
            tr("renewing a token expired at once", renewal("a"), pause=removed),
            te("expiring it again", expiry("a")),
            te("the owner expires the token alice asked for", expiry("owned"), **env("User:t-{p}owned")),
            te("version 1 expire", expiry("v1"), version=1),
            tr("version 1 renew of a removed token", renewal("owned"), version=1, pause=removed),
            te("alice expires the rest", expiry("v2")),
            te("and the hour token", expiry("hour")),
            te("and the one with ten thousand renewers", expiry("many")),
        ),
    )
    in_envelopes = Group(
        "delegation tokens: owners, renewers, strangers and token logins in Envelopes",
        acls=(
            Acl(REQUESTER, "CREATE_TOKENS", resource_type="USER", name=OWNER, pattern="LITERAL"),
            Acl("User:alice", "DESCRIBE_TOKENS", resource_type="USER", name=OWNER, pattern="LITERAL"),
        ),
        calls=(
            tc("the owner creates a token for an hour, a renewer named", new_token(renewers=(RENEWER,), lifetime=HOUR_MS), **env(OWNER, keep="t1")),
            tr("the renewer renews it for a minute", renewal("t1", MINUTE_MS), **env(RENEWER)),
            # times an answer shows relative to the token's max time come first, while the token is young
            tr("the owner renews past its max time: cut to it", renewal("t1", DAY_MS), **env(OWNER)),
            tr("a renew period of Long.MIN_VALUE is the default, cut to the max time", renewal("t1", LONG_MIN), **env(OWNER)),
            te("expiring with Long.MAX_VALUE: the max time", expiry("t1", LONG_MAX), **env(OWNER)),
            tr("a stranger may not", renewal("t1", MINUTE_MS), **env(STRANGER)),
            tr("nor a super user", renewal("t1", MINUTE_MS), **env("User:admin")),
            tr("nor a principal of another type with the owner's name", renewal("t1"), **env("Group:t-{p}owner")),
            tc("a token-authenticated owner may not create", new_token(), **env(OWNER, token_login=True)),
            tr("nor renew", renewal("t1"), **env(OWNER, token_login=True)),
            te("nor expire", expiry("t1"), **env(OWNER, token_login=True)),
            tc("nor a token-authenticated super user", new_token(), **env("User:admin", token_login=True)),
            tc("the requester creates for the owner with CREATE_TOKENS", new_token(owner=("User", "t-{p}owner")), **env(REQUESTER, keep="t2")),
            tc("a stranger creates for the owner without it", new_token(owner=("User", "t-{p}owner")), **env(STRANGER)),
            tc("a super user creates for a Group owner", new_token(owner=("Group", "t-{p}team")), **env("User:admin", keep="team")),
            tc("an owner type of another case", new_token(owner=("user", "t-{p}owner")), **env("User:admin", keep="lower")),
            tc("an owner name without a type", new_token(owner=(None, "t-{p}owner")), **env(OWNER)),
            tc("an empty owner name means the requester", new_token(owner=("Group", "")), **env(OWNER, keep="self")),
            tr("the requester (KIP-373) is not a renewer", renewal("t2"), **env(REQUESTER)),
            tr("the owner renews the token asked for it", renewal("t2", MINUTE_MS), **env(OWNER)),
            tc("a Group renewer", new_token(renewers=(RENEWER, "Group:t-{p}ops")), **env(OWNER)),
            tc("a renewer type in lower case", new_token(renewers=("user:t-{p}renewer",)), **env(OWNER)),
            tc("a max lifetime of Long.MAX_VALUE is the default", new_token(lifetime=LONG_MAX), **env(OWNER, keep="max")),
            tc("a negative max lifetime is the default", new_token(lifetime=LONG_MIN), **env(OWNER, keep="min")),
            tc("a max lifetime of 1 ms", new_token(lifetime=1), **env(OWNER, keep="brief")),
            tr("renewing the expired token", renewal("brief"), **env(OWNER, pause=0.1)),
            tr("a stranger renewing the expired token: expiry is checked first", renewal("brief"), **env(STRANGER)),
            te("a stranger expiring it: the owner is checked first", expiry("brief"), **env(STRANGER)),
            te("expiring it in a minute", expiry("brief", MINUTE_MS), **env(OWNER)),
            td("the super user describes the owner's tokens", owners(OWNER)),
            td("alice describes with DESCRIBE_TOKENS on the owner", lambda _n: {"owners": None}, user="alice"),
            td("bob without an ACL sees none of them", lambda _n: {"owners": None}, user="bob"),
            td("an empty owner list asks for nothing", owners()),
            td("the renewer's tokens", owners(RENEWER)),
            td("the requester's tokens (KIP-373)", owners(REQUESTER), version=2),
            td("version 1", owners(OWNER), version=1),
            te("the owner expires the expired token at once", expiry("brief"), **env(OWNER)),
            tr("an HMAC no token has", raw_hmac(bytes(64)), **env(OWNER)),
            tr("an empty HMAC", raw_hmac(b""), **env(OWNER)),
            tr("a one-byte HMAC", raw_hmac(b"\x01"), **env(OWNER)),
            tr("a 100,000-byte HMAC", raw_hmac(b"\x02" * 100_000), **env(OWNER)),
            te("expiring with 0: now", expiry("t1", 0), **env(RENEWER)),
            tr("renewing a token past its expiry", renewal("t1"), **env(OWNER, pause=0.1)),
            td("an expired token is still described until the controller sweeps it", owners(OWNER)),
            tc("version 1 in an Envelope", new_token(), version=1, **env(OWNER, keep="v1")),
            tr("version 1 renew", renewal("v1", MINUTE_MS), version=1, **env(OWNER)),
            te("version 1 expire", expiry("v1"), version=1, **env(OWNER)),
            *(te(f"the owner expires {label}", expiry(label), **env(OWNER)) for label in ("t1", "t2", "max", "min", "self")),
            te("the super user may not expire the Group's token", expiry("team"), **env("User:admin")),
            te("the Group expires its token", expiry("team"), **env("Group:t-{p}team")),
            te("the lower-case type owns its token", expiry("lower"), **env("user:t-{p}owner")),
            tr("renewing a removed token", renewal("t1"), **env(OWNER, pause=removed)),
            td("nothing of the group is left", owners(OWNER, RENEWER, REQUESTER)),
        ),
    )
    return [through_the_proxy, in_envelopes]


def _membership_group() -> Group:
    """UnregisterBroker and Add/RemoveRaftVoter against a one-node dynamic quorum (the node is formatted --standalone, the
    embedded controller alone has kraft.version 1): everything Kafka refuses. Unregistering the live broker, and adding
    a voter Kafka would then contact, are left out (the embedded controller answers those UNSUPPORTED_VERSION)."""
    directory = uuid.UUID("0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9")
    controller = [("CONTROLLER", "127.0.0.1", 1)]
    return Group(
        "membership: unregister broker, add and remove raft voters",
        calls=(
            ub("alice may not unregister a broker", unregister(BROKER), user="alice"),
            ub("an id no broker has", unregister(UNREGISTERED_BROKER)),
            ub("a negative id", unregister(-1)),
            ub("Integer.MAX_VALUE", unregister(2**31 - 1)),
            rv("alice may not remove a voter", remove_voter(BROKER, directory), user="alice"),
            rv("another cluster's id", remove_voter(BROKER, directory, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")),
            rv("a cluster id that is no Uuid", remove_voter(-1, None, cluster_id="not-a-cluster")),
            rv("a negative voter id", remove_voter(-1, directory)),
            rv("no directory id", remove_voter(BROKER, ZERO)),
            rv("the only voter, by another directory id", remove_voter(BROKER, directory)),
            rv("an id that is no voter", remove_voter(7, directory)),
            av("alice may not add a voter", add_voter(7, directory, controller), user="alice"),
            av("another cluster's id", add_voter(7, directory, controller, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")),
            av("a negative voter id", add_voter(-1, directory, controller)),
            av("no directory id", add_voter(7, ZERO, controller)),
            av("no endpoint", add_voter(7, directory, [])),
            av("no endpoint on the controller listener", add_voter(7, directory, [("BROKER", "127.0.0.1", 1)])),
            av("two other listeners, in Kafka's map order", add_voter(7, directory, [("BROKER", "h", 1), ("X", "h", 2), ("EXTERNAL", "::1", 65535)])),
            av("the same listener twice: the last wins", add_voter(1, directory, [("CONTROLLER", "a", 1), ("controller", "b", 2)])),
            av("a voter id already in the set", add_voter(BROKER, directory, controller)),
            av("a voter id already in the set, version 0", add_voter(BROKER, directory, controller), version=0),
        ),
    )


GROUPS: list[Group] = _groups()
