"""Reading discovery answers (pure): DescribeCluster v1+ at a controller, and DescribeQuorum."""

import pytest
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import response_schema
from proxy.net.addresses import ControllerAddress
from proxy.upstream.discovery import METADATA_TOPIC, DiscoveryError, from_describe_cluster, from_describe_quorum, shared_endpoints

ANSWERING = ControllerAddress("127.0.0.1", 9001)


def describe_cluster(controller_id: int, *brokers: tuple[int, int], error: int = 0) -> object:
    values = {
        "throttle_time": 0,
        "error_code": error,
        "error_message": None,
        "endpoint_type": 2,
        "cluster_id": "c",
        "controller_id": controller_id,
        "brokers": [{"broker_id": node, "host": "127.0.0.1", "port": port, "rack": None} for node, port in brokers],
        "cluster_authorized_operations": -2147483648,
    }
    return build_entity(response_schema(ApiKey.DESCRIBE_CLUSTER, 1), values)


def describe_quorum(leader: int, *, version: int = 2, nodes: tuple[tuple[int, str, int], ...] = (), error: int = 0) -> object:
    partition = {
        "partition_index": 0,
        "error_code": error,
        "error_message": None,
        "leader_id": leader,
        "leader_epoch": 3,
        "high_watermark": 10,
        "current_voters": [],
        "observers": [],
    }
    values = {
        "error_code": 0,
        "error_message": None,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        "nodes": [{"node_id": n, "listeners": [{"name": name, "host": "127.0.0.1", "port": p}]} for n, name, p in nodes],
    }
    return build_entity(response_schema(ApiKey.DESCRIBE_QUORUM, version), values)


def test_describe_cluster_names_the_leader_among_the_controllers() -> None:
    answer = from_describe_cluster(describe_cluster(2, (1, 9001), (2, 9002), (3, 9003)))
    assert answer.active == ControllerAddress("127.0.0.1", 9002, 2)
    assert [e.node_id for e in answer.endpoints] == [1, 2, 3]


def test_describe_cluster_without_a_leader_knows_the_endpoints_but_no_active_controller() -> None:
    answer = from_describe_cluster(describe_cluster(-1, (1, 9001), (2, 9002)))
    assert answer.active is None and len(answer.endpoints) == 2


def test_describe_cluster_refused_is_an_unauthorized_discovery_error() -> None:
    with pytest.raises(DiscoveryError) as refused:
        from_describe_cluster(describe_cluster(-1, error=ErrorCode.cluster_authorization_failed))
    assert refused.value.unauthorized and "CLUSTER_AUTHORIZATION_FAILED" in str(refused.value)


def test_describe_quorum_v2_takes_the_leader_endpoint_on_the_controller_listener() -> None:
    nodes = ((1, "CONTROLLER", 9001), (1, "OTHER", 7001), (2, "CONTROLLER", 9002))
    answer = from_describe_quorum(describe_quorum(2, nodes=nodes), "controller", (), ANSWERING)
    assert answer.active == ControllerAddress("127.0.0.1", 9002, 2)
    assert sorted(e.port for e in answer.endpoints) == [9001, 9002]


def test_describe_quorum_v0_uses_the_voters_for_the_leader_address() -> None:
    voters = (ControllerAddress("10.0.0.1", 9001, 1), ControllerAddress("10.0.0.2", 9002, 2))
    answer = from_describe_quorum(describe_quorum(2, version=0), "CONTROLLER", voters, ANSWERING)
    assert answer.active == voters[1]


def test_describe_quorum_without_endpoints_means_the_answering_node_leads() -> None:
    # Only the leader answers DescribeQuorum, so its answer names the node that gave it.
    answer = from_describe_quorum(describe_quorum(5, version=1), "CONTROLLER", (), ANSWERING)
    assert answer.active == ControllerAddress("127.0.0.1", 9001, 5)


def test_describe_quorum_from_a_follower_is_a_discovery_error() -> None:
    with pytest.raises(DiscoveryError, match="NOT_LEADER_OR_FOLLOWER"):
        from_describe_quorum(describe_quorum(-1, error=ErrorCode.not_leader_or_follower), "CONTROLLER", (), ANSWERING)


def test_nodes_that_advertise_one_address_are_named() -> None:
    """A sidecar layout that advertises 127.0.0.1 for every controller cannot be followed: say so."""
    answer = from_describe_cluster(describe_cluster(2, (1, 9095), (2, 9095), (3, 9096)))
    assert shared_endpoints(answer.endpoints) == {"127.0.0.1:9095": [1, 2]}
    assert shared_endpoints(from_describe_cluster(describe_cluster(2, (1, 9095), (2, 9096))).endpoints) == {}
