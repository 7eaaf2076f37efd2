"""Topic administration: CreateTopics, DeleteTopics and CreatePartitions, decided as Kafka 4.3's controller decides.

Each handler follows ControllerApis (duplicates, authorization, what a caller who may
not DESCRIBE a topic is told) and then ReplicationControlManager (names, existence,
configs, partitions, replicas), in their order and with their messages. Kafka answers
some entries in the order of its hash sets (and shuffles DeleteTopics on purpose); here
they come in the order of the request, which no client may rely on either way.
"""

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext, ResourceType
from controller.authorize import AUTHORIZATION_FAILED, allowed_names, cluster_allowed
from controller.changes import change_of
from controller.image import MetadataImage, Topic
from controller.topic_configs import topic_configs_problem
from envelope.error_messages import default_message

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
MAX_PARTITIONS_PER_BATCH = 10_000  # ReplicationControlManager: partitions one CreateTopics may create in all
MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController: records one request may write (a partition is one)
ZERO_UUID = uuid.UUID(int=0)
NO_DEFAULT = -1  # num_partitions / replication_factor: the broker's default

SOURCE_DYNAMIC_TOPIC_CONFIG = 1  # CreateTopics' config_source for a config the request set

# Answers whose words are Kafka's own
DUPLICATE_NAME = "Duplicate topic name."
DUPLICATE_ID = "Duplicate topic id."
NEITHER_NAME_NOR_ID = "Neither topic name nor id were specified."
BOTH_NAME_AND_ID = "You may not specify both topic name and topic id."
NAME_MAPS_TO_SUPPLIED_ID = "The provided topic name maps to an ID that was already supplied."
CLUSTER_METADATA_PROHIBITED = f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_LARGE_BATCH = "Unable to perform excessively large batch operation."  # a request's records overflow their bounded list

Outcome = tuple[int, str | None]


def deadline_passed(timeout: timedelta | int) -> bool:
    """A request's deadline is now + timeout: with none left, Kafka's controller queue times the event out
    (REQUEST_TIMED_OUT for the whole request) before it runs. A positive timeout never runs out here."""
    return (timeout.total_seconds() if isinstance(timeout, timedelta) else timeout) <= 0


