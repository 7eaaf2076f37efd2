"""How each authorization question is asked of a controller without changing the cluster: the dry request, what
the controller checks before anything else, and how its answer reads as a decision.

Pure: a plan names the API, version and request values; `envelope-proxy authz probe` encodes them, wraps them in
an Envelope as the proxy forwards a client's request, and reads the answer's error codes with `decide`. Each
entry was checked against Kafka's ControllerApis.scala (authorization before existence and validation) and
against a real 4.3.1 controller; docs/authorization.md ("Testing your authorizer") lists them.

A question without a dry path raises NotProbeable with the reason: the probe never guesses.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from authz.model import CLUSTER_NAME, Action, Decision, Operation, ResourceType
from envelope.apis import ApiKey
from envelope.config_resources import CONFIG_BROKER, CONFIG_GROUP, CONFIG_TOPIC

CLUSTER_WIDE_BROKER = ""
"""The broker config resource that names no broker: the cluster-wide default, which every controller has."""
PROBE_TIMEOUT_MS = 30000
"""The timeout the dry requests carry (their controllers answer a dry request at once)."""
USE_DEFAULT = -1
"""CreateTopics v4+: the broker default for partitions and replication factor, which any cluster can satisfy."""


class NotProbeable(ValueError):
    """The question has no dry path: the message says why, for the report."""


@dataclass(frozen=True)
class ProbePlan:
    api: ApiKey
    version: int
    values: dict[str, Any]
    asks: tuple[Action, ...]
    """What the controller asks the authorizer, in its order; any one allowed decides (CreateTopics: CLUSTER, then TOPIC)."""
    denied: frozenset[int]
    """Codes that mean the authorizer said no."""
    allowed: frozenset[int]
    """Codes the controller gives only after the authorizer said yes (validation, existence, success)."""
    how: str
    """The dry path, in a few words, for reports."""
    changes: bool = False
    """Sent only with --allow-changes: allowed, it changes the cluster."""
    any_of: bool = field(default=False)
    """`asks` are alternatives (allowed when any is) rather than all required."""


def decide(plan: ProbePlan, codes: set[int]) -> Decision | None:
    """The decision the answer's error codes (top-level and per resource) show; None when they show none (a code
    the controller gives before it asks the authorizer, or a failure)."""
    if codes & plan.denied:
        return Decision.DENIED
    if codes and codes <= plan.allowed:
        return Decision.ALLOWED
    return None


_TOPIC_DENIED = frozenset({ErrorCode.topic_authorization_failed})
_CLUSTER_DENIED = frozenset({ErrorCode.cluster_authorization_failed})
_CONFIG_DENIED = frozenset({ErrorCode.topic_authorization_failed, ErrorCode.cluster_authorization_failed, ErrorCode.group_authorization_failed})
_CONFIG_ALLOWED = frozenset(
    {ErrorCode.none, ErrorCode.unknown_topic_or_partition, ErrorCode.invalid_config, ErrorCode.policy_violation, ErrorCode.broker_id_not_registered}
)


def _create_topics(name: str) -> ProbePlan:
    topic = {"name": name, "num_partitions": USE_DEFAULT, "replication_factor": USE_DEFAULT, "assignments": [], "configs": []}
    return ProbePlan(
        ApiKey.CREATE_TOPICS,
        7,
        {"topics": [topic], "timeout": PROBE_TIMEOUT_MS, "validate_only": True},
        (Action(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME), Action(Operation.CREATE, ResourceType.TOPIC, name)),
        _TOPIC_DENIED,
        frozenset(
            {
                ErrorCode.none,
                ErrorCode.topic_already_exists,
                ErrorCode.invalid_topic_exception,
                ErrorCode.invalid_partitions,
                ErrorCode.invalid_replication_factor,
                ErrorCode.invalid_config,
                ErrorCode.policy_violation,
            }
        ),
        "CreateTopics validateOnly (default partitions and replication)",
        any_of=True,
    )


def _create_partitions(name: str) -> ProbePlan:
    # one partition is never more than a topic has: even authorized, nothing could be added
    return ProbePlan(
        ApiKey.CREATE_PARTITIONS,
        3,
        {"topics": [{"name": name, "count": 1, "assignments": None}], "timeout": PROBE_TIMEOUT_MS, "validate_only": True},
        (Action(Operation.ALTER, ResourceType.TOPIC, name),),
        _TOPIC_DENIED,
        frozenset({ErrorCode.none, ErrorCode.invalid_partitions, ErrorCode.unknown_topic_or_partition, ErrorCode.policy_violation}),
        "CreatePartitions validateOnly to 1 partition",
    )


_CONFIG_TYPES: dict[ResourceType, tuple[int, Operation]] = {
    ResourceType.TOPIC: (CONFIG_TOPIC, Operation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (CONFIG_BROKER, Operation.ALTER_CONFIGS),
    ResourceType.GROUP: (CONFIG_GROUP, Operation.ALTER_CONFIGS),
}


def _alter_configs(api: ApiKey, resource_type: ResourceType, name: str) -> ProbePlan:
    if resource_type not in _CONFIG_TYPES or (api == ApiKey.ALTER_CONFIGS and resource_type is ResourceType.GROUP):
        raise NotProbeable(f"{api.name} takes no {resource_type.name} resource on a controller")
    config_type, operation = _CONFIG_TYPES[resource_type]
    target = CLUSTER_WIDE_BROKER if resource_type is ResourceType.CLUSTER else name
    version = 1 if api == ApiKey.INCREMENTAL_ALTER_CONFIGS else 2
    return ProbePlan(
        api,
        version,
        {"resources": [{"resource_type": config_type, "resource_name": target, "configs": []}], "validate_only": True},
        (Action(operation, resource_type, CLUSTER_NAME if resource_type is ResourceType.CLUSTER else name),),
        _CONFIG_DENIED,
        _CONFIG_ALLOWED,
        f"{api.name.replace('_', ' ').title().replace(' ', '')} validateOnly, no config entries",
    )


def _cluster_alter(api: ApiKey, version: int, values: dict[str, Any], how: str, operation: Operation = Operation.ALTER) -> ProbePlan:
    return ProbePlan(api, version, values, (Action(operation, ResourceType.CLUSTER, CLUSTER_NAME),), _CLUSTER_DENIED, frozenset({ErrorCode.none}), how)


def _elect_leaders(_: str) -> ProbePlan:
    # an empty list (not null, which means every partition) elects nothing; v1+ carries a top-level code
    return _cluster_alter(
        ApiKey.ELECT_LEADERS, 2, {"election_type": 0, "topic_partitions": [], "timeout": PROBE_TIMEOUT_MS}, "ElectLeaders of no partition"
    )


def _alter_reassignments(_: str) -> ProbePlan:
    return _cluster_alter(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout": PROBE_TIMEOUT_MS, "topics": []}, "AlterPartitionReassignments of no topic"
    )


def _update_features(_: str) -> ProbePlan:
    values = {"timeout": PROBE_TIMEOUT_MS, "feature_updates": [], "validate_only": True}
    return _cluster_alter(ApiKey.UPDATE_FEATURES, 1, values, "UpdateFeatures validateOnly of no feature")


def _alter_client_quotas(_: str) -> ProbePlan:
    # one entity with no operations: validated, never written (entities need not exist)
    entry = {"entity": [{"entity_type": "user", "entity_name": "authz-probe"}], "ops": []}
    values = {"entries": [entry], "validate_only": True}
    return _cluster_alter(ApiKey.ALTER_CLIENT_QUOTAS, 1, values, "AlterClientQuotas validateOnly, no quota", Operation.ALTER_CONFIGS)


def _delete_topics(name: str) -> ProbePlan:
    return ProbePlan(
        ApiKey.DELETE_TOPICS,
        6,
        {"topics": [{"name": name, "topic_id": None}], "timeout": PROBE_TIMEOUT_MS},
        (Action(Operation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME), Action(Operation.DELETE, ResourceType.TOPIC, name)),
        _TOPIC_DENIED,
        frozenset({ErrorCode.none}),
        "DeleteTopics, for real (--allow-changes)",
        changes=True,
        any_of=True,
    )


_DELETE_REFUSED = (
    "DeleteTopics has no dry run, and it asks DELETE only of names that exist (an absent name answers DESCRIBE, "
    "or DELETE on CLUSTER): only --allow-changes deletes the topic to learn it"
)
_NO_DRY_PATH: dict[tuple[Operation, ResourceType], str] = {
    (Operation.CREATE, ResourceType.CLUSTER): (
        "CreateTopics asks CREATE on CLUSTER and then CREATE on each TOPIC: a topic-level grant answers the same, "
        "so the answer cannot tell them apart; probe CREATE on a TOPIC instead"
    ),
    (Operation.DESCRIBE, ResourceType.TOPIC): (
        "only DeleteTopics of an absent name shows DESCRIBE on a TOPIC, and a name that exists would be deleted: "
        "there is no dry path"
    ),
    (Operation.CREATE_TOKENS, ResourceType.USER): "CreateDelegationToken has no dry run: an allowed request creates a token",
    (Operation.CLUSTER_ACTION, ResourceType.CLUSTER): (
        "CLUSTER_ACTION is asked of the forwarder's own connection, never of a forwarded principal"
    ),
}
_READS = frozenset({Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS, Operation.READ, Operation.WRITE, Operation.IDEMPOTENT_WRITE, Operation.DESCRIBE_TOKENS})

PlanBuilder = Callable[[str], ProbePlan]

_BY_ACTION: dict[tuple[Operation, ResourceType], PlanBuilder] = {
    (Operation.CREATE, ResourceType.TOPIC): _create_topics,
    (Operation.ALTER, ResourceType.TOPIC): _create_partitions,
    (Operation.ALTER_CONFIGS, ResourceType.TOPIC): lambda name: _alter_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS, ResourceType.TOPIC, name),
    (Operation.ALTER_CONFIGS, ResourceType.CLUSTER): lambda name: _alter_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS, ResourceType.CLUSTER, name),
    (Operation.ALTER_CONFIGS, ResourceType.GROUP): lambda name: _alter_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS, ResourceType.GROUP, name),
    (Operation.ALTER, ResourceType.CLUSTER): _elect_leaders,
}


def plan_for_action(action: Action, *, allow_changes: bool = False) -> ProbePlan:
    """The dry request that asks the authorizer `action` first; NotProbeable with the reason when there is none."""
    key = (action.operation, action.resource_type)
    if key == (Operation.DELETE, ResourceType.TOPIC):
        if not allow_changes:
            raise NotProbeable(_DELETE_REFUSED)
        plan = _delete_topics(action.resource_name)
        return ProbePlan(plan.api, plan.version, plan.values, (action,), plan.denied, plan.allowed, plan.how, changes=True)
    builder = _BY_ACTION.get(key)
    if builder is not None:
        return builder(action.resource_name)
    if key in _NO_DRY_PATH:
        raise NotProbeable(_NO_DRY_PATH[key])
    if action.operation in _READS:
        raise NotProbeable(
            f"{action.operation.name} on {action.resource_type.name} is asked by reads, which a controller does not take "
            "in an Envelope: use `authz check` with the ACLs, or the what-if replay"
        )
    raise NotProbeable(f"no forwardable admin request asks {action.operation.name} on {action.resource_type.name} first")


_BY_API: dict[ApiKey, Callable[[ResourceType, str], ProbePlan]] = {
    ApiKey.CREATE_TOPICS: lambda _, name: _create_topics(name),
    ApiKey.CREATE_PARTITIONS: lambda _, name: _create_partitions(name),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: lambda kind, name: _alter_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS, kind, name),
    ApiKey.ALTER_CONFIGS: lambda kind, name: _alter_configs(ApiKey.ALTER_CONFIGS, kind, name),
    ApiKey.ELECT_LEADERS: lambda _, name: _elect_leaders(name),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: lambda _, name: _alter_reassignments(name),
    ApiKey.UPDATE_FEATURES: lambda _, name: _update_features(name),
    ApiKey.ALTER_CLIENT_QUOTAS: lambda _, name: _alter_client_quotas(name),
}
PROBED_APIS = frozenset(_BY_API) | {ApiKey.DELETE_TOPICS}
"""The admin requests a case may name (`"api"`)."""


def plan_for_api(api: ApiKey, resource_type: ResourceType, name: str, *, allow_changes: bool = False) -> ProbePlan:
    """The dry form of a named admin request, about `name` (its topic or config resource); NotProbeable when none."""
    if api == ApiKey.DELETE_TOPICS:
        if not allow_changes:
            raise NotProbeable(_DELETE_REFUSED)
        return _delete_topics(name)
    builder = _BY_API.get(api)
    if builder is None:
        raise NotProbeable(f"{api.name} has no dry form here (probed requests: {', '.join(sorted(a.name for a in PROBED_APIS))})")
    return builder(resource_type, name)


def api_by_name(text: str) -> ApiKey | None:
    """`CreateTopics`, `CREATE_TOPICS` or `kafka.CreateTopics` (an audit methodName) as an ApiKey; None when unknown."""
    wanted = text.removeprefix("kafka.").replace("_", "").lower()
    return next((key for key in ApiKey if key.name.replace("_", "").lower() == wanted), None)
