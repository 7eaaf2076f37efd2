"""The cluster id: learned from the controllers, answered to clients, kept across restarts, and a node of another cluster refused.

The regression at the top runs confluent-kafka's `describe_cluster()` in a child process: with a null
cluster id librdkafka 2.16 dies with SIGSEGV inside rd_kafka_DescribeClusterResponse_parse (docs/clients.md),
which would take pytest down with it.
"""

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.identity import META_PROPERTIES, cluster_id_for
from controller.server import EmbeddedController
from controller.topic_rules import broker_ids_of
from devkit import wire
from devkit.processes import free_port
from envelope import kafka_uuid
from envelope.apis import ApiKey, EndpointType
from envelope_proxy.embedded import DEFAULT_USERS, EmbeddedStack, controller_properties, proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from proxy.properties import ConfigError

CLIENT_TIMEOUT = 60.0


def _ask(address: str, api_key: int, version: int, values: dict[str, Any], *, user: str = "admin") -> Any:
    with wire.connect(address, timeout=30) as sock:
        assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
        return wire.call(sock, api_key, version, values, 5)


def _metadata_values(version: int) -> dict[str, Any]:
    return {
        "topics": [],  # no topics (v0: all of them, of which there are none)
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


async def test_confluent_kafka_describe_cluster_through_the_proxy_gets_the_controllers_cluster_id(stack: EmbeddedStack) -> None:
    expected = stack.controller.leadership.cluster_id
    code = textwrap.dedent(
        f"""
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({{"bootstrap.servers": "{stack.plaintext_address}"}})
        print(admin.list_topics(timeout=30).cluster_id)
        result = admin.describe_cluster(request_timeout=30).result(timeout=60)
        print(result.cluster_id)
        print(result.controller.id, [node.id for node in result.nodes])
        """
    )
    done = await trio.to_thread.run_sync(
        lambda: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=CLIENT_TIMEOUT, check=False)
    )
    assert done.returncode == 0, f"confluent-kafka exited with {done.returncode} (-11 is SIGSEGV): {done.stderr[-2000:]}"
    listed, described, nodes = done.stdout.split("\n")[:3]
    assert listed == described == expected
    # The cluster's brokers at the proxy's address, one of them the controller (docs/clients.md, one broker view).
    brokers = broker_ids_of(stack.controller.config.broker_count)
    assert nodes == f"{brokers[0]} {brokers}"


@pytest.mark.parametrize("version", range(1, 14))
async def test_metadata_at_every_version_from_v2_carries_the_cluster_id(stack: EmbeddedStack, version: int) -> None:
    body = await trio.to_thread.run_sync(lambda: _ask(stack.sasl_address, ApiKey.METADATA, version, _metadata_values(version)))
    if version >= 2:
        assert body.cluster_id == stack.controller.leadership.cluster_id
    assert [int(b.node_id) for b in body.brokers] == broker_ids_of(stack.controller.config.broker_count)


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_describe_cluster_carries_the_cluster_id(stack: EmbeddedStack, version: int) -> None:
    values: dict[str, Any] = {"include_cluster_authorized_operations": False}
    if version >= 1:
        values["endpoint_type"] = EndpointType.BROKER
    if version >= 2:
        values["include_fenced_brokers"] = False
    body = await trio.to_thread.run_sync(lambda: _ask(stack.sasl_address, ApiKey.DESCRIBE_CLUSTER, version, values))
    assert int(body.error_code) == 0
    assert body.cluster_id == stack.controller.leadership.cluster_id
    assert kafka_uuid.parse_problem(str(body.cluster_id)) is None


