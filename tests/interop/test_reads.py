"""Reads through the proxy on both upstreams: sent under the proxy's identity only after its edge authorizer allows the client.

admin is a super user at the edge; alice starts with no ACLs, so she sees
nothing, and sees exactly what a DESCRIBE grant made through the proxy allows.
"""

from typing import Any

import pytest
import trio

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS
from tests.interop.test_conformance import TIMEOUT, admin_for, outcome, outcomes, target, unique
from tests.interop.upstreams import ACL_PROPAGATION, Target, poll

__all__ = ["target"]  # the parametrized upstream fixture


def _error_name(work: Any) -> str:
    from confluent_kafka import KafkaException

    try:
        work()
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "OK"


async def test_reads_are_authorized_at_the_edge(target: Target) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    topic = unique("read-topic")
    describe_grant = AclBinding(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW
    )
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)

    def work() -> dict[str, Any]:
        admin, alice = admin_for(target, "admin"), admin_for(target, "alice")
        seen: dict[str, Any] = {}
        outcomes(admin.create_topics([NewTopic(topic, 2, 1)]))
        target.wait_for_partitions(topic, 2)
        setting = ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
        outcomes(admin.incremental_alter_configs([ConfigResource("TOPIC", topic, incremental_configs=[setting])]))
        target.wait_for_configs(topic, {"retention.ms": "7200000"})

        listed = admin.list_topics(timeout=TIMEOUT)
        seen["admin lists it"] = topic in listed.topics
        seen["admin partitions"] = len(listed.topics[topic].partitions) if topic in listed.topics else None
        # The proxy, and the brokers the partitions name, all at the proxy's address (docs/clients.md)
        seen["brokers are the proxy"] = {f"{b.host}:{b.port}" for b in listed.brokers.values()} == {target.address}
        (future,) = admin.describe_configs([ConfigResource("TOPIC", topic)]).values()
        seen["admin describes configs"] = future.result(timeout=TIMEOUT)["retention.ms"].value
        seen["admin describes acls"] = _error_name(lambda: admin.describe_acls(everything).result(timeout=TIMEOUT))

        seen["alice lists it"] = topic in alice.list_topics(timeout=TIMEOUT).topics
        seen["alice names it"] = str(alice.list_topics(topic=topic, timeout=TIMEOUT).topics[topic].error.name())
        (future,) = alice.describe_configs([ConfigResource("TOPIC", topic)]).values()
        seen["alice describes configs"] = _error_name(lambda: future.result(timeout=TIMEOUT))
        # librdkafka hands a DescribeAcls error back as an empty result, so look at the wire
        seen["alice describes acls"] = _describe_acls_error(target.address, "alice")

        seen["grant"] = outcome(admin.create_acls([describe_grant])[describe_grant])
        seen["admin sees the grant"] = [
            (b.name, b.principal, b.operation.name) for b in admin.describe_acls(everything).result(timeout=TIMEOUT) if b.name == topic
        ]
        seen["alice lists it after grant"] = poll(lambda: topic in alice.list_topics(timeout=TIMEOUT).topics, bool, ACL_PROPAGATION, 0.25)
        (future,) = alice.describe_configs([ConfigResource("TOPIC", topic)]).values()
        seen["alice still may not describe configs"] = _error_name(lambda: future.result(timeout=TIMEOUT))

        grant_filter = AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", None, AclOperation.ANY, AclPermissionType.ANY
        )
        admin.delete_acls([grant_filter])[grant_filter].result(timeout=TIMEOUT)
        outcomes(admin.delete_topics([topic]))
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "admin lists it": True,
        "admin partitions": 2,
        "brokers are the proxy": True,
        "admin describes configs": "7200000",
        "admin describes acls": "OK",
        "alice lists it": False,
        "alice names it": "TOPIC_AUTHORIZATION_FAILED",
        "alice describes configs": "TOPIC_AUTHORIZATION_FAILED",
        "alice describes acls": 31,
        "grant": "OK",
        "admin sees the grant": [(topic, "User:alice", "DESCRIBE")],
        "alice lists it after grant": True,
        "alice still may not describe configs": "TOPIC_AUTHORIZATION_FAILED",
    }


def _describe_acls_error(address: str, user: str) -> int:
    match_all = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None}
    with wire.connect(address) as sock:
        assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
        body = wire.call(sock, ApiKey.DESCRIBE_ACLS, 3, {**match_all, "host_filter": None, "operation": 1, "permission_type": 1}, 5)
        return int(body.error_code)


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _call_as(address: str, user: str, api_key: int, version: int, values: dict[str, Any]) -> Any:
    with wire.connect(address, timeout=TIMEOUT) as sock:
        assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
        return wire.call(sock, api_key, version, values, 5)


async def test_quota_and_credential_reads_are_authorized_at_the_edge(target: Target) -> None:
    """kafka-configs --describe --entity-type users: DescribeClientQuotas and DescribeUserScramCredentials through the proxy."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    user = unique("reader")
    quota = {"entity": [{"entity_type": "user", "entity_name": user}], "ops": [{"key": "consumer_byte_rate", "value": 4096.0, "remove": False}]}
    exact = {"components": [{"entity_type": "user", "match_type": 0, "match": user}], "strict": True}

    def quotas(who: str) -> tuple[int, list[Any]]:
        body = _call_as(target.address, who, 48, 1, exact)
        return int(body.error_code), [[(v.key, v.value) for v in entry.values] for entry in body.entries or ()]

    def credentials(who: str) -> tuple[int, list[Any]]:
        body = _call_as(target.address, who, 50, 0, {"users": [{"name": user}]})
        return int(body.error_code), [(r.user, int(r.error_code), [(int(c.mechanism), int(c.iterations)) for c in r.credential_infos]) for r in body.results]

    def work() -> dict[str, Any]:
        admin = admin_for(target, "admin")
        seen: dict[str, Any] = {}
        altered = _call_as(target.address, "admin", 49, 1, {"entries": [quota], "validate_only": False})
        seen["alter quota"] = [int(e.error_code) for e in altered.entries]
        upsertion = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"reader-secret")
        seen["alter credential"] = outcomes(admin.alter_user_scram_credentials([upsertion]))
        seen["admin quotas"] = poll(lambda: quotas("admin"), lambda q: q[1] != [], TIMEOUT)
        seen["admin credentials"] = poll(lambda: credentials("admin"), lambda c: c[1] and c[1][0][1] == 0, TIMEOUT)
        seen["alice quotas"] = quotas("alice")
        seen["alice credentials"] = credentials("alice")
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "alter quota": [0],
        "alter credential": ["OK"],
        "admin quotas": (0, [[("consumer_byte_rate", 4096.0)]]),
        "admin credentials": (0, [(user, 0, [(1, 4096)])]),
        "alice quotas": (31, []),
        "alice credentials": (31, [("", 31, [])]),
    }, target.kind
