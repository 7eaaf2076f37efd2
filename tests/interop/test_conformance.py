"""One suite, two upstreams: the embedded controller must answer what a real Kafka controller answers.

Every test drives confluent-kafka through the proxy and checks both the
client-visible outcome (success or the Kafka error name) and the upstream's
state read around the proxy. The expected outcomes are written once and hold
for both upstreams; where they did not, the embedded controller was fixed.
"""

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import client_config
from tests.interop.upstreams import ACL_PROPAGATION, Target, embedded_target, kafka_target, poll

TIMEOUT = 60.0


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.interop)])
async def target(request: pytest.FixtureRequest, nursery: Any, tmp_path: Path) -> Target:
    if request.param == "embedded":
        return await embedded_target(nursery, tmp_path / "audit")
    return await kafka_target(nursery, request.getfixturevalue("kafka_node"), tmp_path / "audit")


def outcome(future: Any) -> str:
    """OK, or the Kafka error name the client saw."""
    from confluent_kafka import KafkaException

    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "OK"


def outcomes(futures: dict[Any, Any]) -> list[str]:
    return [outcome(future) for future in futures.values()]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def in_thread(work: Callable[[], Any]) -> Any:
    return await trio.to_thread.run_sync(work)


def admin_for(target: Target, user: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(client_config(target.address, user))


async def test_topic_lifecycle_and_its_errors(target: Target) -> None:
    from confluent_kafka.admin import NewPartitions, NewTopic

    topic, dry_run = unique("conf-topic"), unique("conf-dry")

    def work() -> dict[str, Any]:
        admin = admin_for(target, "admin")
        seen: dict[str, Any] = {}
        seen["create"] = outcomes(admin.create_topics([NewTopic(topic, 1, 1)]))
        seen["after create"] = target.wait_for_partitions(topic, 1)
        seen["create again"] = outcomes(admin.create_topics([NewTopic(topic, 1, 1)]))
        seen["validate only"] = outcomes(admin.create_topics([NewTopic(dry_run, 2, 1)], validate_only=True))
        seen["illegal name"] = outcomes(admin.create_topics([NewTopic("no spaces allowed", 1, 1)]))
        seen["too many replicas"] = outcomes(admin.create_topics([NewTopic(unique("conf-rf"), 1, 3)]))
        seen["grow to 3"] = outcomes(admin.create_partitions([NewPartitions(topic, 3)]))
        seen["after grow"] = target.wait_for_partitions(topic, 3)
        seen["shrink to 2"] = outcomes(admin.create_partitions([NewPartitions(topic, 2)]))
        seen["grow unknown"] = outcomes(admin.create_partitions([NewPartitions(unique("conf-missing"), 2)]))
        seen["validate only grow"] = outcomes(admin.create_partitions([NewPartitions(topic, 5)], validate_only=True))
        seen["delete"] = outcomes(admin.delete_topics([topic]))
        seen["after delete"] = target.wait_for_partitions(topic, None)
        seen["delete again"] = outcomes(admin.delete_topics([topic]))
        seen["dry run exists"] = target.topic_partitions(dry_run)
        return seen

    seen = await in_thread(work)
    assert seen == {
        "create": ["OK"],
        "after create": 1,
        "create again": ["TOPIC_ALREADY_EXISTS"],
        "validate only": ["OK"],
        "illegal name": ["TOPIC_EXCEPTION"],
        "too many replicas": ["INVALID_REPLICATION_FACTOR"],
        "grow to 3": ["OK"],
        "after grow": 3,
        "shrink to 2": ["INVALID_PARTITIONS"],
        "grow unknown": ["UNKNOWN_TOPIC_OR_PART"],
        "validate only grow": ["OK"],
        "delete": ["OK"],
        "after delete": None,
        "delete again": ["UNKNOWN_TOPIC_OR_PART"],
        "dry run exists": None,
    }


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
async def test_configs_incremental_and_legacy(target: Target) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    topic = unique("conf-configs")

    def incremental(name: str, key: str, value: str | None, op: Any = AlterConfigOpType.SET) -> ConfigResource:
        return ConfigResource("TOPIC", name, incremental_configs=[ConfigEntry(key, value, incremental_operation=op)])

    def work() -> dict[str, Any]:
        admin = admin_for(target, "admin")
        seen: dict[str, Any] = {}
        outcomes(admin.create_topics([NewTopic(topic, 1, 1)]))
        target.wait_for_partitions(topic, 1)
        seen["set retention"] = outcomes(admin.incremental_alter_configs([incremental(topic, "retention.ms", "123456")]))
        seen["after set"] = target.wait_for_configs(topic, {"retention.ms": "123456"})
        seen["unknown key"] = outcomes(admin.incremental_alter_configs([incremental(topic, "no.such.config", "1")]))
        seen["bad value"] = outcomes(admin.incremental_alter_configs([incremental(topic, "retention.ms", "soon")]))
        seen["unknown topic"] = outcomes(admin.incremental_alter_configs([incremental(unique("conf-missing"), "retention.ms", "1")]))
        seen["validate only"] = outcomes(
            admin.incremental_alter_configs([incremental(topic, "cleanup.policy", "compact")], validate_only=True)
        )
        seen["after validate only"] = target.topic_configs(topic)
        seen["legacy replace"] = outcomes(admin.alter_configs([ConfigResource("TOPIC", topic, set_config={"cleanup.policy": "compact"})]))
        # AlterConfigs replaces the whole set: retention.ms goes back to its default
        seen["after replace"] = target.wait_for_configs(topic, {"cleanup.policy": "compact"})
        seen["delete key"] = outcomes(
            admin.incremental_alter_configs([incremental(topic, "cleanup.policy", None, AlterConfigOpType.DELETE)])
        )
        seen["after delete key"] = target.wait_for_configs(topic, {})
        outcomes(admin.delete_topics([topic]))
        return seen

    seen = await in_thread(work)
    assert seen == {
        "set retention": ["OK"],
        "after set": {"retention.ms": "123456"},
        "unknown key": ["INVALID_CONFIG"],
        "bad value": ["INVALID_CONFIG"],
        "unknown topic": ["UNKNOWN_TOPIC_OR_PART"],
        "validate only": ["OK"],
        "after validate only": {"retention.ms": "123456"},
        "legacy replace": ["OK"],
        "after replace": {"cleanup.policy": "compact"},
        "delete key": ["OK"],
        "after delete key": {},
    }


async def test_acls_decide_for_the_forwarded_principal(target: Target) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    prefix = unique("conf-alice")
    grant = AclBinding(
        ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.CREATE, AclPermissionType.ALLOW
    )
    grant_filter = AclBindingFilter(
        ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.ANY, AclPermissionType.ANY
    )

    def work() -> dict[str, Any]:
        admin, alice = admin_for(target, "admin"), admin_for(target, "alice")
        seen: dict[str, Any] = {}
        seen["alice creates before grant"] = outcomes(alice.create_topics([NewTopic(f"{prefix}-a", 1, 1)]))
        seen["alice grants herself"] = [outcome(alice.create_acls([grant])[grant])]
        seen["admin grants"] = [outcome(admin.create_acls([grant])[grant])]
        seen["alice creates after grant"] = poll(
            lambda: outcomes(alice.create_topics([NewTopic(f"{prefix}-b", 1, 1)])),
            lambda seen: seen != ["TOPIC_AUTHORIZATION_FAILED"],
            ACL_PROPAGATION,
            0.25,
        )
        seen["alice creates elsewhere"] = outcomes(alice.create_topics([NewTopic(unique("conf-other"), 1, 1)]))
        seen["alice deletes without DELETE"] = outcomes(alice.delete_topics([f"{prefix}-b"]))
        seen["alice deletes acls"] = [outcome(alice.delete_acls([grant_filter])[grant_filter])]
        deleted = admin.delete_acls([grant_filter])[grant_filter].result(timeout=TIMEOUT)
        seen["deleted"] = [(b.principal, b.name, b.operation.name, b.permission_type.name) for b in deleted]
        seen["alice creates after revoke"] = poll(
            lambda: outcomes(alice.create_topics([NewTopic(f"{prefix}-c", 1, 1)])), lambda seen: seen != ["OK"], ACL_PROPAGATION, 0.25
        )
        seen["cleanup"] = outcomes(admin.delete_topics([f"{prefix}-b"]))
        return seen

    seen = await in_thread(work)
    assert seen == {
        "alice creates before grant": ["TOPIC_AUTHORIZATION_FAILED"],
        "alice grants herself": ["CLUSTER_AUTHORIZATION_FAILED"],
        "admin grants": ["OK"],
        "alice creates after grant": ["OK"],
        "alice creates elsewhere": ["TOPIC_AUTHORIZATION_FAILED"],
        "alice deletes without DELETE": ["TOPIC_AUTHORIZATION_FAILED"],
        "alice deletes acls": ["CLUSTER_AUTHORIZATION_FAILED"],
        "deleted": [("User:alice", prefix, "CREATE", "ALLOW")],
        "alice creates after revoke": ["TOPIC_AUTHORIZATION_FAILED"],
        "cleanup": ["OK"],
    }


async def test_malformed_requests_get_the_same_error_codes(target: Target) -> None:
    """Mistakes real clients guard against, sent raw: duplicates in one request, unparsable ACL fields."""
    name = unique("conf-dup")
    acl = {"resource_type": 2, "resource_name": name, "resource_pattern_type": 3, "host": "*", "operation": 3, "permission_type": 3}

    def work() -> dict[str, Any]:
        with wire.connect(target.address) as sock:
            assert wire.sasl_plain_login(sock, "admin", "admin-secret") == 0
            topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            created = wire.call(sock, ApiKey.CREATE_TOPICS, 5, {"topics": [topic, topic], "timeout": 5000, "validate_only": False}, 3)
            deleted = wire.call(sock, ApiKey.DELETE_TOPICS, 4, {"topic_names": [name, name], "timeout": 5000}, 4)
            grown = wire.call(
                sock, ApiKey.CREATE_PARTITIONS, 1, {"topics": [{"name": name, "count": 2, "assignments": None}] * 2, "timeout": 5000, "validate_only": False}, 11
            )
            acl_results = []
            for correlation_id, creation in enumerate(
                (
                    {**acl, "principal": "alice"},  # no principal type
                    {**acl, "principal": "User:alice", "resource_type": 1},  # ANY is a filter value, not a resource
                    {**acl, "principal": "User:alice", "operation": 1},  # so is operation ANY
                    {**acl, "principal": "User:alice", "resource_pattern_type": 2},  # MATCH, too
                    {**acl, "principal": "User:alice", "host": "not an address"},  # Kafka stores any host text
                ),
                start=5,
            ):
                (result,) = wire.call(sock, ApiKey.CREATE_ACLS, 2, {"creations": [creation]}, correlation_id).results
                acl_results.append((int(result.error_code), result.error_message or None))
        return {
            "create duplicates": sorted(int(t.error_code) for t in created.topics),
            "delete duplicates": sorted(int(t.error_code) for t in deleted.responses),
            "grow duplicates": sorted(int(t.error_code) for t in grown.results),
            "acl errors": acl_results,
            "created anything": target.topic_partitions(name),
        }

    seen = await in_thread(work)
    assert seen == {
        "create duplicates": [42],
        "delete duplicates": [42],
        "grow duplicates": [42],
        "acl errors": [
            (42, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"),
            (-1, None),
            (-1, None),
            (-1, None),
            (0, None),
        ],
        "created anything": None,
    }
