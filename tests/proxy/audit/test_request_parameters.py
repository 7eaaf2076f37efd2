"""What an intent record says a change changes (`data.request`), API by API; what it never says (secrets); its bounds.

Each request is encoded as a client sends it and decoded as the proxy decodes it (envelope/codec.py), then written
by the intent of `RequestAudit`; secrets are looked for in the JSON line as written, not in a parsed copy.
"""

import uuid
from typing import Any

import orjson
import pytest
import trio

from authz.admin_apis import ADMIN_APIS, resources_of
from authz.change_parameters import HIDDEN
from devkit import wire
from envelope.apis import ApiKey
from envelope.codec import decode_body
from envelope.header import RequestHeaderInfo, peek_request_header
from proxy.audit.cloudevents import RecordLimits
from proxy.audit.config_secrets import config_types, sensitive
from proxy.audit.pipeline import AuditLevels, AuditLog
from proxy.audit.request_records import Caller, Forwarding, RequestAudit
from tests.audit_records import assert_valid
from tests.proxy.audit.test_pipeline import FlakySink

CALLER = Caller("User:alice", "PLAIN", "CLIENT", "SASL_PLAINTEXT", "127.0.0.1", 50000, "c-1", "librdkafka", "2.16.0")
SECRET = "s3cr3t-Value-that-must-not-leak"


def _decoded(api_key: int, version: int, values: dict[str, Any]) -> tuple[RequestHeaderInfo, Any]:
    frame = wire.request(api_key, version, values, correlation_id=7)
    header = peek_request_header(frame)
    return header, decode_body(api_key, version, frame, header.header_size, allow_trailing=True)


async def intent(
    api_key: int, version: int, values: dict[str, Any], *, limits: RecordLimits | None = None, levels: AuditLevels | None = None
) -> tuple[dict[str, Any], bytes]:
    """The intent record of the request, parsed, and its line as written."""
    header, body = _decoded(api_key, version, values)
    sink = FlakySink(failures=0)
    log = AuditLog([sink], limits=limits or RecordLimits(), levels=levels)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        audit = RequestAudit(log, 1, CALLER, header, resources=resources_of(api_key, body), forwarding=Forwarding("User:proxy", "c:9093"))
        await audit.intent(body)
        await log.aclose(5)
    (entry,) = sink.kept
    record = orjson.loads(entry.line)
    assert_valid([record])
    return record["data"], entry.line


def _acl(**values: Any) -> dict[str, Any]:
    return {"resource_type": 2, "resource_name": "*", "resource_pattern_type": 3, "principal": "User:bob", "host": "*", "operation": 2, "permission_type": 3, **values}


async def test_create_acls_says_which_binding_is_granted() -> None:
    data, _ = await intent(ApiKey.CREATE_ACLS, 3, {"creations": [_acl(), _acl(resource_type=3, resource_name="app-", resource_pattern_type=4, operation=3, permission_type=2, host="10.0.0.1")]})
    assert data["request"] == {
        "creations": [
            {"resourceType": "TOPIC", "resourceName": "*", "patternType": "LITERAL", "principal": "User:bob", "host": "*", "operation": "ALL", "permissionType": "ALLOW"},
            {"resourceType": "GROUP", "resourceName": "app-", "patternType": "PREFIXED", "principal": "User:bob", "host": "10.0.0.1", "operation": "READ", "permissionType": "DENY"},
        ]
    }


async def test_create_acls_v0_has_no_pattern_type_and_reads_literal() -> None:
    data, _ = await intent(ApiKey.CREATE_ACLS, 1, {"creations": [_acl(resource_pattern_type=3)]})
    assert data["request"]["creations"][0]["patternType"] == "LITERAL"


async def test_delete_acls_says_which_filter_matches() -> None:
    acl_filter = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 2,
        "principal_filter": "User:bob",
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    data, _ = await intent(ApiKey.DELETE_ACLS, 3, {"filters": [acl_filter]})
    assert data["request"] == {
        "filters": [{"resourceType": "ANY", "resourceName": None, "patternType": "MATCH", "principal": "User:bob", "host": None, "operation": "ANY", "permissionType": "ANY"}]
    }


def _alter(resource_type: int, name: str, configs: list[dict[str, Any]], *, incremental: bool) -> dict[str, Any]:
    if not incremental:
        configs = [{k: v for k, v in c.items() if k != "config_operation"} for c in configs]
    return {"resources": [{"resource_type": resource_type, "resource_name": name, "configs": configs}], "validate_only": False}


