"""An embedded controller that is not the quorum's active node answers as a KRaft follower does."""

from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from devkit.processes import free_port
from envelope import kafka_uuid
from envelope.apis import ApiKey, EndpointType
from envelope.principal import Principal
from envelope.wrap import unwrap, wrap
from envelope_proxy.embedded import controller_properties
from proxy.properties import ConfigError

METADATA_TOPIC = "__cluster_metadata"
CREATE = {
    "topics": [{"name": "t1", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
    "timeout": 1000,
    "validate_only": False,
}
DESCRIBE_QUORUM = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}


def _describe_cluster(endpoint_type: int) -> dict[str, Any]:
    return {"include_cluster_authorized_operations": False, "endpoint_type": endpoint_type, "include_fenced_brokers": False}


class Quorum:
    """Node 1 of a three-voter quorum whose other voters are only named (their ports are reserved, nobody listens)."""

    def __init__(self, active: int) -> None:
        self.ports = {node: free_port() for node in (1, 2, 3)}
        voters = ",".join(f"{node}@127.0.0.1:{port}" for node, port in self.ports.items())
        cluster_id = kafka_uuid.random_text()  # one id for the whole quorum, as kafka-storage format gives it
        props = {
            **controller_properties(port=self.ports[1], users={"stranger": "stranger-secret"}),
            "controller.quorum.voters": voters,
            "embedded.controller.active.id": str(active),
            "cluster.id": cluster_id,
        }
        self.controller = EmbeddedController(parse_controller_config(props))
        self.address = f"127.0.0.1:{self.ports[1]}"

    def call(self, api_key: ApiKey, version: int, values: dict[str, Any], user: str = "proxy", password: str = "proxy-secret") -> Any:
        with wire.connect(self.address) as sock:
            assert wire.sasl_plain_login(sock, user, password) == 0
            return wire.call(sock, api_key, version, values, 7)

    def envelope(self) -> tuple[int, bytes | None]:
        with wire.connect(self.address) as sock:
            assert wire.sasl_plain_login(sock, "proxy", "proxy-secret") == 0
            inner = wire.request(ApiKey.CREATE_TOPICS, 7, CREATE, correlation_id=1234)
            return unwrap(wire.exchange(sock, wrap(inner, Principal("User", "admin"), "127.0.0.7", correlation_id=5)))


@pytest.fixture
async def follower(nursery: Any) -> Quorum:
    quorum = Quorum(active=2)
    await nursery.start(quorum.controller.run)
    return quorum


async def test_an_envelope_at_a_follower_gets_not_controller_and_changes_nothing(follower: Quorum) -> None:
    error, data = await trio.to_thread.run_sync(follower.envelope)
    assert (ErrorCode(error), data) == (ErrorCode.not_controller, None)
    assert "t1" not in follower.controller.image.topics and not follower.controller.image.changes


async def test_a_direct_admin_request_at_a_follower_gets_not_controller_per_resource(follower: Quorum) -> None:
    body = await trio.to_thread.run_sync(follower.call, ApiKey.CREATE_TOPICS, 7, CREATE)
    assert [(str(t.name), ErrorCode(t.error_code)) for t in body.topics] == [("t1", ErrorCode.not_controller)]
    assert "t1" not in follower.controller.image.topics


async def test_describe_quorum_at_a_follower_names_no_leader(follower: Quorum) -> None:
    body = await trio.to_thread.run_sync(follower.call, ApiKey.DESCRIBE_QUORUM, 2, DESCRIBE_QUORUM)
    (partition,) = body.topics[0].partitions
    assert ErrorCode(partition.error_code) == ErrorCode.not_leader_or_follower and not body.nodes


async def test_describe_cluster_names_the_active_controller_and_every_voter(follower: Quorum) -> None:
    body = await trio.to_thread.run_sync(follower.call, ApiKey.DESCRIBE_CLUSTER, 2, _describe_cluster(EndpointType.CONTROLLER))
    assert ErrorCode(body.error_code) == ErrorCode.none
    assert int(body.controller_id) == 2
    assert sorted((int(b.broker_id), str(b.host), int(b.port)) for b in body.brokers) == [
        (node, "127.0.0.1", port) for node, port in sorted(follower.ports.items())
    ]


async def test_set_active_moves_the_leader_and_the_follower_starts_serving(follower: Quorum) -> None:
    follower.controller.set_active(1)
    error, data = await trio.to_thread.run_sync(follower.envelope)
    assert error == ErrorCode.none and data is not None and "t1" in follower.controller.image.topics
    quorum = await trio.to_thread.run_sync(follower.call, ApiKey.DESCRIBE_QUORUM, 2, DESCRIBE_QUORUM)
    (partition,) = quorum.topics[0].partitions
    assert (int(partition.leader_id), sorted(int(v.replica_id) for v in partition.current_voters)) == (1, [1, 2, 3])
    assert {int(n.node_id): int(n.listeners[0].port) for n in quorum.nodes} == follower.ports

    follower.controller.set_active(None)
    cluster = await trio.to_thread.run_sync(follower.call, ApiKey.DESCRIBE_CLUSTER, 1, _describe_cluster(EndpointType.CONTROLLER))
    assert int(cluster.controller_id) == -1
    with pytest.raises(ValueError, match="not a voter"):
        follower.controller.set_active(9)


@pytest.mark.parametrize(
    ("version", "endpoint_type", "expected"),
    [
        pytest.param(1, EndpointType.BROKER, ErrorCode.mismatched_endpoint_type, id="v1-broker-endpoint"),
        pytest.param(0, None, ErrorCode.invalid_request, id="v0-means-broker"),
        pytest.param(1, 7, ErrorCode.unsupported_endpoint_type, id="unknown-endpoint-type"),
    ],
)
async def test_describe_cluster_refuses_other_endpoint_types_as_kafka_does(
    follower: Quorum, version: int, endpoint_type: int | None, expected: ErrorCode
) -> None:
    values = {"include_cluster_authorized_operations": False} if endpoint_type is None else {**_describe_cluster(endpoint_type)}
    if version < 2:
        values.pop("include_fenced_brokers", None)
    body = await trio.to_thread.run_sync(follower.call, ApiKey.DESCRIBE_CLUSTER, version, values)
    assert ErrorCode(body.error_code) == expected and not body.brokers


async def test_describe_cluster_at_a_controller_needs_alter_on_the_cluster(follower: Quorum) -> None:
    """A 4.3.1 controller checks ALTER, not DESCRIBE as a broker does: a principal without ACLs is refused."""
    body = await trio.to_thread.run_sync(
        lambda: follower.call(ApiKey.DESCRIBE_CLUSTER, 2, _describe_cluster(EndpointType.CONTROLLER), "stranger", "stranger-secret")
    )
    assert ErrorCode(body.error_code) == ErrorCode.cluster_authorization_failed and int(body.controller_id) == -1


@pytest.mark.parametrize(
    ("extra", "key", "reason"),
    [
        ({"controller.quorum.voters": "2@127.0.0.1:9093,3@127.0.0.1:9094"}, "node.id", "not among controller.quorum.voters"),
        ({"controller.quorum.voters": "1@127.0.0.1:9093", "embedded.controller.active.id": "2"}, "embedded.controller.active.id", "names no voter"),
        ({"embedded.controller.active.id": "-2"}, "embedded.controller.active.id", ""),
        ({"controller.quorum.voters": "1@127.0.0.1"}, "controller.quorum.voters", "is not host:port"),
    ],
)
def test_quorum_settings_are_checked_naming_the_key(extra: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_controller_config({**controller_properties(), **extra})
    assert raised.value.key == key and reason in str(raised.value)


def test_a_lone_controller_is_its_own_leader_and_minus_one_means_none() -> None:
    assert parse_controller_config(controller_properties()).active_id == 1
    assert parse_controller_config({**controller_properties(), "embedded.controller.active.id": "-1"}).active_id is None
