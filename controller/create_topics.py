"""CreateTopics (19) as Kafka 4.3's controller decides it: ControllerApis.createTopics, then ReplicationControlManager.

Duplicates and the metadata topic are refused first, then CREATE (on the
cluster or each topic) is checked; the controller then checks the whole
request's partition count, each name (validity, collisions over '.' and '_',
existence), null and refused configs, and places the partitions and replicas
(or checks a manual assignment). A caller who may DESCRIBE_CONFIGS a new
topic is told its configs (KIP-525).
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext, ResourceType
from controller.authorize import AUTHORIZATION_FAILED, allowed_names, cluster_allowed
from controller.changes import change_of
from controller.image import MetadataImage, Topic
from controller.topic_configs import topic_configs_problem
from controller.topic_rules import (
    DUPLICATE_NAME,
    MAX_RECORDS_PER_USER_OP,
    ZERO_UUID,
    Outcome,
    deadline_passed,
    manual_assignment_problem,
    too_few_brokers,
    topic_name_problem,
)

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
MAX_PARTITIONS_PER_BATCH = 10_000  # ReplicationControlManager: partitions one CreateTopics may create in all
NO_DEFAULT = -1  # num_partitions / replication_factor: the broker's default

SOURCE_DYNAMIC_TOPIC_CONFIG = 1  # CreateTopics' config_source for a config the request set

CLUSTER_METADATA_PROHIBITED = f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_LARGE_BATCH = "Unable to perform excessively large batch operation."  # a request's records overflow their bounded list


class RequestFailed(Exception):
    """Kafka fails the whole request (the controller's future completes exceptionally): every entry gets this."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _collision_key(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: '.' and '_' collide in metric names."""
    return name.replace(".", "_")


def _has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


@dataclass
class _Created:
    topic: Topic
    describable: bool


ConfigsProblem = Callable[[dict[str, str]], str | None]
"""Why Kafka refuses a new topic's configs (ConfigurationControlManager, newly created resource), or None."""
CreatedConfigs = Callable[[dict[str, str]], list[dict[str, Any]]]
"""A new topic's KIP-525 configs from the ones its creation sets (computeEffectiveTopicConfigs)."""


def requested_configs_only(configs: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"name": key, "value": value, "read_only": False, "config_source": SOURCE_DYNAMIC_TOPIC_CONFIG, "is_sensitive": False}
        for key, value in sorted(configs.items())
    ]