async def test_incremental_alter_configs_says_key_operation_and_value() -> None:
    configs = [
        {"name": "retention.ms", "config_operation": 0, "value": "86400000"},
        {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
        {"name": "segment.bytes", "config_operation": 1, "value": None},
    ]
    data, _ = await intent(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(2, "orders", configs, incremental=True))
    assert data["request"] == {
        "resources": [
            {
                "resourceType": "TOPIC",
                "resourceName": "orders",
                "configs": [
                    {"name": "retention.ms", "operation": "SET", "value": "86400000", "sensitive": False},
                    {"name": "cleanup.policy", "operation": "APPEND", "value": "compact", "sensitive": False},
                    {"name": "segment.bytes", "operation": "DELETE", "value": None, "sensitive": False},
                ],
            }
        ],
        "validateOnly": False,
    }


SENSITIVE_BROKER_CONFIGS = [
    "ssl.keystore.password",  # PASSWORD in Kafka's ConfigDef
    "ssl.key.password",
    "sasl.jaas.config",
    "listener.name.client.plain.sasl.jaas.config",  # a listener override takes its synonym's type
    "listener.name.client.ssl.truststore.password",
    "delegation.token.secret.key",
    "my.plugin.unknown.setting",  # a name Kafka cannot type: hidden, as Kafka's request log hides it
]


@pytest.mark.parametrize("incremental", [True, False])
@pytest.mark.parametrize("name", SENSITIVE_BROKER_CONFIGS)
async def test_a_sensitive_broker_config_value_is_nowhere_in_the_record(name: str, incremental: bool) -> None:
    api = ApiKey.INCREMENTAL_ALTER_CONFIGS if incremental else ApiKey.ALTER_CONFIGS
    configs = [{"name": name, "config_operation": 0, "value": SECRET}, {"name": "log.cleaner.threads", "config_operation": 0, "value": "2"}]
    data, line = await intent(api, 1 if incremental else 2, _alter(4, "1", configs, incremental=incremental))
    assert SECRET.encode() not in line
    hidden, shown = data["request"]["resources"][0]["configs"]
    assert hidden == {"name": name, "operation": "SET", "value": HIDDEN, "sensitive": True}
    assert shown == {"name": "log.cleaner.threads", "operation": "SET", "value": "2", "sensitive": False}


@pytest.mark.parametrize(
    ("resource_type", "name", "hidden"),
    [
        (2, "retention.ms", False),
        (2, "no.such.topic.config", True),  # LogConfig cannot type it
        (2, "some.password", True),  # named like a secret
        (32, "consumer.session.timeout.ms", False),
        (32, "no.such.group.config", True),
        (8, "kafka.server.ReplicaManager", False),  # a logger's level: never hidden
        (16, "metrics", False),
        (16, "client.secret", True),  # named like a secret, whatever the resource
        (64, "anything", True),  # a resource type Kafka does not know
        (4, "num.io.threads", False),
        (4, "leader.replication.throttled.rate", False),  # a dynamic-only broker config
        (4, "listener.name.internal.scram-sha-256.sasl.jaas.config", True),
        (4, "listener.name.internal.ssl.client.auth", False),
    ],
)
def test_which_config_values_are_hidden(resource_type: int, name: str, hidden: bool) -> None:
    assert config_types() is not None, "Kafka's config types are read from controller/kafka_configs.json"
    assert sensitive(resource_type, name) is hidden


async def test_create_topics_says_partitions_replicas_assignments_and_configs() -> None:
    topic = {
        "name": "payments",
        "num_partitions": -1,
        "replication_factor": -1,
        "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}, {"partition_index": 1, "broker_ids": [2, 3]}],
        "configs": [{"name": "retention.ms", "value": "1000"}, {"name": "secret.thing.password", "value": SECRET}],
    }
    data, line = await intent(ApiKey.CREATE_TOPICS, 7, {"topics": [topic, {**topic, "name": "plain", "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": []}], "timeout": 5000, "validate_only": True})
    assert SECRET.encode() not in line
    assert data["request"] == {
        "topics": [
            {
                "name": "payments",
                "numPartitions": -1,
                "replicationFactor": -1,
                "assignments": [{"partitionIndex": 0, "brokerIds": [1, 2]}, {"partitionIndex": 1, "brokerIds": [2, 3]}],
                "configs": [
                    {"name": "retention.ms", "operation": "SET", "value": "1000", "sensitive": False},
                    {"name": "secret.thing.password", "operation": "SET", "value": HIDDEN, "sensitive": True},
                ],
            },
            {"name": "plain", "numPartitions": 3, "replicationFactor": 1, "assignments": [], "configs": []},
        ],
        "validateOnly": True,
    }


async def test_create_partitions_says_the_new_count_and_assignments() -> None:
    values = {
        "topics": [{"name": "orders", "count": 6, "assignments": [{"broker_ids": [1]}, {"broker_ids": [2]}]}, {"name": "logs", "count": 3, "assignments": None}],
        "timeout": 5000,
        "validate_only": False,
    }
    data, _ = await intent(ApiKey.CREATE_PARTITIONS, 3, values)
    assert data["request"] == {
        "topics": [{"name": "orders", "count": 6, "assignments": [{"brokerIds": [1]}, {"brokerIds": [2]}]}, {"name": "logs", "count": 3, "assignments": None}],
        "validateOnly": False,
    }


async def test_delete_topics_by_name_and_by_id() -> None:
    by_name, _ = await intent(ApiKey.DELETE_TOPICS, 5, {"topic_names": ["a", "b"], "timeout": 5000})
    assert by_name["request"] == {"topics": [{"name": "a", "topicId": None}, {"name": "b", "topicId": None}]}
    topic_id = uuid.UUID("00000000-0000-0000-0000-0000000000ab")
    by_id, _ = await intent(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": topic_id}], "timeout": 5000})
    assert by_id["request"] == {"topics": [{"name": None, "topicId": str(topic_id)}]}


async def test_alter_client_quotas_says_entities_and_values() -> None:
    values = {
        "entries": [
            {
                "entity": [{"entity_type": "user", "entity_name": "alice"}, {"entity_type": "client-id", "entity_name": None}],
                "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}, {"key": "request_percentage", "value": 0.0, "remove": True}],
            }
        ],
        "validate_only": False,
    }
    data, _ = await intent(ApiKey.ALTER_CLIENT_QUOTAS, 1, values)
    assert data["request"] == {
        "entries": [
            {
                "entity": [{"entityType": "user", "entityName": "alice"}, {"entityType": "client-id", "entityName": None}],
                "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}, {"key": "request_percentage", "value": 0.0, "remove": True}],
            }
        ],
        "validateOnly": False,
    }


async def test_a_quota_value_that_is_no_number_is_kept_as_java_prints_it() -> None:
    """Found by the differential conformance tier: a NaN quota (Kafka refuses it) was written as null, which the
    schema refused; it is kept as Java prints it."""
    ops = [{"key": k, "value": v, "remove": False} for k, v in (("a", float("nan")), ("b", float("inf")), ("c", float("-inf")))]
    values = {"entries": [{"entity": [{"entity_type": "user", "entity_name": "q"}], "ops": ops}], "validate_only": True}
    data, line = await intent(ApiKey.ALTER_CLIENT_QUOTAS, 1, values)
    assert [op["value"] for op in data["request"]["entries"][0]["ops"]] == ["NaN", "Infinity", "-Infinity"]
    assert b"null" not in line.split(b'"request"', 1)[1]


async def test_scram_credentials_say_user_mechanism_and_iterations_never_salt_or_salted_password() -> None:
    salt, salted = b"SALT-bytes-never-shown", b"SALTED-PASSWORD-never-shown"
    values = {
        "deletions": [{"name": "mallory", "mechanism": 1}],
        "upsertions": [{"name": "alice", "mechanism": 2, "iterations": 8192, "salt": salt, "salted_password": salted}],
    }
    data, line = await intent(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, values)
    assert data["request"] == {
        "deletions": [{"name": "mallory", "mechanism": "SCRAM-SHA-256"}],
        "upsertions": [{"name": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 8192}],
    }
    import base64

    for secret in (salt, salted):
        assert secret not in line and base64.b64encode(secret) not in line and secret.hex().encode() not in line


async def test_delegation_tokens_say_renewers_and_lifetimes_never_the_hmac() -> None:
    hmac = b"HMAC-of-the-token-never-shown"
    created, _ = await intent(
        ApiKey.CREATE_DELEGATION_TOKEN,
        3,
        {
            "owner_principal_type": "User",
            "owner_principal_name": "bob",
            "renewers": [{"principal_type": "User", "principal_name": "alice"}],
            "max_lifetime": 3_600_000,
        },
    )
    assert created["request"] == {"owner": "User:bob", "renewers": ["User:alice"], "maxLifetimeMs": 3_600_000}
    own, _ = await intent(ApiKey.CREATE_DELEGATION_TOKEN, 1, {"renewers": [], "max_lifetime": -1})
    assert own["request"] == {"owner": None, "renewers": [], "maxLifetimeMs": -1}
    renewed, renew_line = await intent(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": hmac, "renew_period": 60_000})
    expired, expire_line = await intent(ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": hmac, "expiry_time_period": -1})
    assert renewed["request"] == {"renewPeriodMs": 60_000} and expired["request"] == {"expiryTimePeriodMs": -1}
    import base64

    for line in (renew_line, expire_line):
        assert hmac not in line and base64.b64encode(hmac) not in line and hmac.hex().encode() not in line


async def test_update_features_says_levels_and_upgrade_types() -> None:
    v1, _ = await intent(
        ApiKey.UPDATE_FEATURES,
        1,
        {
            "timeout": 5000,
            "feature_updates": [{"feature": "metadata.version", "max_version_level": 27, "upgrade_type": 1}, {"feature": "kraft.version", "max_version_level": 0, "upgrade_type": 3}],
            "validate_only": True,
        },
    )
    assert v1["request"] == {
        "featureUpdates": [
            {"feature": "metadata.version", "maxVersionLevel": 27, "upgradeType": "UPGRADE"},
            {"feature": "kraft.version", "maxVersionLevel": 0, "upgradeType": "UNSAFE_DOWNGRADE"},
        ],
        "validateOnly": True,
    }
    v0, _ = await intent(ApiKey.UPDATE_FEATURES, 0, {"timeout": 5000, "feature_updates": [{"feature": "group.version", "max_version_level": 0, "allow_downgrade": True}]})
    assert v0["request"]["featureUpdates"] == [{"feature": "group.version", "maxVersionLevel": 0, "upgradeType": "SAFE_DOWNGRADE"}]


async def test_raft_voters_say_ids_and_endpoints() -> None:
    directory = uuid.UUID("12345678-1234-5678-1234-567812345678")
    added, _ = await intent(
        ApiKey.ADD_RAFT_VOTER,
        1,
        {
            "cluster_id": "abc",
            "timeout": 5000,
            "voter_id": 3,
            "voter_directory_id": directory,
            "listeners": [{"name": "CONTROLLER", "host": "c3.example", "port": 9093}],
            "ack_when_committed": False,
        },
    )
    assert added["request"] == {
        "clusterId": "abc",
        "voterId": 3,
        "voterDirectoryId": str(directory),
        "listeners": [{"name": "CONTROLLER", "host": "c3.example", "port": 9093}],
        "ackWhenCommitted": False,
    }
    removed, _ = await intent(ApiKey.REMOVE_RAFT_VOTER, 0, {"cluster_id": None, "voter_id": 2, "voter_directory_id": directory})
    assert removed["request"] == {"clusterId": None, "voterId": 2, "voterDirectoryId": str(directory)}


async def test_elect_leaders_says_the_election_and_its_partitions() -> None:
    some, _ = await intent(ApiKey.ELECT_LEADERS, 2, {"election_type": 1, "topic_partitions": [{"topic": "orders", "partitions": [0, 2]}], "timeout": 5000})
    assert some["request"] == {"electionType": "UNCLEAN", "topicPartitions": [{"topic": "orders", "partitions": [0, 2]}]}
    every, _ = await intent(ApiKey.ELECT_LEADERS, 0, {"topic_partitions": None, "timeout": 5000})
    assert every["request"] == {"electionType": "PREFERRED", "topicPartitions": None}


async def test_partition_reassignments_say_the_target_replicas() -> None:
    values = {
        "timeout": 5000,
        "allow_replication_factor_change": False,
        "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": [3, 1, 2]}, {"partition_index": 1, "replicas": None}]}],
    }
    altered, _ = await intent(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, values)
    assert altered["request"] == {
        "topics": [{"name": "orders", "partitions": [{"partitionIndex": 0, "replicas": [3, 1, 2]}, {"partitionIndex": 1, "replicas": None}]}],
        "allowReplicationFactorChange": False,
    }
    listed, _ = await intent(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout": 5000, "topics": [{"name": "orders", "partition_indexes": [0]}]})
    assert listed["request"] == {"topics": [{"name": "orders", "partitionIndexes": [0]}]}


async def test_the_other_forwarded_apis() -> None:
    unregistered, _ = await intent(ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 7})
    assert unregistered["request"] == {"brokerId": 7}
    quorum, _ = await intent(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
    assert quorum["request"] == {"topics": [{"topicName": "__cluster_metadata", "partitions": [0]}]}


def test_every_forwarded_api_has_its_parameters() -> None:
    """One entry per API in authz/admin_apis.py: a new forwarded API cannot come without what its intent records."""
    assert all(api.parameters is not None for api in ADMIN_APIS.values())


# -- bounds --------------------------------------------------------------------------------------


async def test_long_lists_keep_their_first_entries_and_count_the_rest_by_path() -> None:
    limits = RecordLimits(max_resources=3)
    topic = {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [{"partition_index": i, "broker_ids": [1, 2, 3, 4, 5]} for i in range(5)], "configs": []}
    data, _ = await intent(ApiKey.CREATE_TOPICS, 7, {"topics": [{**topic, "name": f"t{i}"} for i in range(5)], "timeout": 1, "validate_only": False}, limits=limits)
    request = data["request"]
    assert [t["name"] for t in request["topics"]] == ["t0", "t1", "t2"]
    assert all(len(t["assignments"]) == 3 and all(len(a["brokerIds"]) == 3 for a in t["assignments"]) for t in request["topics"])
    assert data["truncated"]["omitted"] == {
        "resources": 2,
        "request.topics": 2,
        "request.topics.assignments": 3 * 2,
        "request.topics.assignments.brokerIds": 9 * 2,
    }


async def test_nested_lists_share_one_budget() -> None:
    """A list of lists of lists cannot make the record (or the work to build it) grow as the product of its lengths."""
    limits = RecordLimits(max_resources=64)
    assignments = [{"partition_index": i, "broker_ids": list(range(64))} for i in range(64)]
    topics = [{"name": f"t{i}", "num_partitions": 1, "replication_factor": 1, "assignments": assignments, "configs": []} for i in range(64)]
    data, _ = await intent(ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout": 1, "validate_only": False}, limits=limits)

    def entries(value: Any) -> int:
        if isinstance(value, list):
            return len(value) + sum(entries(item) for item in value)
        if isinstance(value, dict):
            return sum(entries(item) for item in value.values())
        return 0

    assert entries(data["request"]) <= 64 * 16
    assert sum(v for k, v in data["truncated"]["omitted"].items() if k.startswith("request.")) > 0


async def test_long_strings_are_cut_and_named() -> None:
    name = "n" * 500
    data, line = await intent(ApiKey.CREATE_ACLS, 3, {"creations": [_acl(principal=f"User:{name}")]}, limits=RecordLimits(max_string_chars=64))
    principal = data["request"]["creations"][0]["principal"]
    assert principal.endswith("...[truncated]") and len(principal) < 100
    assert "request.creations.principal" in data["truncated"]["fields"]
    assert name.encode() not in line


async def test_the_record_stays_within_its_byte_limit() -> None:
    limits = RecordLimits(max_string_chars=4096, max_resources=1000, max_record_bytes=8192)
    creations = [_acl(principal=f"User:{'p' * 1000}{i}") for i in range(200)]
    data, line = await intent(ApiKey.CREATE_ACLS, 3, {"creations": creations}, limits=limits)
    assert len(line) <= 8192
    assert data["truncated"]["omitted"]["request.creations"] > 0


async def test_the_outcome_repeats_neither_the_parameters_nor_their_omissions() -> None:
    header, body = _decoded(ApiKey.CREATE_ACLS, 3, {"creations": [_acl(), _acl(), _acl()]})
    sink = FlakySink(failures=0)
    log = AuditLog([sink], limits=RecordLimits(max_resources=2))
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        audit = RequestAudit(log, 1, CALLER, header, resources=resources_of(ApiKey.CREATE_ACLS, body), forwarding=Forwarding("User:proxy", "c:9093"))
        await audit.intent(body)
        await audit.outcome(0, 0, [])
        await log.aclose(5)
    intent_data, outcome_data = (orjson.loads(entry.line)["data"] for entry in sink.kept)
    assert intent_data["truncated"]["omitted"] == {"resources": 1, "request.creations": 1}
    assert "request" not in outcome_data and outcome_data["truncated"]["omitted"] == {"resources": 1}


def test_without_kafkas_config_types_every_typed_value_is_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: a proxy installed without controller/kafka_configs.json cannot tell a password from a number."""
    from proxy.audit import config_secrets

    def forget() -> None:
        config_secrets.config_types.cache_clear()
        config_secrets._remembered.cache_clear()

    monkeypatch.setattr(config_secrets, "data_file", lambda: None)
    forget()
    try:
        assert config_secrets.config_types() is None
        assert sensitive(2, "retention.ms") and sensitive(4, "num.io.threads") and sensitive(32, "consumer.session.timeout.ms")
        assert not sensitive(8, "kafka.server.ReplicaManager") and not sensitive(16, "metrics")
    finally:
        monkeypatch.undo()
        forget()
    assert config_types() is not None and not sensitive(2, "retention.ms")
