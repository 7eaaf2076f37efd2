"""Partition administration: ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46).

The embedded controller has no brokers that fall behind or move data, so a
preferred leader is always already leading (ELECTION_NOT_NEEDED) and a
reassignment completes the moment it is accepted (nothing is ever listed as
ongoing). Authorization (ALTER, resp. DESCRIBE, on CLUSTER) fails the whole
request as ControllerApis' authorizeClusterOperation does, and each request's
getErrorResponse shapes the answer; validation and messages follow
ReplicationControlManager.
"""

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import cluster_allowed, cluster_denied
from controller.image import MetadataImage
from controller.topic_rules import deadline_passed, manual_assignment_problem
from envelope.error_messages import default_message

ELECTION_TYPES = (0, 1)  # ElectionType: PREFERRED, UNCLEAN
EMPTY_STRING_DEFAULT = ""  # a string field's default in Kafka's generated message classes

Outcome = tuple[int, str | None]


class PartitionAdminHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer, *, broker_ids: list[int]) -> None:
        self.image = image
        self.authorizer = authorizer
        self.broker_ids = broker_ids

    def elect_leaders(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        asked = None if body.topic_partitions is None else [(str(t.topic), [int(p) for p in t.partitions]) for t in body.topic_partitions]
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return _elect_failed(ErrorCode.cluster_authorization_failed, cluster_denied(ctx, Operation.ALTER), asked)
        if asked is not None and not asked:
            return _elect_answer(ErrorCode.none, [])  # QuorumController: nothing asked, nothing done
        if deadline_passed(body.timeout):
            return _elect_failed(ErrorCode.request_timed_out, None, asked)
        election_type = int(getattr(body, "election_type", ELECTION_TYPES[0]))
        if election_type not in ELECTION_TYPES:
            return _elect_failed(ErrorCode.invalid_request, f"Unknown election type {election_type}", asked)
        if asked is None:
            # Every partition: those whose leader is already the right one are left out, their topics are not.
            return _elect_answer(ErrorCode.none, [(name, []) for name in self.image.topics])

        def outcome(topic: str, partition: int) -> Outcome:
            known = self.image.topics.get(topic)
            if known is None:
                return ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}"
            if not 0 <= partition < known.partitions:
                return ErrorCode.unknown_topic_or_partition, f"No such partition as {topic}-{partition}"
            return ErrorCode.election_not_needed, default_message(ErrorCode.election_not_needed)

        return _elect_answer(ErrorCode.none, [(topic, [(p, *outcome(topic, p)) for p in partitions]) for topic, partitions in asked])

    def alter_partition_reassignments(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        allow_rf_change = bool(getattr(body, "allow_replication_factor_change", True))
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            # AlterPartitionReassignmentsRequest.getErrorResponse leaves allowReplicationFactorChange at its default.
            return _reassign_answer(ErrorCode.cluster_authorization_failed, cluster_denied(ctx, Operation.ALTER), True, body, lambda _t, _p: None)
        if not body.topics:
            # QuorumController answers a fresh AlterPartitionReassignmentsResponseData: every field at its default.
            return _reassign_answer(ErrorCode.none, EMPTY_STRING_DEFAULT, True, body, lambda _t, _p: None)
        if deadline_passed(body.timeout):
            return _reassign_answer(ErrorCode.request_timed_out, None, True, body, lambda _t, _p: None)
        changes: list[tuple[str, int, list[int]]] = []

        def outcome(name: str, item: Any) -> Outcome:
            index = int(item.partition_index)
            replicas = None if item.replicas is None else [int(r) for r in item.replicas]
            code, message = self._reassign(name, index, replicas, allow_rf_change)
            if code == ErrorCode.none and replicas is not None:
                changes.append((name, index, replicas))
            return code, message

        answer = _reassign_answer(ErrorCode.none, None, allow_rf_change, body, outcome)
        for name, index, replicas in changes:
            self.image.topics[name].assignments[index] = replicas
        return answer

    def _reassign(self, name: str, index: int, replicas: list[int] | None, allow_rf_change: bool) -> Outcome:
        topic = self.image.topics.get(name)
        if topic is None:
            return ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {name}."
        if not 0 <= index < topic.partitions:
            return ErrorCode.unknown_topic_or_partition, f"Unable to find partition {name}:{index}."
        if replicas is None:
            return ErrorCode.no_reassignment_in_progress, None  # nothing is ever in progress here
        problem = manual_assignment_problem(replicas, self.broker_ids, None)
        if problem:
            return ErrorCode.invalid_replica_assignment, problem
        current = topic.replicas(index, self.broker_ids)
        if not allow_rf_change and len(replicas) != len(current):
            return ErrorCode.invalid_replication_factor, f"The replication factor is changed from {len(current)} to {len(replicas)}"
        return ErrorCode.none, None

    def list_partition_reassignments(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE):
            # ListPartitionReassignmentsRequest.getErrorResponse lists the topics and partitions asked for.
            asked = [
                {"name": str(t.name), "partitions": [{"partition_index": int(p), "replicas": [], "adding_replicas": [], "removing_replicas": []} for p in t.partition_indexes]}
                for t in body.topics or ()
            ]
            return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed, "error_message": cluster_denied(ctx, Operation.DESCRIBE), "topics": asked}
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "topics": []}


def _elect_answer(top_level: int, results: list[tuple[str, list[tuple[int, int, str | None]]]]) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": top_level,
        "replica_election_results": [
            {"topic": topic, "partition_result": [{"partition_id": p, "error_code": code, "error_message": message} for p, code, message in partitions]}
            for topic, partitions in results
        ],
    }


def _elect_failed(code: int, message: str | None, asked: list[tuple[str, list[int]]] | None) -> dict[str, Any]:
    """ElectLeadersRequest.getErrorResponse: the error at the top and on every partition asked for."""
    return _elect_answer(code, [(topic, [(p, code, message) for p in partitions]) for topic, partitions in asked or ()])


def _reassign_answer(
    top_level: int, message: str | None, allow_rf_change: bool, body: Any, outcome: Callable[[str, Any], Outcome | None]
) -> dict[str, Any]:
    responses = []
    for topic in body.topics:
        name = str(topic.name)
        partitions = []
        for item in topic.partitions:
            code, text = outcome(name, item) or (top_level, message)
            partitions.append({"partition_index": int(item.partition_index), "error_code": code, "error_message": text})
        responses.append({"name": name, "partitions": partitions})
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": allow_rf_change,
        "error_code": top_level,
        "error_message": message,
        "responses": responses,
    }
