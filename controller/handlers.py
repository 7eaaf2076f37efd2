"""The controller's admin API handlers: Kafka's validation, authorization and error codes.

Each handler takes the decoded request, the request context and the image,
applies the change (unless validate_only) and returns a version-independent
response dict for `envelope.build.build_entity`.
"""

import re
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from authz import (
    AclBinding,
    AclBindingFilter,
    AclStore,
    Authorizer,
    Operation,
    PatternType,
    PermissionType,
    RequestContext,
    ResourceType,
)
from authz.actions import CONFIG_BROKER, CONFIG_TOPIC
from authz.model import CLUSTER_NAME
from controller.authorize import AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED, allowed
from controller.image import Change, MetadataImage, Topic
from controller.topic_configs import LIST_CONFIGS, config_problem

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_AUTHORIZATION_FAILED = 29
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
INVALID_REQUEST = 42
SECURITY_DISABLED = 54
NO_ACL_STORE = "No Authorizer is configured."  # Kafka's words when ACL APIs meet a cluster without an ACL-keeping authorizer
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_ID = 100

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249


def topic_name_problem(name: str) -> str | None:
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, topic name: {name}"
    if not _LEGAL_TOPIC.match(name):
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


class Handlers:
    def __init__(
        self, image: MetadataImage, authorizer: Authorizer, *, default_partitions: int, default_replication_factor: int, broker_count: int
    ) -> None:
        self.image = image
        self.authorizer = authorizer
        self.acl_store: AclStore | None = authorizer if isinstance(authorizer, AclStore) else None
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.broker_count = broker_count
        self.by_key: dict[int, Callable[[Any, RequestContext], dict[str, Any]]] = {
            19: self.create_topics,
            20: self.delete_topics,
            37: self.create_partitions,
            33: self.alter_configs,
            44: self.incremental_alter_configs,
            30: self.create_acls,
            31: self.delete_acls,
        }

    def _allowed(self, ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return allowed(self.authorizer, ctx, operation, resource_type, name)

    def _record(self, api: str, ctx: RequestContext, resource: str, code: int) -> None:
        self.image.changes.append(
            Change(
                api,
                str(ctx.principal),
                str(ctx.client_address),
                str(ctx.forwarding_principal) if ctx.forwarding_principal else None,
                resource,
                code,
            )
        )

    # -- topics --------------------------------------------------------------------

    def create_topics(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        counts = Counter(str(t.name) for t in body.topics)
        cluster_create = self._allowed(ctx, Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
        results: list[dict[str, Any]] = []
        for topic in body.topics:
            name = str(topic.name)
            if counts[name] > 1 and _already_answered(results, name):
                continue
            code, message, created = self._create_topic(topic, ctx, counts[name] > 1, cluster_create, bool(body.validate_only))
            result: dict[str, Any] = {
                "name": name,
                "error_code": code,
                "error_message": message,
                "topic_id": uuid.UUID(int=0),
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": [],
            }
            if created is not None:
                result.update(
                    topic_id=created.topic_id if not body.validate_only else uuid.UUID(int=0),
                    num_partitions=created.partitions,
                    replication_factor=created.replication_factor,
                    configs=[
                        {"name": k, "value": v, "read_only": False, "config_source": 1, "is_sensitive": False}
                        for k, v in sorted(created.configs.items())
                    ],
                )
            self._record("CreateTopics", ctx, f"topic:{name}", code)
            results.append(result)
        return {"throttle_time": 0, "topics": results}

    def _create_topic(
        self, topic: Any, ctx: RequestContext, duplicate: bool, cluster_create: bool, validate_only: bool
    ) -> tuple[int, str | None, Topic | None]:
        name = str(topic.name)
        if duplicate:
            return INVALID_REQUEST, "Duplicate topic name.", None
        if not cluster_create and not self._allowed(ctx, Operation.CREATE, ResourceType.TOPIC, name):
            return TOPIC_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED, None
        problem = topic_name_problem(name)
        if problem:
            return INVALID_TOPIC_EXCEPTION, problem, None
        if name in self.image.topics:
            return TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", None
        assignments = list(topic.assignments or ())
        partitions, replication = int(topic.num_partitions), int(topic.replication_factor)
        if assignments:
            if partitions != -1 or replication != -1:
                return (
                    INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.",
                    None,
                )
            partitions, replication = len(assignments), len(assignments[0].broker_ids)
        if partitions == -1:
            partitions = self.default_partitions
        if partitions <= 0:
            return INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.", None
        if replication == -1:
            replication = self.default_replication_factor
        if replication <= 0:
            return INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value.", None
        if replication > self.broker_count:
            return (
                INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication} time(s): The target replication factor of {replication} cannot be reached because only {self.broker_count} broker(s) are registered.",
                None,
            )
        configs: dict[str, str] = {}
        for config in topic.configs:
            problem = config_problem(str(config.name), config.value)
            if problem:
                return INVALID_CONFIG, problem, None
            configs[str(config.name)] = str(config.value)
        created = Topic(name, uuid.uuid4(), partitions, replication, configs)
        if not validate_only:
            self.image.topics[name] = created
        return NONE, None, created

    def delete_topics(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        names: list[tuple[str | None, uuid.UUID | None]]
        if hasattr(body, "topic_names"):
            names = [(str(n), None) for n in body.topic_names]
        else:
            names = [(str(t.name) if t.name else None, t.topic_id) for t in body.topics]
        counts = Counter(n or str(i) for n, i in names)
        results = []
        for name, topic_id in names:
            if name is None and topic_id is not None:
                found = next((t for t in self.image.topics.values() if t.topic_id == topic_id), None)
                if found is None:
                    results.append(
                        {"name": None, "topic_id": topic_id, "error_code": UNKNOWN_TOPIC_ID, "error_message": "Topic id not found."}
                    )
                    continue
                name = found.name
            assert name is not None
            if counts[name] > 1 and _already_answered(results, name):
                continue
            code, message = self._delete_topic(name, ctx, counts[name] > 1)
            topic = self.image.topics.get(name)
            if code == NONE and topic is not None:
                topic_id = topic.topic_id
                del self.image.topics[name]
            self._record("DeleteTopics", ctx, f"topic:{name}", code)
            results.append({"name": name, "topic_id": topic_id or uuid.UUID(int=0), "error_code": code, "error_message": message})
        return {"throttle_time": 0, "responses": results}

    def _delete_topic(self, name: str, ctx: RequestContext, duplicate: bool) -> tuple[int, str | None]:
        if duplicate:
            return INVALID_REQUEST, "Duplicate topic name."
        if name not in self.image.topics:
            # Without DESCRIBE the caller must not learn whether the topic exists.
            if self._allowed(ctx, Operation.DESCRIBE, ResourceType.TOPIC, name):
                return UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
            return TOPIC_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED
        if not self._allowed(ctx, Operation.DELETE, ResourceType.TOPIC, name):
            return TOPIC_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED
        return NONE, None

    def create_partitions(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        counts = Counter(str(t.name) for t in body.topics)
        results: list[dict[str, Any]] = []
        for item in body.topics:
            name, count = str(item.name), int(item.count)
            if counts[name] > 1 and _already_answered(results, name):
                continue
            code, message = NONE, None
            topic = self.image.topics.get(name)
            if counts[name] > 1:
                code, message = INVALID_REQUEST, "Duplicate topic name."
            elif not self._allowed(ctx, Operation.ALTER, ResourceType.TOPIC, name):
                code, message = TOPIC_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED
            elif topic is None:
                code, message = UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
            elif count < topic.partitions:
                code, message = (
                    INVALID_PARTITIONS,
                    f"The topic {name} currently has {topic.partitions} partition(s); {count} would not be an increase.",
                )
            elif count == topic.partitions:
                code, message = INVALID_PARTITIONS, f"Topic already has {topic.partitions} partition(s)."
            elif not body.validate_only:
                topic.partitions = count
            self._record("CreatePartitions", ctx, f"topic:{name}", code)
            results.append({"name": name, "error_code": code, "error_message": message})
        return {"throttle_time": 0, "results": results}

    # -- configs -------------------------------------------------------------------

    def _config_target(self, resource: Any, ctx: RequestContext) -> tuple[int, str | None, dict[str, str] | None]:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        if kind == CONFIG_TOPIC:
            if not self._allowed(ctx, Operation.ALTER_CONFIGS, ResourceType.TOPIC, name):
                return TOPIC_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED, None
            topic = self.image.topics.get(name)
            if topic is None:
                return UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.", None
            return NONE, None, topic.configs
        if kind == CONFIG_BROKER:
            if not self._allowed(ctx, Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
                return CLUSTER_AUTHORIZATION_FAILED, AUTHORIZATION_FAILED, None
            return NONE, None, self.image.broker_configs.setdefault(name, {})
        return INVALID_REQUEST, f"Unexpected resource type {kind}.", None

    def _alter_configs(
        self, api: str, body: Any, ctx: RequestContext, apply: Callable[[Any, dict[str, str], bool], tuple[int, str | None, dict[str, str]]]
    ) -> dict[str, Any]:
        results = []
        for resource in body.resources:
            code, message, current = self._config_target(resource, ctx)
            if current is not None:
                code, message, updated = apply(resource, current, int(resource.resource_type) == CONFIG_TOPIC)
                if code == NONE and not body.validate_only:
                    current.clear()
                    current.update(updated)
            self._record(api, ctx, f"config:{resource.resource_type}:{resource.resource_name}", code)
            results.append(
                {
                    "error_code": code,
                    "error_message": message,
                    "resource_type": resource.resource_type,
                    "resource_name": resource.resource_name,
                }
            )
        return {"throttle_time": 0, "responses": results}

    def alter_configs(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        def replace(resource: Any, _: dict[str, str], is_topic: bool) -> tuple[int, str | None, dict[str, str]]:
            updated: dict[str, str] = {}
            for config in resource.configs:
                problem = config_problem(str(config.name), config.value) if is_topic else None
                if problem:
                    return INVALID_CONFIG, problem, {}
                updated[str(config.name)] = str(config.value)
            return NONE, None, updated

        return self._alter_configs("AlterConfigs", body, ctx, replace)

    def incremental_alter_configs(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        def change(resource: Any, current: dict[str, str], is_topic: bool) -> tuple[int, str | None, dict[str, str]]:
            updated = dict(current)
            for config in resource.configs:
                name, op, value = str(config.name), int(config.config_operation), config.value
                if op == 1:  # DELETE
                    updated.pop(name, None)
                    continue
                if op in (2, 3) and name not in LIST_CONFIGS and is_topic:
                    return INVALID_CONFIG, f"Config value append is not allowed for config key: {name}", {}
                if op == 0:
                    new_value = value
                elif op == 2:
                    items = [i for i in updated.get(name, "").split(",") if i]
                    new_value = ",".join(items + [v for v in (value or "").split(",") if v and v not in items])
                elif op == 3:
                    remove = set((value or "").split(","))
                    new_value = ",".join(i for i in updated.get(name, "").split(",") if i and i not in remove)
                else:
                    return INVALID_REQUEST, f"Unknown config operation {op}", {}
                problem = config_problem(name, new_value) if is_topic else None
                if problem:
                    return INVALID_CONFIG, problem, {}
                updated[name] = str(new_value)
            return NONE, None, updated

        return self._alter_configs("IncrementalAlterConfigs", body, ctx, change)

    # -- ACLs ----------------------------------------------------------------------

    def create_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if self.acl_store is None:
            return {"throttle_time": 0, "results": [{"error_code": SECURITY_DISABLED, "error_message": NO_ACL_STORE} for _ in body.creations]}
        if not self._allowed(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
            self._record("CreateAcls", ctx, "cluster:acls", CLUSTER_AUTHORIZATION_FAILED)
            return {
                "throttle_time": 0,
                "results": [{"error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": AUTHORIZATION_FAILED} for _ in body.creations],
            }
        if any(_filter_only_value(creation) for creation in body.creations):
            # Kafka builds every binding before validating any, and a filter-only value (ANY, MATCH)
            # throws there: the whole request fails with an unexpected error and no message.
            return {"throttle_time": 0, "results": [{"error_code": UNKNOWN_SERVER_ERROR, "error_message": None} for _ in body.creations]}
        results = []
        for creation in body.creations:
            try:
                binding = AclBinding(
                    ResourceType(int(creation.resource_type)),
                    str(creation.resource_name),
                    PatternType(int(getattr(creation, "resource_pattern_type", PatternType.LITERAL))),
                    str(creation.principal),
                    str(creation.host),
                    Operation(int(creation.operation)),
                    PermissionType(int(creation.permission_type)),
                )
            except ValueError as exc:
                results.append({"error_code": INVALID_REQUEST, "error_message": str(exc)})
                continue
            (problem,) = self.acl_store.create_acls([binding])
            code = INVALID_REQUEST if problem else NONE
            self._record("CreateAcls", ctx, f"acl:{binding.resource_type.name}:{binding.resource_name}", code)
            results.append({"error_code": code, "error_message": problem})
        return {"throttle_time": 0, "results": results}

    def delete_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if self.acl_store is None:
            return {
                "throttle_time": 0,
                "filter_results": [
                    {"error_code": SECURITY_DISABLED, "error_message": NO_ACL_STORE, "matching_acls": []} for _ in body.filters
                ],
            }
        if not self._allowed(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
            self._record("DeleteAcls", ctx, "cluster:acls", CLUSTER_AUTHORIZATION_FAILED)
            return {
                "throttle_time": 0,
                "filter_results": [
                    {"error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": AUTHORIZATION_FAILED, "matching_acls": []}
                    for _ in body.filters
                ],
            }
        results = []
        for item in body.filters:
            try:
                binding_filter = binding_filter_of(item)
            except ValueError as exc:
                results.append({"error_code": INVALID_REQUEST, "error_message": str(exc), "matching_acls": []})
                continue
            (deleted,) = self.acl_store.delete_acls([binding_filter])
            self._record("DeleteAcls", ctx, "acl-filter", NONE)
            results.append(
                {
                    "error_code": NONE,
                    "error_message": None,
                    "matching_acls": [
                        {
                            "error_code": NONE,
                            "error_message": None,
                            "resource_type": b.resource_type,
                            "resource_name": b.resource_name,
                            "pattern_type": b.pattern_type,
                            "principal": b.principal,
                            "host": b.host,
                            "operation": b.operation,
                            "permission_type": b.permission,
                        }
                        for b in deleted
                    ],
                }
            )
        return {"throttle_time": 0, "filter_results": results}


def _filter_only_value(creation: Any) -> bool:
    """True for values a filter may hold but a binding may not (Kafka's ResourcePattern / AccessControlEntry checks)."""
    return (
        int(creation.resource_type) == ResourceType.ANY
        or int(getattr(creation, "resource_pattern_type", PatternType.LITERAL)) in (PatternType.ANY, PatternType.MATCH)
        or int(creation.operation) == Operation.ANY
        or int(creation.permission_type) == PermissionType.ANY
    )


def _already_answered(results: list[dict[str, Any]], name: str) -> bool:
    """Kafka answers a name duplicated within one request once, with INVALID_REQUEST."""
    return any(r["name"] == name for r in results)


def binding_filter_of(item: Any) -> AclBindingFilter:
    """A DeleteAcls filter or a DescribeAcls request as a filter; ValueError for unknown codes."""
    return AclBindingFilter(
        ResourceType(int(item.resource_type_filter)),
        item.resource_name_filter,
        PatternType(int(getattr(item, "pattern_type_filter", PatternType.LITERAL))),
        item.principal_filter,
        item.host_filter,
        Operation(int(item.operation)),
        PermissionType(int(item.permission_type)),
    )