async def test_a_controller_of_another_cluster_is_not_forwarded_to(nursery: Any, tmp_path: Path) -> None:
    """The proxy's cluster.id names one cluster; a controller formatted for another is refused, and requests time out."""
    controller = EmbeddedController(parse_controller_config(controller_properties()))
    (bound,) = await nursery.start(controller.run)
    fronted = kafka_uuid.random_text()
    props = {
        **proxy_properties(bound.port, tmp_path / "audit"),
        "cluster.id": fronted,
        "request.timeout.ms": "1000",
        "controller.forward.timeout.ms": "1500",
    }
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    address = f"127.0.0.1:{running.listener('CLIENT').port}"
    topic = {"name": "elsewhere", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    body = await trio.to_thread.run_sync(
        lambda: _ask(address, ApiKey.CREATE_TOPICS, 5, {"topics": [topic], "timeout_ms": 5000, "validate_only": False})
    )
    assert [int(t.error_code) for t in body.topics] == [ErrorCode.request_timed_out]
    assert "elsewhere" not in controller.image.topics
    assert not running.service.upstream.connected
    # Clients still hear the id of the cluster the proxy was told it fronts, never the stranger's.
    described = await trio.to_thread.run_sync(
        lambda: _ask(address, ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
    )
    assert described.cluster_id == fronted


async def test_the_cluster_id_is_kept_across_a_controller_restart(nursery: Any, tmp_path: Path) -> None:
    """Learned from the first controller, the id stays when the controller comes back: the same one from meta.properties."""
    metadata = tmp_path / "metadata"
    props = {**controller_properties(), "metadata.log.dir": str(metadata)}
    first = EmbeddedController(parse_controller_config(props))
    assert (metadata / META_PROPERTIES).is_file()
    again = EmbeddedController(parse_controller_config(props))
    assert again.leadership.cluster_id == first.leadership.cluster_id


def test_a_configured_cluster_id_that_differs_from_the_stored_one_is_a_configuration_error(tmp_path: Path) -> None:
    stored = cluster_id_for(1, None, tmp_path)
    other = kafka_uuid.random_text()
    with pytest.raises(ConfigError) as error:
        cluster_id_for(1, other, tmp_path)
    assert error.value.key == "cluster.id" and error.value.value == other and stored in error.value.reason


@pytest.mark.parametrize("parse", [parse_controller_config, parse_proxy_config])
@pytest.mark.parametrize("value", ["my-cluster", "", "A" * 23, "!" * 22])
def test_a_cluster_id_that_is_no_kafka_uuid_is_a_configuration_error(tmp_path: Path, parse: Any, value: str) -> None:
    props = controller_properties() if parse is parse_controller_config else proxy_properties(9093, tmp_path)
    with pytest.raises(ConfigError) as error:
        parse({**props, "cluster.id": value})
    assert error.value.key == "cluster.id" and error.value.value == value


def test_kafka_uuid_text_round_trips_and_never_starts_with_a_dash() -> None:
    for _ in range(2000):
        text = kafka_uuid.random_text()
        assert len(text) == kafka_uuid.TEXT_LENGTH and not text.startswith("-")
        assert kafka_uuid.parse_problem(text) is None


def test_a_voter_of_several_without_a_cluster_id_warns_that_its_id_is_its_own(caplog: pytest.LogCaptureFixture) -> None:
    """Real Kafka controllers' files carry no cluster.id (it is in meta.properties), so it is no configuration error."""
    voters = {"controller.quorum.voters": "1@127.0.0.1:19093,2@127.0.0.1:19094"}
    with caplog.at_level("WARNING", logger="controller.identity"):
        controller = EmbeddedController(parse_controller_config({**controller_properties(), **voters}))
    assert kafka_uuid.parse_problem(controller.leadership.cluster_id) is None
    assert any("cluster.id is not set and 2 voters" in record.getMessage() for record in caplog.records)


async def test_a_proxy_without_a_cluster_id_closes_the_connection_rather_than_answer_metadata(nursery: Any, tmp_path: Path) -> None:
    """No controller reachable and no cluster.id: Metadata gets no answer with a made-up id; the connection closes."""
    dead = free_port()
    props = {**proxy_properties(dead, tmp_path / "audit"), "request.timeout.ms": "500"}
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    address = f"127.0.0.1:{running.listener('CLIENT').port}"

    def metadata_closes() -> bool:
        with wire.connect(address, timeout=30) as sock:
            assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
            sock.sendall(wire.encode_frame(wire.request(ApiKey.METADATA, 12, _metadata_values(12), 3)))
            return wire.is_closed(sock)

    assert await trio.to_thread.run_sync(metadata_closes)

