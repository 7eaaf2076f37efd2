"""The action map: which operations on which resources each admin API needs.

CreateTopics: CREATE on CLUSTER or on each TOPIC. DeleteTopics: DELETE on
TOPIC. CreatePartitions: ALTER on TOPIC. (Incremental)AlterConfigs:
ALTER_CONFIGS on the TOPIC, or on CLUSTER for broker resources;
DescribeConfigs likewise with DESCRIBE_CONFIGS. Create/DeleteAcls: ALTER on
CLUSTER. CreateDelegationToken for another owner: CREATE_TOKENS on that
owner as a USER resource (`token_owner`); for oneself, and to renew or expire
a token (the controller checks owner and renewers, not ACLs), nothing. The
cluster-level APIs are in `CLUSTER_OPERATIONS`. The interop suite checks each
entry against a real Kafka controller.

Each admin API's entry in authz/admin_apis.py names its resources with these.
"""

from dataclasses import dataclass
from typing import Any

from authz.model import CLUSTER_NAME, Operation, PatternType, RequestContext, ResourceType
from envelope.apis import ApiKey
from envelope.config_resources import CONFIG_TOPIC
from envelope.java_types import to_int


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


def topics(names: list[str], operation: Operation) -> list[ResourceAccess]:
    return [ResourceAccess(ResourceType.TOPIC, n, PatternType.LITERAL, operation) for n in names]


def config_resource(resource_type: int, name: str, operation: Operation) -> ResourceAccess:
    if resource_type == CONFIG_TOPIC:
        return ResourceAccess(ResourceType.TOPIC, name, PatternType.LITERAL, operation)
    return ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, operation)


def acl_target(item: Any, pattern_field: str) -> ResourceAccess:
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


def cluster(operation: Operation) -> list[ResourceAccess]:
    return [ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, operation)]


def token_owner(body: Any) -> list[ResourceAccess]:
    """CreateDelegationToken: CREATE_TOKENS on the owner it names (v3+), a USER resource named `Type:name`, as
    ControllerApis asks when the owner is not the requester; a request that names no owner (or an empty name)
    asks for the requester's own token, which no ACL decides."""
    name = getattr(body, "owner_principal_name", None)
    if not name:
        return []
    kind = getattr(body, "owner_principal_type", None)
    # a null type with a name fails in Kafka before any ACL is asked; the audit names it as Java prints a null
    return [ResourceAccess(ResourceType.USER, f"{'null' if kind is None else kind}:{name}", PatternType.LITERAL, Operation.CREATE_TOKENS)]


# Cluster-level admin APIs and the one operation on CLUSTER each needs (Kafka's ControllerApis / KafkaApis).
CLUSTER_OPERATIONS: dict[int, Operation] = {
    ApiKey.DESCRIBE_ACLS: Operation.DESCRIBE,
    ApiKey.ELECT_LEADERS: Operation.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Operation.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Operation.DESCRIBE,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Operation.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CLIENT_QUOTAS: Operation.ALTER_CONFIGS,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Operation.DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Operation.ALTER,
    ApiKey.DESCRIBE_QUORUM: Operation.DESCRIBE,
    ApiKey.UPDATE_FEATURES: Operation.ALTER,
    ApiKey.UNREGISTER_BROKER: Operation.ALTER,
    ApiKey.ADD_RAFT_VOTER: Operation.ALTER,
    ApiKey.REMOVE_RAFT_VOTER: Operation.ALTER,
}


def subject_of(resources: list[ResourceAccess]) -> str | None:
    if not resources:
        return None
    first = resources[0]
    return f"{first.resource_type.name.lower()}:{first.name}"


# Kafka's AclEntry.supportedOperations for the resource types answers carry an `authorized_operations` bit field of
# (Metadata and DescribeCluster: TOPIC and CLUSTER; DescribeGroups: GROUP). 4.3 answers 3576 and 8096 for a super user.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
}

def operations_field(operations: list[Operation]) -> int:
    """Kafka's Utils.to32BitField: bit `code` set for each operation, as a signed 32-bit int."""
    bits = 0
    for operation in operations:
        bits |= 1 << int(operation)
    return to_int(bits)


def supported_accesses(resource_type: ResourceType, name: str) -> list[ResourceAccess]:
    """One access per operation `resource_type` supports, in SUPPORTED_OPERATIONS' order: what authorizedOperations asks."""
    return [ResourceAccess(resource_type, name, PatternType.LITERAL, op) for op in SUPPORTED_OPERATIONS[resource_type]]


def cluster_denied(ctx: RequestContext, operation: Operation) -> str:
    """The message of Kafka's ClusterAuthorizationException from AuthHelper.authorizeClusterOperation.

    Kafka prints its RequestChannel.Request there (processor, connection id, buffer: nothing a
    client can predict); this names the same session, listener and protocol in the same shape."""
    request = (
        f"Request(session=Session({ctx.principal},/{ctx.client_address}), listenerName=ListenerName({ctx.listener}), "
        f"securityProtocol={ctx.security_protocol})"
    )
    return f"Request {request} needs {operation.name} permission."
