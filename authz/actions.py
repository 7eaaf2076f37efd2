"""The action map: which operations on which resources each admin API needs.

CreateTopics: CREATE on CLUSTER or on each TOPIC. DeleteTopics: DELETE on
TOPIC. CreatePartitions: ALTER on TOPIC. (Incremental)AlterConfigs:
ALTER_CONFIGS on the TOPIC, or on CLUSTER for broker resources;
DescribeConfigs likewise with DESCRIBE_CONFIGS. Create/DeleteAcls: ALTER on
CLUSTER. The cluster-level APIs are in `CLUSTER_OPERATIONS`. The interop
suite checks each entry against a real Kafka controller.

Used by the embedded controller to authorize and by the proxy to describe a
request's resources in its audit record.
"""

from dataclasses import dataclass
from typing import Any

from authz.model import CLUSTER_NAME, Operation, PatternType, ResourceType
from envelope.errors import ProtocolError

# Config resource types of (Incremental)AlterConfigs (ConfigResource.Type).
CONFIG_TOPIC = 2
CONFIG_BROKER = 4
CONFIG_BROKER_LOGGER = 8


@dataclass(frozen=True, slots=True)
class ResourceAccess:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    operation: Operation

    def as_audit(self) -> dict[str, str]:
        return {
            "type": self.resource_type.name,
            "name": self.name,
            "patternType": self.pattern_type.name,
            "operation": self.operation.name,
        }


def _topics(names: list[str], operation: Operation) -> list[ResourceAccess]:
    return [ResourceAccess(ResourceType.TOPIC, n, PatternType.LITERAL, operation) for n in names]


def _config_resource(resource_type: int, name: str, operation: Operation) -> ResourceAccess:
    if resource_type == CONFIG_TOPIC:
        return ResourceAccess(ResourceType.TOPIC, name, PatternType.LITERAL, operation)
    return ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, operation)


def _acl_target(item: Any, pattern_field: str) -> ResourceAccess:
    """A Create/DeleteAcls entry is an ALTER on the cluster, about the named resource."""
    try:
        resource_type = ResourceType(int(getattr(item, "resource_type", getattr(item, "resource_type_filter", 0))))
    except ValueError:
        resource_type = ResourceType.UNKNOWN
    try:
        pattern = PatternType(int(getattr(item, pattern_field, PatternType.LITERAL)))
    except ValueError:
        pattern = PatternType.UNKNOWN
    name = getattr(item, "resource_name", None) or getattr(item, "resource_name_filter", None) or "*"
    return ResourceAccess(resource_type, str(name), pattern, Operation.ALTER)


def _cluster(operation: Operation) -> list[ResourceAccess]:
    return [ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, operation)]


# Cluster-level admin APIs and the one operation on CLUSTER each needs (Kafka's ControllerApis / KafkaApis).
CLUSTER_OPERATIONS: dict[int, Operation] = {
    29: Operation.DESCRIBE,  # DescribeAcls
    43: Operation.ALTER,  # ElectLeaders
    45: Operation.ALTER,  # AlterPartitionReassignments
    46: Operation.DESCRIBE,  # ListPartitionReassignments
    48: Operation.DESCRIBE_CONFIGS,  # DescribeClientQuotas
    49: Operation.ALTER_CONFIGS,  # AlterClientQuotas
    50: Operation.DESCRIBE,  # DescribeUserScramCredentials
    51: Operation.ALTER,  # AlterUserScramCredentials
    55: Operation.DESCRIBE,  # DescribeQuorum
    57: Operation.ALTER,  # UpdateFeatures
}


def resources_of(api_key: int, body: Any) -> list[ResourceAccess]:
    """What a decoded admin request touches, with the operation Kafka checks.

    Raises ProtocolError for a body whose resources cannot be named (the caller
    refuses it: a mutation is never forwarded without its resources)."""
    try:
        return _resources_of(api_key, body)
    except (TypeError, AttributeError, ValueError) as exc:
        raise ProtocolError(f"cannot name the resources of api key {api_key}: {exc}") from exc


def _resources_of(api_key: int, body: Any) -> list[ResourceAccess]:
    match api_key:
        case 19:
            return _topics([str(t.name) for t in body.topics], Operation.CREATE)
        case 20:
            names = getattr(body, "topic_names", None)
            if names is None:
                names = [t.name or str(t.topic_id) for t in body.topics]
            return _topics([str(n) for n in names], Operation.DELETE)
        case 37:
            return _topics([str(t.name) for t in body.topics], Operation.ALTER)
        case 33 | 44:
            return [_config_resource(int(r.resource_type), str(r.resource_name), Operation.ALTER_CONFIGS) for r in body.resources]
        case 30:
            return [_acl_target(c, "resource_pattern_type") for c in body.creations]
        case 31:
            return [_acl_target(f, "pattern_type_filter") for f in body.filters]
        case 32:
            return [_config_resource(int(r.resource_type), str(r.resource_name), Operation.DESCRIBE_CONFIGS) for r in body.resources]
    if api_key in CLUSTER_OPERATIONS:
        return _cluster(CLUSTER_OPERATIONS[api_key])
    return []


def subject_of(resources: list[ResourceAccess]) -> str | None:
    if not resources:
        return None
    first = resources[0]
    return f"{first.resource_type.name.lower()}:{first.name}"
