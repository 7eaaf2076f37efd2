"""Seven real clients run one admin workflow through the proxy, in front of three upstreams, as against Kafka.

Clients: confluent-kafka (librdkafka), kafka-python, Kafka's Java AdminClient (a program compiled at
test time), Kafka's own CLI tool classes, kcat, franz-go's kadm (Go) and kafkajs (Node), the last two
built or installed once per machine (tests/interop/client_matrix/go_and_node.py). Clients whose admin API
has the calls also run the cluster steps (workflow.CLUSTER_STEPS: the broker list before and after a topic
describe, broker configs for every listed broker id, leader election, reassignments, client quotas, SCRAM
credentials), CLIENT_STEPS says which. Upstreams: the embedded controller, one Kafka
4.3.1 node, and a 3-node quorum whose active controller is killed between the two phases of the
workflow. Each cell's outcomes, step by step, must equal what the same client sees talking to the
Kafka node directly (tests/interop/client_matrix/workflow.py says what is taken out before comparing),
and the cluster id a client sees must be the upstream's own. A client that crashes or hangs fails its
cell with its name. Each upstream starts once; the direct runs are made once per client and kept.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit.kafka_jars import ensure_kafka_jars
from devkit.kafka_node import KafkaNode
from devkit.tooling import ToolingMissing
from envelope_proxy.embedded import proxy_properties, start_stack
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from tests.interop.client_matrix.go_and_node import ClientRunFailed, kadm_workflow, kafkajs_workflow
from tests.interop.client_matrix.jvm_and_kcat import (
    ClientFailed,
    cli_tools_workflow,
    compile_programs,
    java_admin_workflow,
    kcat_workflow,
)
from tests.interop.client_matrix.workflow import CLUSTER_STEPS, FIRST_PHASE, SECOND_PHASE, WorkflowSpec, normalised
from tests.interop.kafka_quorum import KafkaQuorum

pytestmark = pytest.mark.interop

CLIENTS = ("confluent-kafka", "kafka-python", "java-admin", "kafka-cli", "kcat", "kadm", "kafkajs")
CLIENT_STEPS: dict[str, frozenset[str]] = {
    # librdkafka has no call for client quotas or partition reassignments.
    "confluent-kafka": frozenset({"broker_list", "broker_configs", "elect_leaders", "scram_credentials"}),
    "kafka-python": frozenset({"broker_list", "broker_configs", "list_reassignments"}),
    "java-admin": frozenset(CLUSTER_STEPS),
    "kadm": frozenset(CLUSTER_STEPS),
    # kafkajs's admin has no call for client quotas, SCRAM credentials or leader election.
    "kafkajs": frozenset({"broker_list", "broker_configs", "list_reassignments"}),
}
"""The cluster steps each client runs; the other clients run none of them."""
UPSTREAMS = ("embedded", "kafka-node", "kafka-quorum")
PYTHON_CLIENT_TIMEOUT = 300.0
ADMIN = ("admin", "admin-secret")
OUTSIDER = ("alice", "alice-secret")
# The embedded controller configured as the Kafka node is (devkit/kafka_node.py): the same static broker configs.
EMBEDDED_AS_THE_NODE = {"num.partitions": "1", "default.replication.factor": "1", "min.insync.replicas": "1"}
# kcat reads metadata only; the admin work around its reads is done by confluent-kafka.
KCAT_READS = ("describe_topic", "describe_cluster", "refused", "describe_partitions", "after_delete")
KCAT_WRITES = {"describe_topic": ("create_topic",), "describe_partitions": ("add_partitions",), "after_delete": ("delete_topic",)}


@dataclass
class Tools:
    lib: Path
    classes: Path
    kcat: str
    workdir: Path


@dataclass
class Upstream:
    name: str
    bootstrap: str
    cluster_id: str
    between_phases: Callable[[], None] = lambda: None
    after: list[Callable[[], None]] = field(default_factory=list)


@pytest.fixture(scope="session")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Tools:
    lib = ensure_kafka_jars()
    for needed in ("javac", "kcat"):
        if shutil.which(needed) is None:
            pytest.fail(f"{needed} is not installed: the client matrix needs it (make test installs kcat; javac comes with the JDK)")
    workdir = tmp_path_factory.mktemp("client-matrix")
    return Tools(lib, compile_programs(lib, workdir / "classes"), str(shutil.which("kcat")), workdir)


def _python_client(client: str, spec: WorkflowSpec) -> dict[str, Any]:
    import json

    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.interop.client_matrix.python_clients", client, spec.to_json()],
            capture_output=True,
            text=True,
            timeout=PYTHON_CLIENT_TIMEOUT,
            check=False,
            cwd=Path(__file__).resolve().parents[2],
        )
    except subprocess.TimeoutExpired as exc:
        raise ClientFailed(f"{client} hung for {PYTHON_CLIENT_TIMEOUT:.0f}s") from exc
    if done.returncode != 0:
        raise ClientFailed(f"{client} exited with {done.returncode} (-11 is SIGSEGV): {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_phase(client: str, tools: Tools, bootstrap: str, topic: str, phase: tuple[str, ...]) -> dict[str, Any]:
    """One phase of the workflow, as `client` runs it."""
    steps = tuple(step for step in phase if step not in CLUSTER_STEPS or step in CLIENT_STEPS.get(client, ()))
    spec = WorkflowSpec(bootstrap, topic, ADMIN, OUTSIDER, steps)
    if client in ("kadm", "kafkajs"):
        try:
            return kadm_workflow(spec) if client == "kadm" else kafkajs_workflow(spec)
        except (ClientRunFailed, ToolingMissing) as exc:
            raise ClientFailed(str(exc)) from exc
    if client in ("confluent-kafka", "kafka-python"):
        return _python_client(client, spec)
    if client == "java-admin":
        return java_admin_workflow(spec, tools.lib, tools.classes)
    if client == "kafka-cli":
        return cli_tools_workflow(spec, tools.lib, tools.classes, tools.workdir / f"cli-{topic}")
    results: dict[str, Any] = {}
    for step in steps:
        if step in KCAT_READS:
            writes = KCAT_WRITES.get(step, ())
            if writes:
                done = _python_client("confluent-kafka", WorkflowSpec(bootstrap, topic, ADMIN, OUTSIDER, writes))
                results.update({f"{write} (confluent-kafka)": outcome for write, outcome in done.items()})
            results.update(kcat_workflow(WorkflowSpec(bootstrap, topic, ADMIN, OUTSIDER, (step,)), tools.kcat))
    return results


def run_workflow(client: str, tools: Tools, bootstrap: str, topic: str, between_phases: Callable[[], None]) -> dict[str, Any]:
    results = run_phase(client, tools, bootstrap, topic, FIRST_PHASE)
    between_phases()
    results.update(run_phase(client, tools, bootstrap, topic, SECOND_PHASE))
    return results


def _cluster_ids(results: dict[str, Any]) -> list[str | None]:
    described = results.get("describe_cluster")
    if not isinstance(described, dict):
        return []
    return [described.get(key) for key in ("cluster_id", "metadata_cluster_id") if key in described]


_direct: dict[str, dict[str, Any]] = {}


def direct_results(client: str, tools: Tools, node: KafkaNode) -> dict[str, Any]:
    """The client against the Kafka node directly, once per client and run."""
    if client not in _direct:
        _direct[client] = run_workflow(client, tools, node.broker_address, f"matrix-{client}-direct", lambda: None)
    return _direct[client]


@pytest.fixture
async def upstream(request: pytest.FixtureRequest, nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Upstream]:
    kind = request.param
    audit = tmp_path / "audit"
    if kind == "embedded":
        stack = await start_stack(nursery, audit, controller_overrides=EMBEDDED_AS_THE_NODE)
        yield Upstream(kind, stack.sasl_address, stack.controller.leadership.cluster_id)
        return
    if kind == "kafka-node":
        node: KafkaNode = request.getfixturevalue("kafka_node")
        props = {**proxy_properties(0, audit), **node.proxy_upstream_properties(), "read.bootstrap.servers": node.broker_address}
        running = await nursery.start(run_proxy, parse_proxy_config(props))
        yield Upstream(kind, f"127.0.0.1:{running.listener('CLIENT').port}", node.cluster_id)
        return
    quorum: KafkaQuorum = request.getfixturevalue("kafka_quorum")
    first = next(iter(quorum.nodes.values()))
    props = {**proxy_properties(0, audit), **first.proxy_upstream_properties()}
    props["controller.quorum.bootstrap.servers"] = ",".join(n.controller_address for n in quorum.nodes.values())
    props["read.bootstrap.servers"] = ",".join(n.broker_address for n in quorum.nodes.values())
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    killed: list[int] = []

    def kill_the_leader() -> None:
        leader = quorum.leader_id()
        quorum.kill(leader)
        killed.append(leader)

    yield Upstream(kind, f"127.0.0.1:{running.listener('CLIENT').port}", first.cluster_id, kill_the_leader)
    for node_id in killed:
        await trio.to_thread.run_sync(quorum.restart, node_id)  # the next cell finds three voters again


@pytest.mark.parametrize("upstream", UPSTREAMS, indirect=True)
@pytest.mark.parametrize("client", CLIENTS)
async def test_the_workflow_through_the_proxy_is_what_the_client_sees_against_kafka(
    client: str, upstream: Upstream, tools: Tools, kafka_node: KafkaNode
) -> None:
    try:
        expected = await trio.to_thread.run_sync(direct_results, client, tools, kafka_node)
    except ClientFailed as exc:
        pytest.fail(f"{client} against Kafka directly: {exc}")
    topic = f"matrix-{client}-{upstream.name}"
    try:
        seen = await trio.to_thread.run_sync(run_workflow, client, tools, upstream.bootstrap, topic, upstream.between_phases)
    except ClientFailed as exc:
        pytest.fail(f"{client} through the proxy in front of {upstream.name}: {exc}")

    assert all(found == upstream.cluster_id for found in _cluster_ids(seen)), (
        f"{client} saw cluster ids {_cluster_ids(seen)} through the proxy; {upstream.name}'s is {upstream.cluster_id}"
    )
    assert all(found == kafka_node.cluster_id for found in _cluster_ids(expected))
    mine = normalised(seen, topic=topic, cluster_id=upstream.cluster_id, bootstrap=upstream.bootstrap)
    theirs = normalised(expected, topic=f"matrix-{client}-direct", cluster_id=kafka_node.cluster_id, bootstrap=kafka_node.broker_address)
    differing = {
        step: {"through the proxy": mine.get(step), "against Kafka": theirs.get(step), "as seen through the proxy": seen.get(step)}
        for step in theirs
        if mine.get(step) != theirs[step]
    }
    assert not differing, f"{client} in front of {upstream.name}: {len(differing)} steps differ from Kafka: {differing}"
    assert set(mine) == set(theirs)


def test_the_broker_steps_compare_the_set_and_the_controller_not_the_ids() -> None:
    """What broker_list and broker_configs compare: a proxy may list other ids than the Kafka node, but never a set
    that changes with the request, a controller outside it, an address other than its own, or a failing broker."""
    view = {"brokers": [1, 100], "addresses": ["127.0.0.1:9"], "controller": 100}
    same = {"views": {"metadata_before": view, "metadata_with_topic": view, "metadata_after": view}}
    direct = {"views": {name: {"brokers": [1], "addresses": ["127.0.0.1:7"], "controller": 1} for name in same["views"]}}
    assert normalised({"broker_list": same}, topic="matrix-unit", cluster_id=None, bootstrap="127.0.0.1:9") == normalised(
        {"broker_list": direct}, topic="matrix-unit", cluster_id=None, bootstrap="127.0.0.1:7"
    )
    split = {"views": {**same["views"], "metadata_before": {**view, "brokers": [100]}}}
    assert normalised({"broker_list": split}, topic="matrix-unit", cluster_id=None)["broker_list"]["same_brokers_in_every_view"] is False
    outside = {"views": {name: {**view, "controller": 2} for name in same["views"]}}
    assert normalised({"broker_list": outside}, topic="matrix-unit", cluster_id=None)["broker_list"]["controller_is_listed"] is False
    elsewhere = {"views": {name: {**view, "addresses": ["127.0.0.1:9", "127.0.0.1:8"]} for name in same["views"]}}
    assert normalised({"broker_list": elsewhere}, topic="matrix-unit", cluster_id=None, bootstrap="127.0.0.1:9")["broker_list"]["addresses"] == [
        "127.0.0.1:8",
        "<bootstrap>",
    ]
    answered = {"error": None, "has_configs": True, "min.insync.replicas": "1"}
    refused = {"error": "INVALID_REQUEST"}
    seen = normalised({"broker_configs": {"by_id": {"1": answered, "100": refused}}}, topic="matrix-unit", cluster_id=None)
    assert seen["broker_configs"]["every_listed_broker"] == sorted([answered, refused], key=lambda a: json.dumps(a, sort_keys=True))
    assert normalised({"broker_configs": {"by_id": {"1": answered, "100": answered}}}, topic="matrix-unit", cluster_id=None) == normalised(
        {"broker_configs": {"by_id": {"1": answered}}}, topic="matrix-unit", cluster_id=None
    )
