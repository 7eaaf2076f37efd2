"""Config changes: AlterConfigs and IncrementalAlterConfigs on topics and brokers, with Kafka's validation and error codes."""

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext, ResourceType
from authz.actions import CONFIG_BROKER, CONFIG_TOPIC
from authz.model import CLUSTER_NAME
from controller.authorize import AUTHORIZATION_FAILED, allowed
from controller.changes import change_of
from controller.image import MetadataImage
from controller.topic_configs import LIST_CONFIGS, config_problem

# IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

# What one resource's change comes to: (error code, message, the configs it leaves)
Outcome = tuple[int, str | None, dict[str, str]]


class ConfigHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer) -> None:
        self.image = image
        self.authorizer = authorizer

    def _config_target(self, resource: Any, ctx: RequestContext) -> tuple[int, str | None, dict[str, str] | None]:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        if kind == CONFIG_TOPIC:
            if not allowed(self.authorizer, ctx, Operation.ALTER_CONFIGS, ResourceType.TOPIC, name):
                return ErrorCode.topic_authorization_failed, AUTHORIZATION_FAILED, None
            topic = self.image.topics.get(name)
            if topic is None:
                return ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist.", None
            return ErrorCode.none, None, topic.configs
        if kind == CONFIG_BROKER:
            if not allowed(self.authorizer, ctx, Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
                return ErrorCode.cluster_authorization_failed, AUTHORIZATION_FAILED, None
            return ErrorCode.none, None, self.image.broker_configs.setdefault(name, {})
        return ErrorCode.invalid_request, f"Unexpected resource type {kind}.", None

    def _alter_configs(
        self, api: str, body: Any, ctx: RequestContext, apply: Callable[[Any, dict[str, str], bool], Outcome]
    ) -> dict[str, Any]:
        results = []
        for resource in body.resources:
            code, message, current = self._config_target(resource, ctx)
            if current is not None:
                code, message, updated = apply(resource, current, int(resource.resource_type) == CONFIG_TOPIC)
                if code == ErrorCode.none and not body.validate_only:
                    current.clear()
                    current.update(updated)
            self.image.record(change_of(api, ctx, f"config:{resource.resource_type}:{resource.resource_name}", code))
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
        def replace(resource: Any, _: dict[str, str], is_topic: bool) -> Outcome:
            updated: dict[str, str] = {}
            for config in resource.configs:
                problem = config_problem(str(config.name), config.value) if is_topic else None
                if problem:
                    return ErrorCode.invalid_config, problem, {}
                updated[str(config.name)] = str(config.value)
            return ErrorCode.none, None, updated

        return self._alter_configs("AlterConfigs", body, ctx, replace)

    def incremental_alter_configs(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        def change(resource: Any, current: dict[str, str], is_topic: bool) -> Outcome:
            updated = dict(current)
            for config in resource.configs:
                name, op, value = str(config.name), int(config.config_operation), config.value
                if op == DELETE:
                    updated.pop(name, None)
                    continue
                if op in (APPEND, SUBTRACT) and name not in LIST_CONFIGS and is_topic:
                    return ErrorCode.invalid_config, f"Config value append is not allowed for config key: {name}", {}
                if op == SET:
                    new_value = value
                elif op == APPEND:
                    items = [i for i in updated.get(name, "").split(",") if i]
                    new_value = ",".join(items + [v for v in (value or "").split(",") if v and v not in items])
                elif op == SUBTRACT:
                    remove = set((value or "").split(","))
                    new_value = ",".join(i for i in updated.get(name, "").split(",") if i and i not in remove)
                else:
                    return ErrorCode.invalid_request, f"Unknown config operation {op}", {}
                problem = config_problem(name, new_value) if is_topic else None
                if problem:
                    return ErrorCode.invalid_config, problem, {}
                updated[name] = str(new_value)
            return ErrorCode.none, None, updated

        return self._alter_configs("IncrementalAlterConfigs", body, ctx, change)
