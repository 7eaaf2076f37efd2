"""KIP-368 side by side with Kafka 4.3.1: the same raw SASL sequences sent to a broker listener whose sessions expire
and to the proxy's listener configured the same way, compared answer by answer; and the proxy's own links kept
alive across the expiring sessions of a real Kafka controller. Marker `interop`."""

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit import wire
from devkit.kafka_node import KafkaNode
from envelope.apis import ApiKey
from envelope_proxy.embedded import proxy_properties
from proxy.app import RunningProxy, run_proxy
from proxy.config import parse_proxy_config
from tests.interop.conftest import _kafka_lib

pytestmark = pytest.mark.interop

LIFETIME_MS = 2000
_EXPIRING = {"connections.max.reauth.ms": str(LIFETIME_MS)}


@pytest.fixture(scope="module")
def expiring_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """A node whose every SASL session (broker and controller listeners) lasts LIFETIME_MS."""
    with KafkaNode(workdir=tmp_path_factory.mktemp("kafka-reauth"), lib_dir=_kafka_lib("a Kafka node"), extra_properties=_EXPIRING) as node:
        yield node


@pytest.fixture
async def proxy(expiring_node: KafkaNode, nursery: Any, tmp_path: Path) -> RunningProxy:
    props = proxy_properties(0, tmp_path / "audit", users={"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"})
    props.update(expiring_node.proxy_upstream_properties())
    props["read.bootstrap.servers"] = expiring_node.broker_address
    props["listener.name.client.plain.connections.max.reauth.ms"] = str(LIFETIME_MS)
    running: RunningProxy = await nursery.start(run_proxy, parse_proxy_config(props))
    return running



def _login(address: str, user: str) -> tuple[socket.socket, float]:
    sock = wire.connect(address)
    answer = wire.sasl_plain_authenticate(sock, user, _password(user))
    assert int(answer.error_code) == 0
    return sock, answer.session_lifetime.total_seconds()


def _password(user: str) -> str:
    return f"{user}-secret"


def _reauthenticate(sock: socket.socket, user: str, correlation_id: int) -> tuple[int, int, str | None, float]:
    handshake = wire.call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, correlation_id=correlation_id)
    if int(handshake.error_code) != 0:
        return int(handshake.error_code), -1, None, 0.0
    answer = wire.call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": wire.plain_token(user, _password(user))}, correlation_id=correlation_id + 1)
    return 0, int(answer.error_code), answer.error_message, answer.session_lifetime.total_seconds()


def _metadata(sock: socket.socket, correlation_id: int) -> int:
    """A read both a broker and the proxy answer: the number of brokers listed (a closed connection raises)."""
    body = wire.call(sock, ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}, correlation_id)
    return len(body.brokers)


def _sequences(address: str) -> dict[str, Any]:
    """What a server does with each KIP-368 sequence, in a form both can be compared by."""
    seen: dict[str, Any] = {}
    sock, seen["lifetime"] = _login(address, "alice")
    seen["read"] = _metadata(sock, 3) > 0
    seen["at once"] = _reauthenticate(sock, "alice", 4)  # the first may begin at any time
    seen["within a second"] = _reauthenticate(sock, "alice", 6)  # the next not before a second has passed
    time.sleep(1.1)
    seen["renewed"] = _reauthenticate(sock, "alice", 6)
    time.sleep(1.2)  # past the first session, within the renewed one
    seen["read after renewal"] = _metadata(sock, 8) > 0
    time.sleep(1.0)
    seen["changed principal"] = _reauthenticate(sock, "bob", 9)
    seen["changed principal closes"] = wire.is_closed(sock)
    sock.close()

    sock, _ = _login(address, "alice")
    time.sleep(LIFETIME_MS / 1000 + 0.5)
    sock.sendall(wire.encode_frame(wire.request(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}, 3)))
    seen["expired request closes unanswered"] = wire.is_closed(sock)
    sock.close()

    sock, _ = _login(address, "alice")
    time.sleep(LIFETIME_MS / 1000 + 0.5)
    seen["handshake after expiry"] = _reauthenticate(sock, "alice", 3)
    seen["read after late renewal"] = _metadata(sock, 5) > 0
    sock.close()
    return seen


async def test_re_authentication_is_answered_as_a_kafka_broker_answers_it(expiring_node: KafkaNode, proxy: RunningProxy) -> None:
    kafka = await trio.to_thread.run_sync(_sequences, expiring_node.broker_address)
    ours = await trio.to_thread.run_sync(_sequences, proxy.address("CLIENT"))
    assert kafka["lifetime"] == LIFETIME_MS / 1000  # the node's setting took effect
    assert kafka["changed principal"][2].startswith("Cannot change principals")
    assert ours == kafka


async def test_the_proxys_links_live_through_a_kafka_controllers_session_expiry(expiring_node: KafkaNode, proxy: RunningProxy) -> None:
    """Kafka's controller closes a connection used after its session expired; the proxy's links log in again first."""
    metrics = proxy.service.metrics.registry

    def value(name: str, labels: dict[str, str] | None = None) -> float:
        return metrics.get_sample_value(name, labels or {}) or 0.0

    def forward_for_a_while() -> list[int]:
        sock, _ = _login(proxy.address("CLIENT"), "admin")
        authenticated = time.monotonic()
        codes = []
        for index in range(7):
            if time.monotonic() - authenticated > LIFETIME_MS / 2000:  # the client keeps its own 2 s session alive too
                assert _reauthenticate(sock, "admin", 50 + 2 * index)[:2] == (0, 0)
                authenticated = time.monotonic()
            values = {"topics": [{"name": f"reauth-{index}-{time.time_ns()}", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": True}
            codes.append(int(wire.call(sock, ApiKey.CREATE_TOPICS, 5, values, correlation_id=20 + index).topics[0].error_code))
            time.sleep(0.9)
        return codes

    reconnects = value("envelope_proxy_upstream_reconnects_total")
    codes = await trio.to_thread.run_sync(forward_for_a_while)
    assert codes == [0] * 7
    assert value("envelope_proxy_upstream_reauthentications_total") >= 1
    assert value("envelope_proxy_upstream_reconnects_total") == reconnects