class TopicCreator:
    """CreateTopics over the image: new topics placed over `broker_ids`, their configs checked by `configs_problem`."""

    def __init__(
        self,
        image: MetadataImage,
        authorizer: Authorizer,
        *,
        default_partitions: int,
        default_replication_factor: int,
        broker_ids: list[int],
        configs_problem: ConfigsProblem = topic_configs_problem,
        created_configs: CreatedConfigs = requested_configs_only,
    ) -> None:
        self.image = image
        self.authorizer = authorizer
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.broker_ids = broker_ids
        self.configs_problem = configs_problem
        self.created_configs = created_configs

    def _names_allowed(self, ctx: RequestContext, operation: Operation, names: list[str]) -> set[str]:
        return allowed_names(self.authorizer, ctx, operation, ResourceType.TOPIC, names)

    def _record(self, api: str, ctx: RequestContext, name: str | None, code: int) -> None:
        self.image.record(change_of(api, ctx, f"topic:{name}", code))

    def create_topics(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """ControllerApis.createTopics, then ReplicationControlManager.createTopics."""
        requested = [str(t.name) for t in body.topics]
        unique: dict[str, None] = {}
        duplicates: dict[str, None] = {}
        for name in requested:
            if name in duplicates:
                continue
            if name in unique:
                del unique[name]
                duplicates[name] = None
            else:
                unique[name] = None
        allowed = [name for name in unique if name != CLUSTER_METADATA_TOPIC]
        creatable = set(allowed) if cluster_allowed(self.authorizer, ctx, Operation.CREATE) else self._names_allowed(ctx, Operation.CREATE, allowed)
        describable = self._names_allowed(ctx, Operation.DESCRIBE_CONFIGS, allowed)
        effective = [t for t in body.topics if str(t.name) not in duplicates and str(t.name) in creatable]
        try:
            if effective and deadline_passed(body.timeout):
                raise RequestFailed(ErrorCode.request_timed_out, None)
            results = self._create(effective, describable, bool(body.validate_only)) if effective else []
        except RequestFailed as failed:
            results = [_create_result(name, failed.code, failed.message) for name in requested]
            for name in requested:
                self._record("CreateTopics", ctx, name, failed.code)
            return {"throttle_time": 0, "topics": results}
        results += [_create_result(name, ErrorCode.invalid_request, DUPLICATE_NAME) for name in duplicates]
        for name in unique:
            if name == CLUSTER_METADATA_TOPIC:
                results.append(_create_result(name, ErrorCode.invalid_request, CLUSTER_METADATA_PROHIBITED))
            elif name not in creatable:
                results.append(_create_result(name, ErrorCode.topic_authorization_failed, AUTHORIZATION_FAILED))
        for result in results:
            self._record("CreateTopics", ctx, result["name"], result["error_code"])
        return {"throttle_time": 0, "topics": results}

    def _create(self, topics: list[Any], describable: set[str], validate_only: bool) -> list[dict[str, Any]]:
        """ReplicationControlManager.createTopics over the topics that passed ControllerApis."""
        total = 0
        for topic in topics:
            assignments = list(topic.assignments or ())
            if assignments:
                total += len(assignments)
            elif int(topic.num_partitions) == NO_DEFAULT:
                total += self.default_partitions
            elif int(topic.num_partitions) > 0:
                total += int(topic.num_partitions)
        if total > MAX_PARTITIONS_PER_BATCH:
            raise RequestFailed(ErrorCode.policy_violation, TOO_MANY_PARTITIONS)
        errors: dict[str, Outcome] = {}
        colliding: dict[str, str] = {}
        for existing in sorted(self.image.topics):
            if _has_collision_chars(existing):
                colliding.setdefault(_collision_key(existing), existing)
        for topic in topics:
            name = str(topic.name)
            problem = topic_name_problem(name)
            if problem:
                errors[name] = (ErrorCode.invalid_topic_exception, problem)
            if _has_collision_chars(name) and _collision_key(name) in colliding:
                errors[name] = (ErrorCode.invalid_topic_exception, f"Topic '{name}' collides with existing topic: {colliding[_collision_key(name)]}")
        for topic in topics:
            if str(topic.name) in self.image.topics:
                errors[str(topic.name)] = (ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists.")
        for topic in topics:
            name = str(topic.name)
            nulls = [str(c.name) for c in topic.configs if c.value is None]
            if name not in errors and nulls:
                errors[name] = (ErrorCode.invalid_config, f"Null value not supported for topic configs: {','.join(nulls)}")
        created: dict[str, _Created] = {}
        records = 0
        for topic in topics:
            name = str(topic.name)
            if name in errors:
                continue
            configs = {str(c.name): str(c.value) for c in topic.configs}
            problem = self.configs_problem(configs) if configs else None
            if problem:
                errors[name] = (ErrorCode.invalid_config, problem)
                continue
            outcome = self._new_topic(topic, configs)
            if isinstance(outcome, Topic):
                created[name] = _Created(outcome, name in describable)
                # One TopicRecord, a ConfigRecord per config, a PartitionRecord per partition, validate-only or not.
                records += 1 + len(configs) + outcome.partitions
                if records > MAX_RECORDS_PER_USER_OP:
                    raise RequestFailed(ErrorCode.policy_violation, TOO_LARGE_BATCH)
            else:
                errors[name] = outcome
        results = []
        for topic in topics:
            name = str(topic.name)
            if name in errors:
                results.append(_create_result(name, *errors[name]))
                continue
            done = created[name]
            results.append(_created_result(done.topic, self.created_configs(done.topic.configs) if done.describable else None))
            if not validate_only:
                self.image.topics[name] = done.topic
        return results

    def _new_topic(self, topic: Any, configs: dict[str, str]) -> Topic | Outcome:
        """ReplicationControlManager.createTopic: the partitions and replicas of one new topic, or why not."""
        name = str(topic.name)
        assignments = list(topic.assignments or ())
        partitions, replication = int(topic.num_partitions), int(topic.replication_factor)
        placed: dict[int, list[int]] = {}
        if assignments:
            if replication != NO_DEFAULT:
                return ErrorCode.invalid_request, "A manual partition assignment was specified, but replication factor was not set to -1."
            if partitions != NO_DEFAULT:
                return ErrorCode.invalid_request, "A manual partition assignment was specified, but numPartitions was not set to -1."
            factor: int | None = None
            for assignment in assignments:
                index, replicas = int(assignment.partition_index), [int(b) for b in assignment.broker_ids]
                if index in placed:
                    return ErrorCode.invalid_replica_assignment, f"Found multiple manual partition assignments for partition {index}"
                problem = manual_assignment_problem(replicas, self.broker_ids, factor)
                if problem:
                    return ErrorCode.invalid_replica_assignment, problem
                factor = len(replicas)
                placed[index] = replicas
            if any(index not in placed for index in range(len(placed))):
                return ErrorCode.invalid_replica_assignment, "partitions should be a consecutive 0-based integer sequence"
            partitions, replication = len(placed), len(placed[0])
        elif replication < NO_DEFAULT or replication == 0:
            return ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default value."
        elif partitions < NO_DEFAULT or partitions == 0:
            return ErrorCode.invalid_partitions, "Number of partitions was set to an invalid non-positive value."
        else:
            partitions = self.default_partitions if partitions == NO_DEFAULT else partitions
            replication = self.default_replication_factor if replication == NO_DEFAULT else replication
            if not 0 < replication <= len(self.broker_ids):
                return (
                    ErrorCode.invalid_replication_factor,
                    f"Unable to replicate the partition {replication} time(s): {too_few_brokers(replication, len(self.broker_ids))}",
                )
        created = Topic(name, uuid.uuid4(), partitions, replication, configs)
        created.assignments.update({index: replicas for index, replicas in placed.items() if replicas != created.replicas(index, self.broker_ids)})
        return created


def _create_result(name: str, code: int, message: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": code,
        "error_message": message,
        "topic_config_error_code": ErrorCode.none,
        "num_partitions": NO_DEFAULT,
        "replication_factor": NO_DEFAULT,
        "configs": [],
    }


def _created_result(topic: Topic, configs: list[dict[str, Any]] | None) -> dict[str, Any]:
    """KIP-525: the new topic's details only for a caller who may DESCRIBE_CONFIGS it (`configs` given);
    otherwise the config error."""
    result = _create_result(topic.name, ErrorCode.none, None)
    result["topic_id"] = topic.topic_id
    if configs is None:
        result["topic_config_error_code"] = ErrorCode.topic_authorization_failed
        return result
    result.update(num_partitions=topic.partitions, replication_factor=topic.replication_factor, configs=configs)
    return result