class RequestFailed(Exception):
    """Kafka fails the whole request (the controller's future completes exceptionally): every entry gets this."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def broker_ids_of(broker_count: int) -> list[int]:
    """The embedded controller has no brokers; replicas are numbered 1..broker_count as registered ones would be."""
    return list(range(1, broker_count + 1))


def topic_name_problem(name: str) -> str | None:
    """Kafka's Topic.validate: why `name` cannot be a topic, in its words, or None."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name == ".":
        reason = "'.' is not allowed"
    elif name == "..":
        reason = "'..' is not allowed"
    elif len(name) > MAX_TOPIC_NAME:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME}"
    elif not _LEGAL_TOPIC.match(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"


def _collision_key(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: '.' and '_' collide in metric names."""
    return name.replace(".", "_")


def _has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def manual_assignment_problem(replicas: list[int], broker_ids: list[int], replication_factor: int | None) -> str | None:
    """ReplicationControlManager.validateManualPartitionAssignment (INVALID_REPLICA_ASSIGNMENT), or None."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous: int | None = None
    for broker in sorted(replicas):
        if broker not in broker_ids:
            return f"The manual partition assignment includes broker {broker}, but no such broker is registered."
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        return (
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is not consistent with "
            f"previous partitions, which have {replication_factor} replica(s)."
        )
    return None


def too_few_brokers(replication_factor: int, broker_count: int) -> str:
    """StripedReplicaPlacer's words when the replicas cannot be placed."""
    if replication_factor <= 0:
        return f"Invalid replication factor {replication_factor}: the replication factor must be positive."
    return (
        f"The target replication factor of {replication_factor} cannot be reached because only {broker_count} broker(s) are "
        "registered or some brokers have all their log directories cordoned."
    )


@dataclass
class _Created:
    topic: Topic
    describable: bool


ConfigsProblem = Callable[[dict[str, str]], str | None]
"""Why Kafka refuses a new topic's configs (ConfigurationControlManager, newly created resource), or None."""
CreatedConfigs = Callable[[dict[str, str]], list[dict[str, Any]]]
"""A new topic's KIP-525 configs from the ones its creation sets (computeEffectiveTopicConfigs)."""


def _requested_configs_only(configs: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"name": key, "value": value, "read_only": False, "config_source": SOURCE_DYNAMIC_TOPIC_CONFIG, "is_sensitive": False}
        for key, value in sorted(configs.items())
    ]


class TopicHandlers:
    def __init__(
        self,
        image: MetadataImage,
        authorizer: Authorizer,
        *,
        default_partitions: int,
        default_replication_factor: int,
        broker_ids: list[int],
        configs_problem: ConfigsProblem = topic_configs_problem,
        created_configs: CreatedConfigs = _requested_configs_only,
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

    # ------------------------------------------------------------------ CreateTopics

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

    # ------------------------------------------------------------------ DeleteTopics

    def delete_topics(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """ControllerApis.deleteTopics: names and ids checked for duplicates, ids resolved, DESCRIBE before DELETE."""
        responses: list[dict[str, Any]] = []

        def answer(name: str | None, topic_id: uuid.UUID, code: int, message: str | None) -> None:
            responses.append({"name": name, "topic_id": topic_id, "error_code": code, "error_message": message})

        names: dict[str, None] = {}
        duplicate_names: dict[str, None] = {}
        ids: dict[uuid.UUID, None] = {}
        duplicate_ids: dict[uuid.UUID, None] = {}

        def provide_name(name: str) -> None:
            if name in duplicate_names or name in names:
                duplicate_names[name] = None
                names.pop(name, None)
            else:
                names[name] = None

        for given in getattr(body, "topic_names", None) or ():
            provide_name(str(given))
        for topic in getattr(body, "topics", None) or ():
            topic_id = topic.topic_id or ZERO_UUID
            if topic.name is None:
                if topic_id == ZERO_UUID:
                    answer(None, ZERO_UUID, ErrorCode.invalid_request, NEITHER_NAME_NOR_ID)
                elif topic_id in duplicate_ids or topic_id in ids:
                    duplicate_ids[topic_id] = None
                    ids.pop(topic_id, None)
                else:
                    ids[topic_id] = None
            elif topic_id == ZERO_UUID:
                provide_name(str(topic.name))
            else:
                answer(str(topic.name), topic_id, ErrorCode.invalid_request, BOTH_NAME_AND_ID)
        if (names or ids) and deadline_passed(body.timeout):
            return self._delete_timed_out(body, ctx)
        for name in duplicate_names:
            answer(name, ZERO_UUID, ErrorCode.invalid_request, DUPLICATE_NAME)
        for topic_id in duplicate_ids:
            answer(None, topic_id, ErrorCode.invalid_request, DUPLICATE_ID)

        by_id = {topic.topic_id: topic.name for topic in self.image.topics.values()}
        to_check = list(names)
        id_to_name: dict[uuid.UUID, str] = {}
        for topic_id in ids:
            found = by_id.get(topic_id)
            if found is None:
                answer(None, topic_id, ErrorCode.unknown_topic_id, default_message(ErrorCode.unknown_topic_id))
            else:
                to_check.append(found)
                id_to_name[topic_id] = found
        if cluster_allowed(self.authorizer, ctx, Operation.DELETE):
            describable = deletable = set(to_check)
        else:
            describable = self._names_allowed(ctx, Operation.DESCRIBE, to_check)
            deletable = self._names_allowed(ctx, Operation.DELETE, to_check)
        denied = default_message(ErrorCode.topic_authorization_failed)
        for topic_id, name in list(id_to_name.items()):
            if name not in deletable:
                # Who may not DESCRIBE the topic must not learn its name from its id.
                answer(name if name in describable else None, topic_id, ErrorCode.topic_authorization_failed, denied)
                del id_to_name[topic_id]
        for name in names:
            known = self.image.topics.get(name)
            if name not in describable:
                answer(name, ZERO_UUID, ErrorCode.topic_authorization_failed, denied)
            elif known is None:
                answer(name, ZERO_UUID, ErrorCode.unknown_topic_or_partition, default_message(ErrorCode.unknown_topic_or_partition))
            elif name in deletable:
                if known.topic_id in duplicate_ids or known.topic_id in id_to_name:
                    # A name that maps to an id also given: said only once authorized, as it reveals the mapping.
                    duplicate_ids[known.topic_id] = None
                    id_to_name.pop(known.topic_id, None)
                    answer(name, known.topic_id, ErrorCode.invalid_request, NAME_MAPS_TO_SUPPLIED_ID)
                else:
                    id_to_name[known.topic_id] = name
            else:
                answer(name, ZERO_UUID, ErrorCode.topic_authorization_failed, denied)
        for topic_id, name in id_to_name.items():
            del self.image.topics[name]
            answer(name, topic_id, ErrorCode.none, None)
        for response in responses:
            self._record("DeleteTopics", ctx, response["name"], response["error_code"])
        return {"throttle_time": 0, "responses": responses}

    def _delete_timed_out(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """DeleteTopicsRequest.getErrorResponse: every topic as sent, REQUEST_TIMED_OUT, no message."""
        sent = [(str(n), ZERO_UUID) for n in getattr(body, "topic_names", None) or ()]
        sent += [(t.name, t.topic_id or ZERO_UUID) for t in getattr(body, "topics", None) or ()]
        for name, _ in sent:
            self._record("DeleteTopics", ctx, name, ErrorCode.request_timed_out)
        return {
            "throttle_time": 0,
            "responses": [{"name": name, "topic_id": topic_id, "error_code": ErrorCode.request_timed_out, "error_message": None} for name, topic_id in sent],
        }

    # ------------------------------------------------------------------ CreatePartitions

    def create_partitions(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """ControllerApis.createPartitions (duplicates, ALTER on each topic), then ReplicationControlManager.createPartitions."""
        names: dict[str, Any] = {}
        duplicates: dict[str, None] = {}
        for topic in body.topics:
            if str(topic.name) in names:
                duplicates[str(topic.name)] = None
            else:
                names[str(topic.name)] = topic
        results: list[dict[str, Any]] = []
        for name in duplicates:
            results.append({"name": name, "error_code": ErrorCode.invalid_request, "error_message": DUPLICATE_NAME})
            del names[name]
        alterable = self._names_allowed(ctx, Operation.ALTER, list(names))
        if alterable and deadline_passed(body.timeout):
            # CreatePartitionsRequest.getErrorResponse: every topic as sent, duplicates included.
            for sent in body.topics:
                self._record("CreatePartitions", ctx, str(sent.name), ErrorCode.request_timed_out)
            return {
                "throttle_time": 0,
                "results": [{"name": str(t.name), "error_code": ErrorCode.request_timed_out, "error_message": None} for t in body.topics],
            }
        for name, topic in names.items():
            if name in alterable:
                code, message = self._add_partitions(topic, bool(body.validate_only))
            else:
                code, message = ErrorCode.topic_authorization_failed, None
            results.append({"name": name, "error_code": code, "error_message": message})
        for result in results:
            self._record("CreatePartitions", ctx, result["name"], result["error_code"])
        return {"throttle_time": 0, "results": results}

    def _add_partitions(self, request: Any, validate_only: bool) -> Outcome:
        name, count = str(request.name), int(request.count)
        topic = self.image.topics.get(name)
        if topic is None:
            return ErrorCode.unknown_topic_or_partition, None
        if count == topic.partitions:
            return ErrorCode.invalid_partitions, f"Topic already has {topic.partitions} partition(s)."
        if count < topic.partitions:
            return ErrorCode.invalid_partitions, f"The topic {name} currently has {topic.partitions} partition(s); {count} would not be an increase."
        additional = count - topic.partitions
        assignments = None if request.assignments is None else [[int(b) for b in a.broker_ids] for a in request.assignments]
        if assignments is not None and len(assignments) != additional:
            return (
                ErrorCode.invalid_replica_assignment,
                f"Attempted to add {additional} additional partition(s), but only {len(assignments)} assignment(s) were specified.",
            )
        factor = len(topic.replicas(0, self.broker_ids))
        if assignments is not None:
            for replicas in assignments:
                problem = manual_assignment_problem(replicas, self.broker_ids, factor)
                if problem:
                    return ErrorCode.invalid_replica_assignment, problem
        elif factor > len(self.broker_ids):
            return ErrorCode.invalid_replication_factor, too_few_brokers(factor, len(self.broker_ids))
        if additional > MAX_RECORDS_PER_USER_OP:
            # Kafka's bounded record list overflows: an unexpected error, reported without a message.
            return ErrorCode.unknown_server_error, None
        if not validate_only:
            start = topic.partitions
            topic.partitions = count
            for offset, replicas in enumerate(assignments or ()):
                if replicas != topic.replicas(start + offset, self.broker_ids):
                    topic.assignments[start + offset] = replicas
        return ErrorCode.none, None


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
