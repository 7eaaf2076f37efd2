"""The workflow in confluent-kafka (librdkafka) and in kafka-python, each run in a child process.

    python -m tests.interop.client_matrix.python_clients confluent-kafka '<WorkflowSpec as JSON>'

prints one JSON object, step -> outcome, as its last line. A child process, because a client that
crashes (librdkafka once died with SIGSEGV on the proxy's answer) must fail its cell, not the test run.
Reads right after a change are polled, bounded: a Kafka broker learns the controller's changes a
moment later, and a client asking it directly sees that too.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tests.interop.client_matrix.workflow import (
    ACL_PRINCIPAL,
    ALTERED_CONFIG,
    PARTITIONS_AFTER,
    SHOWN_CONFIGS,
    TOPIC_CONFIG,
    WorkflowSpec,
    cluster_id_shape,
)

TIMEOUT = 60.0
SETTLE = 20.0
"""How long a read may wait for a change to reach the broker it asks."""
T = TypeVar("T")


def settled(read: Callable[[], T], done: Callable[[T], bool]) -> T:
    deadline = time.monotonic() + SETTLE
    seen = read()
    while not done(seen) and time.monotonic() < deadline:
        time.sleep(0.25)
        seen = read()
    return seen


# --------------------------------------------------------------------------- confluent-kafka


def confluent_kafka_workflow(spec: WorkflowSpec) -> dict[str, Any]:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        NewPartitions,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    def admin(user: tuple[str, str]) -> Any:
        return AdminClient(
            {
                "bootstrap.servers": spec.bootstrap,
                "security.protocol": spec.security_protocol,
                "sasl.mechanism": "PLAIN",
                "sasl.username": user[0],
                "sasl.password": user[1],
                **spec.extra,
            }
        )

    def outcome(future: Any) -> Any:
        try:
            future.result(timeout=TIMEOUT)
        except KafkaException as exc:
            return exc.args[0].name()
        return "ok"

    def topic_state() -> dict[str, Any]:
        metadata = client.list_topics(topic=spec.topic, timeout=TIMEOUT)
        topic = metadata.topics.get(spec.topic)
        if topic is None:
            return {"error": "absent"}
        return {"error": topic.error.name() if topic.error is not None else None, "partitions": len(topic.partitions)}

    def configs() -> dict[str, Any]:
        resource = ConfigResource(ResourceType.TOPIC, spec.topic)
        try:
            entries = client.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(timeout=TIMEOUT)
        except KafkaException as exc:
            return {"error": exc.args[0].name()}

        def entry(item: Any) -> dict[str, Any]:
            return {
                "value": item.value,
                "source": ConfigSource(item.source).name,
                "read_only": item.is_read_only,
                "sensitive": item.is_sensitive,
                "default": item.is_default,
                "synonyms": [f"{ConfigSource(s.source).name}:{s.name}={s.value}" for s in item.synonyms.values()],
            }

        return {"count": len(entries), **{name: entry(entries[name]) if name in entries else None for name in SHOWN_CONFIGS}}

    acl = AclBinding(
        ResourceType.TOPIC, spec.topic, ResourcePatternType.LITERAL, ACL_PRINCIPAL, "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    # LITERAL, not MATCH: other suites share the Kafka node, and MATCH would also list (and delete) their '*' ACLs.
    acl_filter = AclBindingFilter(
        ResourceType.TOPIC, spec.topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY, AclPermissionType.ANY
    )

    def acls() -> Any:
        try:
            found = client.describe_acls(acl_filter, request_timeout=TIMEOUT).result(timeout=TIMEOUT)
        except KafkaException as exc:
            return exc.args[0].name()
        return sorted(str(binding) for binding in found)

    def metadata_view(*topic: str) -> Any:
        """librdkafka's own broker list, which it replaces from each Metadata answer (list_topics asks for one)."""
        try:
            metadata = client.list_topics(topic=topic[0] if topic else None, timeout=TIMEOUT)
        except KafkaException as exc:
            return exc.args[0].name()
        brokers = metadata.brokers.values()
        return {
            "brokers": sorted(b.id for b in brokers),
            "addresses": sorted({f"{b.host}:{b.port}" for b in brokers}),
            "controller": metadata.controller_id,
        }

    def cluster_view() -> Any:
        """describe_cluster: Metadata with no topics (librdkafka has no DescribeCluster)."""
        try:
            described = client.describe_cluster(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
        except KafkaException as exc:
            return exc.args[0].name()
        return {
            "brokers": sorted(node.id for node in described.nodes),
            "addresses": sorted({f"{node.host}:{node.port}" for node in described.nodes}),
            "controller": described.controller.id if described.controller is not None else -1,
        }

    def broker_config(broker: int) -> dict[str, Any]:
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        try:
            entries = client.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(timeout=TIMEOUT)
        except KafkaException as exc:
            return {"error": exc.args[0].name()}
        mir = entries.get("min.insync.replicas")
        return {"error": None, "has_configs": bool(entries), "min.insync.replicas": mir.value if mir is not None else None}

    scram_user = f"{spec.topic}-scram"

    def scrams() -> Any:
        try:
            described = client.describe_user_scram_credentials([scram_user], request_timeout=TIMEOUT)[scram_user].result(timeout=TIMEOUT)
        except KafkaException as exc:
            return exc.args[0].name()
        return sorted(f"{info.mechanism.name.replace('_', '-')}/{info.iterations}" for info in described.scram_credential_infos)

    def alter_scram(alteration: Any) -> Any:
        return outcome(client.alter_user_scram_credentials([alteration], request_timeout=TIMEOUT)[scram_user])

    client = admin(spec.admin)
    results: dict[str, Any] = {}
    for step in spec.steps:
        if step == "create_topic":
            new = NewTopic(spec.topic, num_partitions=1, replication_factor=1, config=dict([TOPIC_CONFIG]))
            results[step] = outcome(client.create_topics([new], operation_timeout=30)[spec.topic])
        elif step == "describe_topic":
            results[step] = settled(topic_state, lambda seen: seen.get("error") is None)
        elif step == "describe_configs":
            results[step] = configs()
        elif step == "alter_config":
            change = ConfigEntry(ALTERED_CONFIG[0], ALTERED_CONFIG[1], incremental_operation=AlterConfigOpType.SET)
            resource = ConfigResource(ResourceType.TOPIC, spec.topic, incremental_configs=[change])
            results[step] = outcome(client.incremental_alter_configs([resource])[resource])
        elif step == "read_back":
            seen = settled(configs, lambda seen: (seen.get(ALTERED_CONFIG[0]) or {}).get("value") == ALTERED_CONFIG[1])
            results[step] = seen.get(ALTERED_CONFIG[0], seen)
        elif step == "add_partitions":
            results[step] = outcome(client.create_partitions([NewPartitions(spec.topic, PARTITIONS_AFTER)])[spec.topic])
        elif step == "describe_partitions":
            results[step] = settled(topic_state, lambda seen: seen.get("partitions") == PARTITIONS_AFTER)
        elif step == "create_acl":
            results[step] = outcome(client.create_acls([acl])[acl])
        elif step == "describe_acls":
            results[step] = settled(acls, lambda seen: bool(seen))
        elif step == "delete_acls":
            try:
                deleted = client.delete_acls([acl_filter])[acl_filter].result(timeout=TIMEOUT)
                results[step] = sorted(str(binding) for binding in deleted)
            except KafkaException as exc:
                results[step] = exc.args[0].name()
        elif step == "acls_after_delete":
            results[step] = settled(acls, lambda seen: seen == [])
        elif step == "describe_cluster":
            described = client.describe_cluster(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
            nodes = [node.id for node in described.nodes]
            results[step] = {
                "cluster_id": described.cluster_id,
                "cluster_id_shape": cluster_id_shape(described.cluster_id),
                "controller_is_a_node": described.controller is not None and described.controller.id in nodes,
                "metadata_cluster_id": client.list_topics(timeout=TIMEOUT).cluster_id,
            }
        elif step == "refused":
            outsider = admin(spec.outsider)
            refused = NewTopic(f"{spec.topic}-refused", num_partitions=1, replication_factor=1)
            results[step] = outcome(outsider.create_topics([refused], operation_timeout=30)[refused.topic])
        elif step == "delete_topic":
            results[step] = outcome(client.delete_topics([spec.topic], operation_timeout=30)[spec.topic])
        elif step == "after_delete":
            results[step] = settled(topic_state, lambda seen: seen.get("error") is not None)
        elif step == "broker_list":
            views = {"metadata_before": metadata_view(), "describe_cluster_before": cluster_view()}
            views["metadata_with_topic"] = metadata_view(spec.topic)
            views["metadata_after"] = metadata_view()
            views["describe_cluster_after"] = cluster_view()
            results[step] = {"views": views}
        elif step == "broker_configs":
            listed: set[int] = set()
            for view in (metadata_view(), metadata_view(spec.topic), cluster_view()):
                if isinstance(view, dict):
                    listed.update(view["brokers"])
            results[step] = {"by_id": {str(broker): broker_config(broker) for broker in sorted(listed)}}
        elif step == "elect_leaders":
            from confluent_kafka import ElectionType, TopicPartition

            try:
                # No keyword arguments: confluent-kafka 2.16.1's elect_leaders raises SystemError ("more argument specifiers
                # than keyword list entries") when given request_timeout or operation_timeout.
                elected = client.elect_leaders(ElectionType.PREFERRED, [TopicPartition(spec.topic, 0)]).result(timeout=TIMEOUT)
                # each partition's error comes as a KafkaError, not wrapped in a KafkaException
                results[step] = {f"{tp.topic}-{tp.partition}": error.name() if error else "ok" for tp, error in elected.items()}
            except KafkaException as exc:
                results[step] = exc.args[0].name()
        elif step == "scram_credentials":
            from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion

            upsert = UserScramCredentialUpsertion(scram_user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"matrix-secret")
            done: dict[str, Any] = {"upsert": alter_scram(upsert)}
            done["described"] = settled(scrams, lambda seen: isinstance(seen, list))
            done["delete"] = alter_scram(UserScramCredentialDeletion(scram_user, ScramMechanism.SCRAM_SHA_256))
            done["after_delete"] = settled(scrams, lambda seen: not isinstance(seen, list))
            results[step] = done
        else:
            raise ValueError(f"unknown step {step}")
    return results


# --------------------------------------------------------------------------- kafka-python


def kafka_python_workflow(spec: WorkflowSpec) -> dict[str, Any]:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        KafkaAdminClient,
        NewPartitions,
        NewTopic,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )
    from kafka.errors import KafkaError

    def admin(user: tuple[str, str]) -> Any:
        return KafkaAdminClient(
            bootstrap_servers=spec.bootstrap,
            security_protocol=spec.security_protocol,
            sasl_mechanism="PLAIN",
            sasl_plain_username=user[0],
            sasl_plain_password=user[1],
            request_timeout_ms=int(TIMEOUT * 1000),
        )

    def outcome(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            call(*args, **kwargs)
        except KafkaError as exc:
            return type(exc).__name__
        return "ok"

    def topic_state() -> dict[str, Any]:
        (described,) = client.describe_topics([spec.topic])
        error = int(described["error_code"])
        return {"error": error or None, "partitions": len(described["partitions"])}

    def configs() -> dict[str, Any]:
        resource = ConfigResource(ConfigResourceType.TOPIC, spec.topic)
        try:
            described = client.describe_configs([resource], include_synonyms=True, config_filter="all")
        except KafkaError as exc:
            return {"error": type(exc).__name__}
        entries = described["topic"][spec.topic]

        def entry(item: dict[str, Any]) -> dict[str, Any]:
            return {
                "value": item["value"],
                "source": item["config_source"],
                "read_only": item["read_only"],
                "sensitive": item["is_sensitive"],
                "type": item.get("config_type"),
                "synonyms": [str(synonym) for synonym in item.get("synonyms", [])],
            }

        return {"count": len(entries), **{name: entry(entries[name]) if name in entries else None for name in SHOWN_CONFIGS}}

    pattern = ResourcePattern(ResourceType.TOPIC, spec.topic, ACLResourcePatternType.LITERAL)
    acl = ACL(ACL_PRINCIPAL, "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
    acl_filter = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, ResourcePatternFilter(ResourceType.TOPIC, spec.topic, ACLResourcePatternType.LITERAL))

    def render(binding: Any) -> str:
        return f"{binding.principal} {binding.host} {binding.operation.name} {binding.permission_type.name} {binding.resource_pattern}"

    def acls() -> Any:
        try:
            found, error = client.describe_acls(acl_filter)
        except KafkaError as exc:
            return type(exc).__name__
        return sorted(render(b) for b in found) if not error.errno else type(error).__name__

    def cluster_view() -> Any:
        """describe_cluster: DescribeCluster v2."""
        try:
            described = client.describe_cluster()
        except KafkaError as exc:
            return type(exc).__name__
        brokers = described["brokers"]
        return {
            "brokers": sorted(b["broker_id"] for b in brokers),
            "addresses": sorted({f"{b['host']}:{b['port']}" for b in brokers}),
            "controller": described["controller_id"],
        }

    def partition_brokers() -> set[int]:
        (described,) = client.describe_topics([spec.topic])
        return {node for p in described["partitions"] for node in (p["leader_id"], *p["replica_nodes"], *p["isr_nodes"]) if node >= 0}

    def broker_config(broker: int) -> dict[str, Any]:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker))
        try:
            described = client.describe_configs([resource], config_filter="all")
        except KafkaError as exc:
            return {"error": type(exc).__name__}
        entries = described["broker"][str(broker)]
        mir = entries.get("min.insync.replicas")
        return {"error": None, "has_configs": bool(entries), "min.insync.replicas": mir["value"] if mir is not None else None}

    client = admin(spec.admin)
    results: dict[str, Any] = {}
    try:
        for step in spec.steps:
            if step == "create_topic":
                new = NewTopic(spec.topic, num_partitions=1, replication_factor=1, topic_configs=dict([TOPIC_CONFIG]))
                results[step] = outcome(client.create_topics, [new], timeout_ms=30000)
            elif step == "describe_topic":
                results[step] = settled(topic_state, lambda seen: seen["error"] is None)
            elif step == "describe_configs":
                results[step] = configs()
            elif step == "alter_config":
                resource = ConfigResource(ConfigResourceType.TOPIC, spec.topic, configs=dict([ALTERED_CONFIG]))
                results[step] = outcome(client.alter_configs, [resource], incremental=True)
            elif step == "read_back":
                seen = settled(configs, lambda seen: (seen.get(ALTERED_CONFIG[0]) or {}).get("value") == ALTERED_CONFIG[1])
                results[step] = seen.get(ALTERED_CONFIG[0], seen)
            elif step == "add_partitions":
                results[step] = outcome(client.create_partitions, {spec.topic: NewPartitions(PARTITIONS_AFTER)}, timeout_ms=30000)
            elif step == "describe_partitions":
                results[step] = settled(topic_state, lambda seen: seen["partitions"] == PARTITIONS_AFTER)
            elif step == "create_acl":
                created = client.create_acls([acl])
                results[step] = "ok" if created["succeeded"] else sorted(type(e).__name__ for _, e in created["failed"])
            elif step == "describe_acls":
                results[step] = settled(acls, lambda seen: bool(seen))
            elif step == "delete_acls":
                try:
                    ((_, deleted, error),) = client.delete_acls([acl_filter])
                    results[step] = sorted(render(b) for b in deleted) if not error.errno else type(error).__name__
                except KafkaError as exc:
                    results[step] = type(exc).__name__
            elif step == "acls_after_delete":
                results[step] = settled(acls, lambda seen: seen == [])
            elif step == "describe_cluster":
                described = client.describe_cluster()
                nodes = [broker["broker_id"] for broker in described["brokers"]]
                results[step] = {
                    "cluster_id": described["cluster_id"],
                    "cluster_id_shape": cluster_id_shape(described["cluster_id"]),
                    "controller_is_a_node": described["controller_id"] in nodes,
                }
            elif step == "refused":
                outsider = admin(spec.outsider)
                try:
                    refused = NewTopic(f"{spec.topic}-refused", num_partitions=1, replication_factor=1)
                    results[step] = outcome(outsider.create_topics, [refused], timeout_ms=30000)
                finally:
                    outsider.close()
            elif step == "delete_topic":
                results[step] = outcome(client.delete_topics, [spec.topic], timeout_ms=30000)
            elif step == "after_delete":
                results[step] = settled(topic_state, lambda seen: seen["error"] is not None)
            elif step == "broker_list":
                views = {"describe_cluster_before": cluster_view()}
                try:
                    partition_brokers()
                    views["topic_describe"] = "ok"
                except KafkaError as exc:
                    views["topic_describe"] = type(exc).__name__
                views["describe_cluster_after"] = cluster_view()
                results[step] = {"views": views}
            elif step == "broker_configs":
                view = cluster_view()
                listed = partition_brokers() | set(view["brokers"] if isinstance(view, dict) else ())
                results[step] = {"by_id": {str(broker): broker_config(broker) for broker in sorted(listed)}}
            elif step == "list_reassignments":
                try:
                    listed = client.list_partition_reassignments({spec.topic: [0]})
                    results[step] = sorted(f"{tp.topic}-{tp.partition} {state}" for tp, state in listed.items())
                except KafkaError as exc:
                    results[step] = type(exc).__name__
            else:
                raise ValueError(f"unknown step {step}")
    finally:
        client.close()
    return results


WORKFLOWS: dict[str, Callable[[WorkflowSpec], dict[str, Any]]] = {
    "confluent-kafka": confluent_kafka_workflow,
    "kafka-python": kafka_python_workflow,
}


def main(argv: list[str]) -> int:
    client, spec_json = argv
    results = WORKFLOWS[client](WorkflowSpec.from_json(spec_json))
    print(json.dumps(results, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
