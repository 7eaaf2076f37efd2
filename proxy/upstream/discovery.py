"""Which controller is active, asked from outside the quorum through the controller listener.

In order of preference, by what the node advertises:
1. DescribeCluster v1+ with EndpointType=CONTROLLER (KIP-919): ControllerId is the node's view of
   the Raft leader, and Brokers holds the controllers' endpoints on this listener.
2. DescribeQuorum: the metadata partition's LeaderId; its endpoint from the v2 `nodes` list, from
   `controller.quorum.voters`, or else the answering node (only the leader answers DescribeQuorum).
3. Neither: the node itself is tried, and NOT_CONTROLLER moves on to the next address.

The answers are read by pure functions; `ask` runs them over an open link.
"""

import logging
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey, EndpointType
from envelope.errors import ProtocolError
from proxy.net.addresses import ControllerAddress
from proxy.upstream.link import Link

log = logging.getLogger(__name__)

METADATA_TOPIC = "__cluster_metadata"
NO_LEADER = -1
# What each discovery request needs of the proxy's principal on the Cluster resource, as Kafka 4.3.1's controller checks it.
DESCRIBE_CLUSTER_OPERATION = "Alter"
DESCRIBE_QUORUM_OPERATION = "Describe"


class DiscoveryError(Exception):
    """This node could not say who the active controller is."""

    def __init__(self, message: str, code: int = ErrorCode.unknown_server_error) -> None:
        super().__init__(message)
        self.code = code

    @property
    def unauthorized(self) -> bool:
        return self.code == ErrorCode.cluster_authorization_failed


@dataclass(frozen=True, slots=True)
class Answer:
    """One node's view: the active controller (None while no leader is known) and the endpoints it named."""

    active: ControllerAddress | None
    endpoints: tuple[ControllerAddress, ...] = ()
    method: str = "probe"
    cluster_id: str | None = None
    """The cluster id the node reported (DescribeCluster carries it; DescribeQuorum and a probe do not)."""


def from_describe_cluster(response: Any) -> Answer:
    code = int(response.error_code)
    if code != ErrorCode.none:
        raise DiscoveryError(f"DescribeCluster answered {ErrorCode(code).name.upper()}: {response.error_message}", code)
    endpoints = tuple(ControllerAddress(str(b.host), int(b.port), int(b.broker_id)) for b in response.brokers)
    leader = int(response.controller_id)
    active = next((endpoint for endpoint in endpoints if endpoint.node_id == leader), None)
    return Answer(active, endpoints, "DescribeCluster", str(response.cluster_id or "") or None)


def from_describe_quorum(response: Any, listener: str, voters: tuple[ControllerAddress, ...], answering: ControllerAddress) -> Answer:
    """Only the leader answers DescribeQuorum (others: NOT_LEADER_OR_FOLLOWER), so without a listed
    endpoint the leader is the node that answered."""
    code = int(response.error_code)
    if code != ErrorCode.none:
        raise DiscoveryError(f"DescribeQuorum answered {ErrorCode(code).name.upper()}", code)
    partitions = [p for t in response.topics if str(t.topic_name) == METADATA_TOPIC for p in t.partitions]
    if not partitions or int(partitions[0].error_code) != ErrorCode.none:
        codes = [ErrorCode(int(p.error_code)).name.upper() for p in partitions]
        raise DiscoveryError(f"DescribeQuorum gave no leader for {METADATA_TOPIC}-0: {codes or 'no partition'}", ErrorCode.not_leader_or_follower)
    leader = int(partitions[0].leader_id)
    named = [
        ControllerAddress(str(item.host), int(item.port), int(node.node_id))
        for node in getattr(response, "nodes", ())
        for item in node.listeners
        if str(item.name).upper() == listener.upper()
    ]
    endpoints = tuple(named) or tuple(voter for voter in voters if voter.node_id is not None)
    if leader == NO_LEADER:
        return Answer(None, endpoints, "DescribeQuorum")
    active = next((endpoint for endpoint in endpoints if endpoint.node_id == leader), None)
    return Answer(active or ControllerAddress(answering.host, answering.port, leader), endpoints, "DescribeQuorum")


def shared_endpoints(endpoints: tuple[ControllerAddress, ...]) -> dict[str, list[int]]:
    """Addresses that more than one node advertises: the proxy cannot tell those nodes apart.

    Typically a listener bound to loopback (a sidecar's `127.0.0.1:9095`) and advertised as such by
    every controller: the proxy would send to its own node while meaning the leader.
    """
    nodes: dict[str, list[int]] = {}
    for endpoint in endpoints:
        if endpoint.node_id is not None:
            nodes.setdefault(endpoint.address, []).append(endpoint.node_id)
    return {address: ids for address, ids in nodes.items() if len(set(ids)) > 1}


def _highest(link: Link, api_key: ApiKey, lowest: int, highest: int) -> int | None:
    supported = link.ranges.get(api_key)
    if supported is None or supported.max < lowest or supported.min > highest:
        return None
    return min(supported.max, highest)


async def ask(link: Link, voters: tuple[ControllerAddress, ...], *, deadline: float) -> Answer:
    """The node at the other end of `link`, asked with the best method it advertises and the proxy may use.

    DescribeCluster refused for want of an ACL falls back to DescribeQuorum; both refused raise the
    DiscoveryError of the last (`unauthorized`), so that the caller can name the ACLs.
    """
    refused: DiscoveryError | None = None
    try:
        version = _highest(link, ApiKey.DESCRIBE_CLUSTER, 1, 2)
        if version is not None:
            values: dict[str, object] = {"include_cluster_authorized_operations": False, "endpoint_type": EndpointType.CONTROLLER}
            if version >= 2:
                values["include_fenced_brokers"] = False
            try:
                return from_describe_cluster(await link.call(ApiKey.DESCRIBE_CLUSTER, version, values, deadline=deadline))
            except DiscoveryError as exc:
                if not exc.unauthorized:
                    raise
                refused = exc
        version = _highest(link, ApiKey.DESCRIBE_QUORUM, 0, 2)
        if version is not None:
            topics = [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]
            response = await link.call(ApiKey.DESCRIBE_QUORUM, version, {"topics": topics}, deadline=deadline)
            return from_describe_quorum(response, link.settings.listener_name, voters, link.server)
    except (ProtocolError, ValueError, TypeError, AttributeError) as exc:
        raise DiscoveryError(f"cannot read the discovery answer of {link.server.address}: {exc}") from exc
    if refused is not None:
        raise refused
    return Answer(link.server, (), "probe")


__all__ = ["Answer", "DiscoveryError", "ask", "from_describe_cluster", "from_describe_quorum", "shared_endpoints"]
