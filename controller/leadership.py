"""Who leads the embedded quorum, and the answers that depend on it.

The embedded controller is one process with its own image; it does not run Raft.
Several of them configured with the same `controller.quorum.voters` act as a
quorum whose leader is set from outside (`embedded.controller.active.id`, or
`EmbeddedController.set_active` at run time): a deterministic stand-in for a
KRaft election, for failover tests without Java.

What a node that is not the active controller answers, as Kafka 4.x does:
- an Envelope: the envelope error NOT_CONTROLLER with no response data;
- a forwardable request sent directly: that API's error answer with NOT_CONTROLLER;
- DescribeQuorum: NOT_LEADER_OR_FOLLOWER on the metadata partition; AddRaftVoter and RemoveRaftVoter:
  NOT_LEADER_OR_FOLLOWER (after the cluster id), inside a successful envelope;
- DescribeCluster (EndpointType=CONTROLLER): the leader it knows of, and the voters' endpoints.
"""

from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import AUTHORIZATION_FAILED, cluster_allowed
from envelope import kafka_uuid
from envelope.apis import ApiKey, EndpointType, is_forwardable
from envelope.responses import AUTHORIZED_OPERATIONS_OMITTED, NO_NODE
from proxy.net.addresses import ControllerAddress

# Answered by the Raft layer itself on every voter (NOT_LEADER_OR_FOLLOWER on a follower), not by the active controller.
RAFT_ANSWERED = frozenset({ApiKey.DESCRIBE_QUORUM, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER})


@dataclass
class Leadership:
    """This node, the quorum's voters and the node that leads it (None: no leader known)."""

    node_id: int
    voters: tuple[ControllerAddress, ...] = ()
    active_id: int | None = None
    listener_name: str = "CONTROLLER"
    own_endpoints: dict[str, ControllerAddress] = field(default_factory=dict)
    """This node's bound listeners by name, for a single-voter quorum configured without voters."""
    cluster_id: str = field(default_factory=kafka_uuid.random_text)
    """The cluster's id (controller/identity.py), which DescribeCluster and Metadata answer with."""

    @property
    def is_active(self) -> bool:
        return self.active_id == self.node_id

    @property
    def voter_ids(self) -> list[int]:
        return [v.node_id for v in self.voters if v.node_id is not None] or [self.node_id]

    def refuses(self, api_key: int) -> bool:
        """Whether this node answers `api_key` with NOT_CONTROLLER: a forwardable API while it is not active."""
        return not self.is_active and is_forwardable(api_key) and api_key not in RAFT_ANSWERED

    def set_active(self, node_id: int | None) -> None:
        if node_id is not None and node_id not in self.voter_ids:
            raise ValueError(f"node {node_id} is not a voter of this quorum: {self.voter_ids}")
        self.active_id = node_id

    def endpoints(self, listener: str) -> list[ControllerAddress]:
        """The voters' endpoints, as Kafka lists registered controllers on the listener asked through."""
        if self.voters:
            return list(self.voters)
        own = self.own_endpoints.get(listener.upper())
        return [ControllerAddress(own.host, own.port, self.node_id)] if own else []

    def describe_cluster(self, authorizer: Authorizer, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """Kafka's ControllerApis: ALTER on the Cluster (not DESCRIBE, as on a broker), then the endpoint type."""
        version = int(body.__version__)
        if not cluster_allowed(authorizer, ctx, Operation.ALTER):
            return _cluster_error(ErrorCode.cluster_authorization_failed, AUTHORIZATION_FAILED)
        asked = int(getattr(body, "endpoint_type", EndpointType.BROKER))
        if asked not in (EndpointType.BROKER, EndpointType.CONTROLLER):
            return _cluster_error(ErrorCode.invalid_request if version == 0 else ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {asked}")
        if asked != EndpointType.CONTROLLER:
            return _cluster_error(
                ErrorCode.invalid_request if version == 0 else ErrorCode.mismatched_endpoint_type,
                "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER",
            )
        endpoints = self.endpoints(ctx.listener)
        leader = self.active_id if self.active_id is not None else NO_NODE
        if all(e.node_id != leader for e in endpoints):
            leader = NO_NODE  # Kafka names no controller it has no endpoint for
        brokers = [{"broker_id": e.node_id, "host": e.host, "port": e.port, "rack": None, "is_fenced": False} for e in endpoints]
        return {**_cluster_error(ErrorCode.none, None), "cluster_id": self.cluster_id, "controller_id": leader, "brokers": brokers}

    def quorum_nodes(self) -> list[dict[str, Any]]:
        """DescribeQuorum v2's `nodes`: each voter's controller listener."""
        return [
            {"node_id": e.node_id, "listeners": [{"name": self.listener_name, "host": e.host, "port": e.port}]}
            for e in self.endpoints(self.listener_name)
        ]


def _cluster_error(code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "endpoint_type": EndpointType.CONTROLLER,
        "cluster_id": "",
        "controller_id": NO_NODE,
        "brokers": [],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
