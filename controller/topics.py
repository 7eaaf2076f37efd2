"""Changes to existing topics: DeleteTopics and CreatePartitions, decided as Kafka 4.3's controller decides.

Each handler follows ControllerApis (duplicates, authorization, what a caller who may
not DESCRIBE a topic is told) and then ReplicationControlManager (existence,
partitions, replicas), in their order and with their messages. Kafka answers
some entries in the order of its hash sets (and shuffles DeleteTopics on purpose); here
they come in the order of the request, which no client may rely on either way.
TopicHandlers also answers CreateTopics, through create_topics.py, so that the
dispatch table holds one object for the topic APIs.
"""

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Operation, RequestContext
from controller.authorize import cluster_allowed
from controller.create_topics import TopicCreator
from controller.topic_rules import (
    DUPLICATE_NAME,
    MAX_RECORDS_PER_USER_OP,
    ZERO_UUID,
    Outcome,
    deadline_passed,
    manual_assignment_problem,
    too_few_brokers,
)
from envelope.error_messages import default_message

DUPLICATE_ID = "Duplicate topic id."
NEITHER_NAME_NOR_ID = "Neither topic name nor id were specified."
BOTH_NAME_AND_ID = "You may not specify both topic name and topic id."
NAME_MAPS_TO_SUPPLIED_ID = "The provided topic name maps to an ID that was already supplied."


class TopicHandlers(TopicCreator):
    """The topic APIs over the image: CreateTopics as a TopicCreator answers it, DeleteTopics and CreatePartitions here."""

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
