"""Who belongs to the cluster: UnregisterBroker (64), AddRaftVoter (80) and RemoveRaftVoter (81), all forwardable.

Each refuses what Kafka 4.3 refuses, with its codes and words, in its order. UnregisterBroker is ControllerApis
(ALTER on the cluster) then ReplicationControlManager.unregisterBroker: an id that is not registered is
BROKER_ID_NOT_REGISTERED. The voter changes are ControllerApis (ALTER on the cluster, answered with the
error's default message) then KafkaRaftClient and its Add/RemoveVoterHandler: the cluster id (when given), the
leader, a voter key with an id and a directory id, for AddRaftVoter an endpoint on the controller listener, then
kraft.version >= 1 (a static quorum, kraft.version 0, is UNSUPPORTED_VERSION), a voter id already in the set
(DUPLICATE_VOTER), a voter the set does not hold or the last one (VOTER_NOT_FOUND).

What Kafka would then do, the embedded controller cannot mean: its brokers are the replica ids 1..
`embedded.broker.count` of a cluster without broker processes, and it runs no Raft, so no voter can join (Kafka
asks the new voter for its ApiVersions and waits for it to catch up) and none can leave. Those requests are
answered as Kafka answers a change the cluster does not support, UNSUPPORTED_VERSION, with a message that says
why (docs/authorization.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import cluster_allowed, cluster_denied
from controller.image import MetadataImage
from controller.java_order import hashmap_order, string_hash
from controller.leadership import Leadership
from envelope import kafka_uuid

KRAFT_VERSION = "kraft.version"
CLUSTER_AUTHORIZATION_FAILED = "Cluster authorization failed."  # Errors.CLUSTER_AUTHORIZATION_FAILED.message()
_DIRECTORY_NAMESPACE = uuid.UUID("6b61666b-612d-656d-6265-646465642d31")


def directory_uuid(cluster_id: str, node_id: int) -> uuid.UUID:
    """The metadata log directory id a controller alone stands in with (a formatted Kafka node has a random one;
    this one is the same on every start). DescribeQuorum reports it."""
    return uuid.uuid5(_DIRECTORY_NAMESPACE, f"{cluster_id}/{node_id}")


def directory_id(cluster_id: str, node_id: int) -> str:
    """`directory_uuid` as Kafka writes a Uuid."""
    return kafka_uuid.to_text(directory_uuid(cluster_id, node_id))


def replica_key(node_id: int, directory: str | None) -> str:
    """ReplicaKey.toString."""
    return f"ReplicaKey(id={node_id}, directoryId={directory if directory is not None else '<undefined>'})"


def _answer(code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "error_message": message}


def _directory(value: uuid.UUID | None) -> str | None:
    """ReplicaKey.of: the zero id means no directory."""
    return None if value is None or value.int == 0 else kafka_uuid.to_text(value)


def _endpoints_text(listeners: Any) -> tuple[dict[str, str], str]:
    """Endpoints.fromAddVoterRequest: a HashMap of the normalised (upper-case) names, the last of a name winning, and
    its toString with InetSocketAddress.createUnresolved's text."""
    addresses: dict[str, str] = {}
    for listener in listeners:
        addresses[str(listener.name).upper()] = f"{listener.host}/<unresolved>:{int(listener.port)}"
    order = hashmap_order(list(addresses), string_hash, initial_capacity=len(listeners))
    rendered = ", ".join(f"ListenerName({name})={addresses[name]}" for name in order)
    return addresses, f"Endpoints(endpoints={{{rendered}}})"


class MembershipHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer, *, leadership: Leadership, broker_ids: Callable[[], list[int]]) -> None:
        self.image = image
        self.authorizer = authorizer
        self.leadership = leadership
        self.broker_ids = broker_ids

    def unregister_broker(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return _answer(ErrorCode.cluster_authorization_failed, cluster_denied(ctx, Operation.ALTER))
        broker_id = int(body.broker_id)
        if broker_id not in self.broker_ids():
            return _answer(ErrorCode.broker_id_not_registered, f"Broker ID {broker_id} is not currently registered")
        return _answer(
            ErrorCode.unsupported_version,
            f"Broker {broker_id} cannot be unregistered: the embedded controller's brokers are the replica ids 1.."
            f"{max(self.broker_ids())} (embedded.broker.count) of a cluster without broker processes",
        )

    def _voters(self) -> list[tuple[int, str | None]]:
        """The voter set's keys: a static quorum's voters have no directory id; a node alone has its own."""
        if self.leadership.voters:
            return [(node, None) for node in sorted(self.leadership.voter_ids)]
        node = self.leadership.node_id
        return [(node, directory_id(self.leadership.cluster_id, node))]

    def _voter_keys_text(self) -> str:
        return "[" + ", ".join(replica_key(node, directory) for node, directory in self._voters()) + "]"

    def _raft_checks(self, body: Any, change: str) -> dict[str, Any] | tuple[int, str]:
        """What KafkaRaftClient checks first: the answer, or the voter key (id, directory id) the request names."""
        cluster_id = body.cluster_id
        if cluster_id is not None and str(cluster_id) != self.leadership.cluster_id:
            return _answer(ErrorCode.inconsistent_cluster_id, f'The given id "{cluster_id}" doesn\'t match the cluster id "{self.leadership.cluster_id}"')
        if not self.leadership.is_active:
            return _answer(ErrorCode.not_leader_or_follower, None)
        directory = _directory(body.voter_directory_id)
        if int(body.voter_id) < 0 or directory is None:
            return _answer(ErrorCode.invalid_request, f"{change} voter request didn't include a valid voter")
        return int(body.voter_id), directory

    def _kraft_version(self) -> int:
        return int(self.image.finalized_features.get(KRAFT_VERSION, 0))

    def add_raft_voter(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return _answer(ErrorCode.cluster_authorization_failed, CLUSTER_AUTHORIZATION_FAILED)
        checked = self._raft_checks(body, "Add")
        if isinstance(checked, dict):
            return checked
        voter_id, directory = checked
        addresses, endpoints = _endpoints_text(body.listeners)
        listener = self.leadership.listener_name.upper()
        if listener not in addresses:
            return _answer(
                ErrorCode.invalid_request,
                f"Add voter request didn't include the endpoint ({endpoints}) for the default listener ListenerName({self.leadership.listener_name})",
            )
        if self._kraft_version() < 1:
            return _answer(ErrorCode.unsupported_version, f"Cluster doesn't support adding voter because the {KRAFT_VERSION} feature is {self._kraft_version()}")
        key = replica_key(voter_id, directory)
        if voter_id in {node for node, _ in self._voters()}:
            return _answer(ErrorCode.duplicate_voter, f"The voter id for {key} is already part of the set of voters {self._voter_keys_text()}.")
        return _answer(
            ErrorCode.unsupported_version,
            f"Cannot add voter {key}: the embedded controller runs no Raft, so no voter can join its quorum {self._voter_keys_text()}",
        )

    def remove_raft_voter(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return _answer(ErrorCode.cluster_authorization_failed, CLUSTER_AUTHORIZATION_FAILED)
        checked = self._raft_checks(body, "Remove")
        if isinstance(checked, dict):
            return checked
        voter_id, directory = checked
        if self._kraft_version() < 1:
            return _answer(ErrorCode.unsupported_version, f"Cluster doesn't support removing voter because the {KRAFT_VERSION} feature is {self._kraft_version()}")
        key = replica_key(voter_id, directory)
        voters = self._voters()
        if (voter_id, directory) not in voters or len(voters) == 1:
            # VoterSet.removeVoter: the same id and directory id, and never the last voter
            return _answer(ErrorCode.voter_not_found, f"Cannot remove voter {key} from the set of voters {self._voter_keys_text()}")
        return _answer(
            ErrorCode.unsupported_version,
            f"Cannot remove voter {key}: the embedded controller runs no Raft, so its voters {self._voter_keys_text()} are fixed",
        )
