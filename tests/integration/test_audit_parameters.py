"""Real admin requests through the embedded stack: each intent record says what the request changes, no secret reaches
an audit file, `audit.level` leaves the parameters out where it says, and the proxy's own denial of a read is a
FAILURE, not an ERROR with an upstream (issue 50, finding 8). Every record is also checked against the JSON Schema
and the status rules by the autouse check of tests/integration/conftest.py."""

from pathlib import Path
from typing import Any

import trio

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, EmbeddedStack, client_config, start_stack
from tests.integration.conftest import audit_records

TIMEOUT = 30
JAAS_SECRET = "jaas-secret-Zq81"
SCRAM_PASSWORD = "scram-password-Yx42"
LEVELS = {"audit.level.api.AlterClientQuotas": "metadata"}


def _admin(stack: EmbeddedStack, user: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(client_config(stack.sasl_address, user))


def _results(futures: dict[Any, Any]) -> list[Exception | None]:
    outcomes: list[Exception | None] = []
    for future in futures.values():
        try:
            future.result(timeout=TIMEOUT)
            outcomes.append(None)
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


def admin_work(stack: EmbeddedStack) -> dict[str, Any]:
    """What an operator does with confluent-kafka's AdminClient, and what bob tries."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    seen: dict[str, Any] = {}
    admin = _admin(stack, "admin")
    seen["create_topics"] = _results(admin.create_topics([NewTopic("orders", 3, 1, config={"retention.ms": "86400000"})]))
    grant = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    seen["create_acls"] = _results(admin.create_acls([grant]))
    topic = ConfigResource(
        ResourceType.TOPIC,
        "orders",
        incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    seen["alter_topic_configs"] = _results(admin.incremental_alter_configs([topic]))
    broker = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry(
                "listener.name.client.plain.sasl.jaas.config",
                f'org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="{JAAS_SECRET}";',
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    seen["alter_broker_configs"] = _results(admin.incremental_alter_configs([broker]))
    seen["create_partitions"] = _results(admin.create_partitions([NewPartitions("orders", 6)]))
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), SCRAM_PASSWORD.encode())
    seen["scram"] = _results(admin.alter_user_scram_credentials([upsert]))
    remove = AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.MATCH, "User:alice", None, AclOperation.ANY, AclPermissionType.ANY)
    seen["delete_acls"] = _results(admin.delete_acls([remove]))

    # bob grants himself ALL on every topic: the controller denies it, the intent says what he tried
    everything = AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.ALL, AclPermissionType.ALLOW)
    bob = _admin(stack, "bob")  # held while its request is answered: a client that goes away destroys its requests
    seen["bob_grant"] = _results(bob.create_acls([everything]))
    return seen


def wire_work(stack: EmbeddedStack) -> dict[str, Any]:
    """What confluent-kafka has no call for, on the raw wire: quotas, tokens, features; and alice's DescribeAcls."""
    seen: dict[str, Any] = {}
    with wire.connect(stack.sasl_address, timeout=TIMEOUT) as sock:
        assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
        quotas = {
            "entries": [{"entity": [{"entity_type": "user", "entity_name": "alice"}], "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}],
            "validate_only": False,
        }
        seen["quotas"] = [int(e.error_code) for e in wire.call(sock, ApiKey.ALTER_CLIENT_QUOTAS, 1, quotas, 10).entries]
        token = {"owner_principal_type": None, "owner_principal_name": None, "renewers": [{"principal_type": "User", "principal_name": "alice"}], "max_lifetime": 3_600_000}
        seen["token"] = int(wire.call(sock, ApiKey.CREATE_DELEGATION_TOKEN, 3, token, 11).error_code)
        features = {"timeout": 5000, "feature_updates": [{"feature": "group.version", "max_version_level": 1, "upgrade_type": 1}], "validate_only": True}
        seen["features"] = int(wire.call(sock, ApiKey.UPDATE_FEATURES, 1, features, 12).error_code)
    with wire.connect(stack.sasl_address, timeout=TIMEOUT) as sock:
        assert wire.sasl_plain_login(sock, "alice", DEFAULT_USERS["alice"]) == 0
        acls = {
            "resource_type_filter": 1,
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": None,
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        }
        seen["alice_describe_acls"] = int(wire.call(sock, ApiKey.DESCRIBE_ACLS, 3, acls, 13).error_code)
    return seen


def _intent(records: list[dict[str, Any]], method: str, principal: str = "User:admin", nth: int = 0) -> dict[str, Any]:
    intents = [
        r["data"]
        for r in records
        if r["data"]["stage"] == "intent" and r["data"]["methodName"] == f"kafka.{method}" and r["data"]["authenticationInfo"]["principal"] == principal
    ]
    return intents[nth]


async def test_intents_say_what_changed_and_keep_no_secret(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=LEVELS)
    seen = await trio.to_thread.run_sync(admin_work, stack)
    seen.update(await trio.to_thread.run_sync(wire_work, stack))
    assert seen["create_topics"] == [None] and seen["create_acls"] == [None] and seen["alter_topic_configs"] == [None], seen
    assert seen["create_partitions"] == [None] and seen["delete_acls"] == [None], seen
    assert "CLUSTER_AUTHORIZATION_FAILED" in str(seen["bob_grant"]), "bob may not grant himself ALL"
    assert seen["alice_describe_acls"] == 31  # denied at the proxy's edge

    records = audit_records(tmp_path / "audit")

    assert _intent(records, "CreateTopics")["request"] == {
        "topics": [
            {
                "name": "orders",
                "numPartitions": 3,
                "replicationFactor": 1,
                "assignments": [],
                "configs": [{"name": "retention.ms", "operation": "SET", "value": "86400000", "sensitive": False}],
            }
        ],
        "validateOnly": False,
    }
    assert _intent(records, "CreateAcls")["request"] == {
        "creations": [
            {"resourceType": "TOPIC", "resourceName": "orders", "patternType": "LITERAL", "principal": "User:alice", "host": "*", "operation": "READ", "permissionType": "ALLOW"}
        ]
    }
    assert _intent(records, "CreateAcls", "User:bob")["request"]["creations"] == [
        {"resourceType": "TOPIC", "resourceName": "*", "patternType": "LITERAL", "principal": "User:bob", "host": "*", "operation": "ALL", "permissionType": "ALLOW"}
    ]
    assert _intent(records, "IncrementalAlterConfigs")["request"]["resources"] == [
        {
            "resourceType": "TOPIC",
            "resourceName": "orders",
            "configs": [
                {"name": "retention.ms", "operation": "SET", "value": "3600000", "sensitive": False},
                {"name": "cleanup.policy", "operation": "DELETE", "value": None, "sensitive": False},
            ],
        }
    ]
    assert _intent(records, "IncrementalAlterConfigs", nth=1)["request"]["resources"] == [
        {
            "resourceType": "BROKER",
            "resourceName": "1",
            "configs": [{"name": "listener.name.client.plain.sasl.jaas.config", "operation": "SET", "value": "[hidden]", "sensitive": True}],
        }
    ]
    assert _intent(records, "CreatePartitions")["request"] == {"topics": [{"name": "orders", "count": 6, "assignments": None}], "validateOnly": False}
    scram = _intent(records, "AlterUserScramCredentials")["request"]
    assert scram == {"deletions": [], "upsertions": [{"name": "carol", "mechanism": "SCRAM-SHA-512", "iterations": 8192}]}
    assert _intent(records, "DeleteAcls")["request"]["filters"] == [
        {"resourceType": "TOPIC", "resourceName": "orders", "patternType": "MATCH", "principal": "User:alice", "host": None, "operation": "ANY", "permissionType": "ANY"}
    ]
    assert _intent(records, "CreateDelegationToken")["request"] == {"owner": None, "renewers": ["User:alice"], "maxLifetimeMs": 3_600_000}
    assert _intent(records, "UpdateFeatures")["request"] == {
        "featureUpdates": [{"feature": "group.version", "maxVersionLevel": 1, "upgradeType": "UPGRADE"}],
        "validateOnly": True,
    }
    # audit.level.api.AlterClientQuotas=metadata: who, what API and which resources, not the quota
    quotas = _intent(records, "AlterClientQuotas")
    assert "request" not in quotas and quotas["resources"] == [{"type": "CLUSTER", "name": "kafka-cluster", "patternType": "LITERAL", "operation": "ALTER_CONFIGS"}]
    # only intents carry parameters
    assert all("request" not in r["data"] for r in records if r["data"]["stage"] != "intent")

    # No secret reaches an audit file, in any record, in any form.
    written = b"".join(path.read_bytes() for path in sorted((tmp_path / "audit").rglob("*.jsonl")))
    assert JAAS_SECRET.encode() not in written and SCRAM_PASSWORD.encode() not in written
    assert b'"salt' not in written and b"saltedPassword" not in written and b"hmac" not in written.lower()

    # Finding 8: the proxy's own denial of a read is a FAILURE naming the denied resource, with no upstream row.
    (denied,) = [r["data"] for r in records if r["data"]["methodName"] == "kafka.DescribeAcls" and r["data"]["authenticationInfo"]["principal"] == "User:alice"]
    assert denied["stage"] == "read" and denied["authorizationInfo"]["decision"] == "DENIED"
    assert denied["result"]["status"] == "FAILURE" and denied["result"]["errorCode"] == 31
    assert [e["resource"] for e in denied["result"]["errors"]] == ["kafka-cluster"] and denied["upstream"] is None
