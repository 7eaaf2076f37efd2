"""Topic administration: CreateTopics, DeleteTopics and CreatePartitions, with Kafka's validation, authorization and error codes."""

import re
import uuid
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext, ResourceType
from authz.model import CLUSTER_NAME
from controller.authorize import AUTHORIZATION_FAILED, allowed
from controller.changes import change_of
from controller.image import MetadataImage, Topic
from controller.topic_configs import config_problem

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


class TopicHandlers:
    def __init__(
        self, image: MetadataImage, authorizer: Authorizer, *, default_partitions: int, default_replication_factor: int, broker_count: int
    ) -> None:
        self.image = image
        self.authorizer = authorizer
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.broker_count = broker_count

    def _allowed(self, ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return allowed(self.authorizer, ctx, operation, resource_type, name)

    def _record(self, api: str, ctx: RequestContext, name: str, code: int) -> None:
        self.image.record(change_of(api, ctx, f"topic:{name}", code))

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
            self._record("CreateTopics", ctx, name, code)
            results.append(result)
        return {"throttle_time": 0, "topics": results}

    def _create_topic(
        self, topic: Any, ctx: RequestContext, duplicate: bool, cluster_create: bool, validate_only: bool
    ) -> tuple[int, str | None, Topic | None]:
        name = str(topic.name)
        if duplicate:
            return ErrorCode.invalid_request, "Duplicate topic name.", None
        if not cluster_create and not self._allowed(ctx, Operation.CREATE, ResourceType.TOPIC, name):
            return ErrorCode.topic_authorization_failed, AUTHORIZATION_FAILED, None
        problem = topic_name_problem(name)
        if problem:
            return ErrorCode.invalid_topic_exception, problem, None
        if name in self.image.topics:
            return ErrorCode.topic_already_exists, f"Topic '{name}' already exists.", None
        assignments = list(topic.assignments or ())
        partitions, replication = int(topic.num_partitions), int(topic.replication_factor)
        if assignments:
            if partitions != -1 or replication != -1:
                return (
                    ErrorCode.invalid_request,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.",
                    None,
                )
            partitions, replication = len(assignments), len(assignments[0].broker_ids)
        if partitions == -1:
            partitions = self.default_partitions
        if partitions <= 0:
            return ErrorCode.invalid_partitions, "Number of partitions was set to an invalid non-positive value.", None
        if replication == -1:
            replication = self.default_replication_factor
        if replication <= 0:
            return ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default value.", None
        if replication > self.broker_count:
            return (
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {replication} time(s): The target replication factor of {replication} cannot be reached because only {self.broker_count} broker(s) are registered.",
                None,
            )
        configs: dict[str, str] = {}
        for config in topic.configs:
            problem = config_problem(str(config.name), config.value)
            if problem:
                return ErrorCode.invalid_config, problem, None
            configs[str(config.name)] = str(config.value)
        created = Topic(name, uuid.uuid4(), partitions, replication, configs)
        if not validate_only:
            self.image.topics[name] = created
        return ErrorCode.none, None, created

    def delete_topics(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        names: list[tuple[str | None, uuid.UUID | None]]
        if hasattr(body, "topic_names"):
            names = [(str(n), None) for n in body.topic_names]
        else:
            names = [(str(t.name) if t.name else None, t.topic_id) for t in body.topics]
        counts = Counter(n or str(i) for n, i in names)
        results: list[dict[str, Any]] = []
        for name, topic_id in names:
            if name is None and topic_id is not None:
                found = next((t for t in self.image.topics.values() if t.topic_id == topic_id), None)
                if found is None:
                    results.append(
                        {
                            "name": None,
                            "topic_id": topic_id,
                            "error_code": ErrorCode.unknown_topic_id,
                            "error_message": "Topic id not found.",
                        }
                    )
                    continue
                name = found.name
            assert name is not None
            if counts[name] > 1 and _already_answered(results, name):
                continue
            code, message = self._delete_topic(name, ctx, counts[name] > 1)
            topic = self.image.topics.get(name)
            if code == ErrorCode.none and topic is not None:
                topic_id = topic.topic_id
                del self.image.topics[name]
            self._record("DeleteTopics", ctx, name, code)
            results.append({"name": name, "topic_id": topic_id or uuid.UUID(int=0), "error_code": code, "error_message": message})
        return {"throttle_time": 0, "responses": results}

    def _delete_topic(self, name: str, ctx: RequestContext, duplicate: bool) -> tuple[int, str | None]:
        if duplicate:
            return ErrorCode.invalid_request, "Duplicate topic name."
        if name not in self.image.topics:
            # Without DESCRIBE the caller must not learn whether the topic exists.
            if self._allowed(ctx, Operation.DESCRIBE, ResourceType.TOPIC, name):
                return ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition."
            return ErrorCode.topic_authorization_failed, AUTHORIZATION_FAILED
        if not self._allowed(ctx, Operation.DELETE, ResourceType.TOPIC, name):
            return ErrorCode.topic_authorization_failed, AUTHORIZATION_FAILED
        return ErrorCode.none, None

    def create_partitions(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        counts = Counter(str(t.name) for t in body.topics)
        results: list[dict[str, Any]] = []
        for item in body.topics:
            name, count = str(item.name), int(item.count)
            if counts[name] > 1 and _already_answered(results, name):
                continue
            code: int = ErrorCode.none
            message: str | None = None
            topic = self.image.topics.get(name)
            if counts[name] > 1:
                code, message = ErrorCode.invalid_request, "Duplicate topic name."
            elif not self._allowed(ctx, Operation.ALTER, ResourceType.TOPIC, name):
                code, message = ErrorCode.topic_authorization_failed, AUTHORIZATION_FAILED
            elif topic is None:
                code, message = ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition."
            elif count < topic.partitions:
                code, message = (
                    ErrorCode.invalid_partitions,
                    f"The topic {name} currently has {topic.partitions} partition(s); {count} would not be an increase.",
                )
            elif count == topic.partitions:
                code, message = ErrorCode.invalid_partitions, f"Topic already has {topic.partitions} partition(s)."
            elif not body.validate_only:
                topic.partitions = count
            self._record("CreatePartitions", ctx, name, code)
            results.append({"name": name, "error_code": code, "error_message": message})
        return {"throttle_time": 0, "results": results}


def _already_answered(results: list[dict[str, Any]], name: str) -> bool:
    """Kafka answers a name duplicated within one request once, with INVALID_REQUEST."""
    return any(r["name"] == name for r in results)
