"""Partition administration: ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46).

The embedded controller has no brokers that fall behind or move data, so a
preferred leader is always already leading (ELECTION_NOT_NEEDED) and a
reassignment completes the moment it is accepted (nothing is ever listed as
ongoing). Validation and authorization (ALTER, resp. DESCRIBE, on CLUSTER)
follow Kafka's controller.
"""

from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import AUTHORIZATION_FAILED, cluster_allowed
from controller.image import MetadataImage

NO_SUCH_PARTITION = "This server does not host this topic-partition."
ELECTION_TYPES = (0, 1)  # PREFERRED, UNCLEAN


class PartitionAdminHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer, *, broker_ids: list[int]) -> None:
        self.image = image
        self.authorizer = authorizer
        self.broker_ids = broker_ids

    def _partition_exists(self, topic: str, partition: int) -> bool:
        known = self.image.topics.get(topic)
        return known is not None and 0 <= partition < known.partitions

    def elect_leaders(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        asked = [(str(t.topic), [int(p) for p in t.partitions]) for t in body.topic_partitions or []]
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return _elect_answer(ErrorCode.cluster_authorization_failed, asked, lambda _t, _p: (ErrorCode.cluster_authorization_failed, AUTHORIZATION_FAILED))
        if int(body.election_type) not in ELECTION_TYPES:
            return _elect_answer(ErrorCode.invalid_request, asked, lambda _t, _p: (ErrorCode.invalid_request, f"Unknown election type {int(body.election_type)}"))

        def outcome(topic: str, partition: int) -> tuple[int, str | None]:
            if not self._partition_exists(topic, partition):
                return ErrorCode.unknown_topic_or_partition, NO_SUCH_PARTITION
            return ErrorCode.election_not_needed, "Leader election not needed for topic partition."

        # A null list means every partition that needs an election: here, none.
        return _elect_answer(ErrorCode.none, asked, outcome)

    def alter_partition_reassignments(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        allow_rf_change = bool(getattr(body, "allow_replication_factor_change", True))
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return {
                "throttle_time": 0,
                "allow_replication_factor_change": allow_rf_change,
                "error_code": ErrorCode.cluster_authorization_failed,
                "error_message": AUTHORIZATION_FAILED,
                "responses": [
                    {
                        "name": str(t.name),
                        "partitions": [
                            {"partition_index": int(p.partition_index), "error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED}
                            for p in t.partitions
                        ],
                    }
                    for t in body.topics
                ],
            }
        responses = []
        for topic in body.topics:
            name = str(topic.name)
            partitions = []
            for item in topic.partitions:
                index = int(item.partition_index)
                replicas = None if item.replicas is None else [int(r) for r in item.replicas]
                code, message = self._reassign(name, index, replicas, allow_rf_change)
                partitions.append({"partition_index": index, "error_code": code, "error_message": message})
            responses.append({"name": name, "partitions": partitions})
        return {
            "throttle_time": 0,
            "allow_replication_factor_change": allow_rf_change,
            "error_code": ErrorCode.none,
            "error_message": None,
            "responses": responses,
        }

    def _reassign(self, name: str, index: int, replicas: list[int] | None, allow_rf_change: bool) -> tuple[int, str | None]:
        if not self._partition_exists(name, index):
            return ErrorCode.unknown_topic_or_partition, NO_SUCH_PARTITION
        topic = self.image.topics[name]
        if replicas is None:
            return ErrorCode.no_reassignment_in_progress, None
        if not replicas:
            return ErrorCode.invalid_replica_assignment, "The manual partition assignment includes an empty replica list."
        for replica in replicas:
            if replicas.count(replica) > 1:
                return ErrorCode.invalid_replica_assignment, f"The manual partition assignment includes the broker {replica} more than once."
            if replica not in self.broker_ids:
                return ErrorCode.invalid_replica_assignment, f"The manual partition assignment includes broker {replica}, but no such broker is registered."
        current = topic.replicas(index, self.broker_ids)
        if not allow_rf_change and len(replicas) != len(current):
            return (
                ErrorCode.invalid_replication_factor,
                f"The replication factor is changed from {len(current)} to {len(replicas)} but allowReplicationFactorChange is false",
            )
        topic.assignments[index] = replicas
        return ErrorCode.none, None

    def list_partition_reassignments(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE):
            return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED, "topics": []}
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "topics": []}


def _elect_answer(top_level: int, asked: list[tuple[str, list[int]]], outcome: Any) -> dict[str, Any]:
    results = []
    for topic, partitions in asked:
        answers = []
        for partition in partitions:
            code, message = outcome(topic, partition)
            answers.append({"partition_id": partition, "error_code": code, "error_message": message})
        results.append({"topic": topic, "partition_result": answers})
    return {"throttle_time": 0, "error_code": top_level, "replica_election_results": results}
