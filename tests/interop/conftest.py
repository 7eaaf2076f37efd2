"""Fixtures that run a real Apache Kafka KRaft node (see kafka_node.py); marker `interop`.

Without java or mvn the fixtures skip, except under CI=true, where they fail.
mvn is only needed until the jars are cached (~/.cache/kafka-envelope-proxy).
"""

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from devkit.kafka_jars import ensure_kafka_jars, missing_tools
from devkit.kafka_node import KafkaNode
from devkit.processes import skip_or_fail
from devkit.tooling import ToolingMissing
from tests.audit_records import assert_valid, records_under
from tests.interop.envelope_client import Controller, run_embedded_controller
from tests.interop.kafka_quorum import KafkaQuorum
from tests.interop.keycloak import Keycloak, ensure_keycloak

NODE_FIXTURES = ("kafka_node", "kafka_node_acl", "own_kafka_node")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "interop: starts a real Apache Kafka KRaft node (needs java 17+, and mvn on first use)")


def _kafka_lib(what: str) -> Path:
    """The Kafka jars, or a skip (a failure when CI=true) naming what is missing for `what`."""
    if "java" in missing_tools():
        skip_or_fail(f"java not installed: {what} needs Java 17+")
    try:
        return ensure_kafka_jars()
    except ToolingMissing as exc:
        skip_or_fail(str(exc))
        raise  # unreachable: skip/fail raise


def _start(tmp_path_factory: pytest.TempPathFactory, *, proxy_super_user: bool, name: str | None = None) -> Iterator[KafkaNode]:
    lib = _kafka_lib("a real Kafka node")
    name = name or ("kafka-node" if proxy_super_user else "kafka-node-acl")
    timeout = float(os.environ.get("KAFKA_NODE_STARTUP_TIMEOUT", "120"))
    # under pytest's basetemp, so kafka.log and server.properties outlive the session for post-mortems
    with KafkaNode(proxy_super_user=proxy_super_user, workdir=tmp_path_factory.mktemp(name), lib_dir=lib, startup_timeout=timeout) as node:
        yield node


@pytest.fixture(scope="session")
def kafka_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """A running combined broker+controller node in which User:admin and User:proxy are super users."""
    yield from _start(tmp_path_factory, proxy_super_user=True)


@pytest.fixture(scope="session")
def kafka_node_acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """Like kafka_node, but User:proxy is no super user: it holds ClusterAction on the cluster through an ACL."""
    yield from _start(tmp_path_factory, proxy_super_user=False)


@pytest.fixture(scope="session")
def kafka_quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaQuorum]:
    """Three combined nodes in one static quorum, shared by the whole run (it takes the longest to start); the tests
    that kill a node start it again before they end."""
    lib = _kafka_lib("a real Kafka quorum")
    timeout = float(os.environ.get("KAFKA_NODE_STARTUP_TIMEOUT", "180"))
    with KafkaQuorum(tmp_path_factory.mktemp("kafka-quorum"), lib_dir=lib, startup_timeout=timeout) as quorum:
        yield quorum


@pytest.fixture(scope="session")
def keycloak_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keycloak]:
    """One Keycloak for the whole run (it takes 20 s and more to start); each suite makes a realm of its own."""
    if "java" in missing_tools():
        skip_or_fail("java not installed: Keycloak needs Java 17+")
    try:
        home = ensure_keycloak()
    except ToolingMissing as exc:
        skip_or_fail(str(exc))
        raise  # unreachable: skip/fail raise
    # under pytest's basetemp, so keycloak.log outlives the session for post-mortems
    with Keycloak(home=home, workdir=tmp_path_factory.mktemp("keycloak")) as server:
        print(f"Keycloak {server.version} ready in {server.startup_seconds} s")
        yield server


@pytest.fixture
def own_kafka_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """A node for one test alone, which may kill and restart it."""
    yield from _start(tmp_path_factory, proxy_super_user=True, name="own-kafka-node")


@pytest.fixture(autouse=True)
def _audit_records_match_the_schema(tmp_path: Path) -> Iterator[None]:
    """After every interop test: each audit record the proxy wrote (against either upstream) matches the JSON Schema."""
    yield
    assert_valid(records_under(tmp_path))


@pytest.fixture(scope="session")
def embedded_controller() -> Iterator[Controller]:
    yield from run_embedded_controller()


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.interop)])
def controller(request: pytest.FixtureRequest) -> Controller:
    """A controller listener to send Envelopes to: the embedded one, then a real Kafka node's."""
    if request.param == "embedded":
        embedded: Controller = request.getfixturevalue("embedded_controller")
        return embedded
    node: KafkaNode = request.getfixturevalue("kafka_node")
    return Controller("kafka", node.controller_address, node.users["proxy"])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing test that used a node gets the end of the node's log in its report."""
    report = yield
    if report.failed:
        funcargs = getattr(item, "funcargs", {})
        for name in NODE_FIXTURES:
            node = funcargs.get(name)
            if isinstance(node, KafkaNode):
                report.sections.append((f"{name} log ({node.log_path})", node.log_tail(80)))
        quorum = funcargs.get("kafka_quorum")
        if isinstance(quorum, KafkaQuorum):
            for node_id, member in quorum.nodes.items():
                report.sections.append((f"kafka_quorum node {node_id} log ({member.log_path})", member.log_tail(60)))
    return report
