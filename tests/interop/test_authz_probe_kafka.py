"""`envelope-proxy authz probe` judged by Kafka 4.3.1 controllers running the plug-ins Kafka users run.

Three nodes, one per plug-in, each started once for the module: (a) StandardAuthorizer with the ACLs of
probe_acls.jsonl; (c) RecordingAuthorizer.java, compiled here against Kafka's jars, which is StandardAuthorizer
plus a record of each request context; (b) the Open Policy Agent plug-in 1.5.1 asking an OPA server built from
its Go module, with probe_policy.rego (the same policy in Rego). For each: every case of probe_cases.jsonl holds
(the file the embedded controller also passes), a real SASL/PLAIN client of the case's user sending the same
request from the same host gets the same decision, the plug-in saw the case's principal and host, and the
cluster's topics, configs and ACLs are what they were.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devkit.authorizer_plugins import compiled_plugin, node_lib_with, opa_plugin_jars, opa_server
from devkit.kafka_jars import ensure_kafka_jars, missing_tools
from devkit.kafka_node import KafkaNode
from devkit.processes import free_port, skip_or_fail, stop_process, wait_for_port
from devkit.tooling import ToolingMissing
from envelope.principal import Principal
from tests.interop.authz_probing import CASES, POLICY, cases, grant_policy, metadata, probe_config, real_client_decision, run_probe
from tests.interop.envelope_client import Controller, EnvelopeClient
from tests.interop.upstreams import ACL_PROPAGATION, poll

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent / "authorizers"
RECORDING_CLASS = "envelopeproxy.probe.RecordingAuthorizer"
OPA_CLASS = "org.openpolicyagent.kafka.OpaAuthorizer"
OPA_PATH = "/v1/data/kafka/authz/allow"
STARTUP_TIMEOUT = float(os.environ.get("KAFKA_NODE_STARTUP_TIMEOUT", "120"))
PLUGINS = ("standard", "recording-java", "opa")


def _kafka_lib() -> Path:
    if "java" in missing_tools():
        skip_or_fail("java not installed: a Kafka node needs Java 17+")
    try:
        return ensure_kafka_jars()
    except ToolingMissing as exc:
        skip_or_fail(str(exc))
        raise


def _plugin(build: Any, *args: Any) -> Any:
    try:
        return build(*args)
    except ToolingMissing as exc:
        skip_or_fail(str(exc))
        raise


class OpaServer:
    """`opa run --server` on a loopback port with the policy; its decision log (one JSON line each) on stderr."""

    def __init__(self, binary: Path, policy: Path, workdir: Path) -> None:
        self.port = free_port()
        self.log = workdir / "opa-decisions.log"
        command = [str(binary), "run", "--server", "--addr", f"127.0.0.1:{self.port}", "--set", "decision_logs.console=true", str(policy)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.log.open("w"))
        wait_for_port(self.port, self.process, log=self.log)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{OPA_PATH}"

    def decisions(self) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]
        return [line for line in lines if line.get("msg") == "Decision Log"]

    def stop(self) -> None:
        stop_process(self.process)


@pytest.fixture(scope="module")
def opa(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpaServer]:
    server = OpaServer(_plugin(opa_server), POLICY, tmp_path_factory.mktemp("opa"))
    yield server
    server.stop()


def _start(tmp_path_factory: pytest.TempPathFactory, name: str, lib: Path, extra: dict[str, str]) -> Iterator[KafkaNode]:
    with KafkaNode(workdir=tmp_path_factory.mktemp(name), lib_dir=lib, startup_timeout=STARTUP_TIMEOUT, extra_properties=extra) as node:
        yield node


@pytest.fixture(scope="module", params=PLUGINS)
def plugin_node(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, KafkaNode, Path | OpaServer | None]]:
    """(plug-in, node, what shows the plug-in's view: the recording's file or the OPA server), policy in force."""
    kind: str = request.param
    kafka_lib = _kafka_lib()
    if kind == "standard":
        for node in _start(tmp_path_factory, "probe-standard", kafka_lib, {}):
            _grant_and_wait(node)
            yield kind, node, None
    elif kind == "recording-java":
        jar = _plugin(compiled_plugin, "recording-authorizer", [HERE / "RecordingAuthorizer.java"], kafka_lib)
        lib = node_lib_with(kafka_lib, [jar], tmp_path_factory.mktemp("recording-lib"))
        record = tmp_path_factory.mktemp("recording") / "decisions.jsonl.log"
        for node in _start(tmp_path_factory, "probe-recording", lib, {"authorizer.class.name": RECORDING_CLASS, "recording.authorizer.log": str(record)}):
            _grant_and_wait(node)
            yield kind, node, record
    else:
        server: OpaServer = request.getfixturevalue("opa")
        lib = node_lib_with(kafka_lib, _plugin(opa_plugin_jars), tmp_path_factory.mktemp("opa-lib"))
        extra = {
            "authorizer.class.name": OPA_CLASS,
            "opa.authorizer.url": server.url,
            # every decision asked of OPA, so its decision log shows each probe (the plug-in caches for an hour by default)
            "opa.authorizer.cache.expire.after.seconds": "0",
        }
        for node in _start(tmp_path_factory, "probe-opa", lib, extra):
            yield kind, node, server


def _controller(node: KafkaNode) -> Controller:
    return Controller("kafka", node.controller_address, node.users["proxy"])


def _grant_and_wait(node: KafkaNode) -> None:
    controller = _controller(node)
    grant_policy(controller)
    client = EnvelopeClient(controller)
    topic = {"name": "team-a-propagated", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    alice = Principal("User", "alice")
    try:
        codes = poll(lambda: client.codes(alice, 19, 7, {"topics": [topic], "timeout": 30000, "validate_only": True}), lambda c: c == {0}, ACL_PROPAGATION)
    finally:
        client.close()
    assert codes == {0}, f"the ACLs did not reach the controller's authorizer: {codes}"


def test_every_case_holds_and_a_real_client_gets_the_same_decisions(plugin_node: tuple[str, KafkaNode, Any], tmp_path: Path) -> None:
    kind, node, _ = plugin_node
    before = metadata(node.broker_address, node.users["admin"])
    code, report = run_probe(probe_config(tmp_path, _controller(node)), CASES, tmp_path / "report.json")
    after = metadata(node.broker_address, node.users["admin"])
    assert [(row["case"], row["status"]) for row in report["cases"]] == [(row["case"], "HOLDS") for row in report["cases"]], json.dumps(report, indent=1)
    assert code == 0
    for case, row in zip(cases(), report["cases"], strict=True):
        if case.context.principal.token_authenticated:
            continue  # a real client is token-authenticated only with a token: the Envelope's flag stands in for it
        assert real_client_decision(node.broker_address, node.users[case.context.principal.name], case) == row["actual"], (kind, row["case"])
    assert after == before, f"{kind}: the probe changed the cluster"


def test_the_plug_in_saw_the_cases_principal_and_host_on_the_controllers_listener(plugin_node: tuple[str, KafkaNode, Any], tmp_path: Path) -> None:
    kind, node, view = plugin_node
    bob = [line for line in CASES.read_text().splitlines() if '"User:bob"' in line and '"team-a-orders"' in line and '"CREATE"' in line]
    only = tmp_path / "cases.ndjson"  # not .jsonl: the suite reads every *.jsonl below tmp_path as audit records
    only.write_text("\n".join(bob) + "\n")
    code, _ = run_probe(probe_config(tmp_path, _controller(node)), only, tmp_path / "report.json")
    assert code == 0
    if kind == "recording-java":
        seen = [json.loads(line) for line in Path(view).read_text().splitlines()]
        probes = [s for s in seen if s["clientId"] == "envelope-proxy-authz-probe" and s["principal"] == "User:bob"]
        assert probes, seen[-5:]
        # principal and address are the Envelope's; listener and protocol the Envelope connection's (the proxy's)
        assert {(s["listenerName"], s["securityProtocol"]) for s in probes} == {("CONTROLLER", "SASL_PLAINTEXT")}
        decided = {(s["clientAddress"], s["operation"], s["resourceType"], s["resourceName"], s["result"]) for s in probes}
        assert {("127.0.0.2", "CREATE", "TOPIC", "team-a-orders", "ALLOWED"), ("127.0.0.1", "CREATE", "TOPIC", "team-a-orders", "DENIED")} <= decided
    elif kind == "opa":
        bob = [d for d in view.decisions() if d["input"]["requestContext"]["principal"]["name"] == "bob"]
        seen = {
            (d["input"]["requestContext"]["clientAddress"], d["input"]["requestContext"]["listenerName"], d["input"]["requestContext"]["securityProtocol"],
             d["input"]["action"]["resourcePattern"]["resourceType"], d["result"])
            for d in bob
            if d["input"]["requestContext"]["header"]["name"]["clientId"] == "envelope-proxy-authz-probe"
        }
        assert {("/127.0.0.2", "CONTROLLER", "SASL_PLAINTEXT", "TOPIC", True), ("/127.0.0.1", "CONTROLLER", "SASL_PLAINTEXT", "TOPIC", False)} <= seen, bob[-3:]
    else:
        # StandardAuthorizer shows its view only in its denial log (kafka.authorizer.logger at INFO)
        denial = "Principal = User:bob is Denied operation = CREATE from host = 127.0.0.1 on resource = Topic:LITERAL:team-a-orders"
        log = poll(lambda: node.log_path.read_text(errors="replace"), lambda text: denial in text, ACL_PROPAGATION)
        assert denial in log


def test_delete_needs_allow_changes_and_then_deletes_for_real(plugin_node: tuple[str, KafkaNode, Any], tmp_path: Path) -> None:
    kind, node, _ = plugin_node
    if kind != "standard":
        pytest.skip("one plug-in is enough to show --allow-changes")
    client = EnvelopeClient(_controller(node))
    try:
        client.create_topic("team-a-doomed")
    finally:
        client.close()
    case = {"principal": "User:admin", "host": "127.0.0.1", "operation": "DELETE", "resourceType": "TOPIC", "resourceName": "team-a-doomed", "expect": "ALLOWED"}
    path = tmp_path / "delete.ndjson"
    path.write_text(json.dumps(case) + "\n")
    config = probe_config(tmp_path, _controller(node))
    code, report = run_probe(config, path, tmp_path / "refused.json")
    assert (code, report["cases"][0]["status"]) == (1, "REFUSED")
    assert "team-a-doomed" in metadata(node.broker_address, node.users["admin"])["topics"]
    code, report = run_probe(config, path, tmp_path / "deleted.json", "--allow-changes")
    assert (code, report["cases"][0]["status"]) == (0, "HOLDS")
    gone = poll(lambda: metadata(node.broker_address, node.users["admin"])["topics"], lambda topics: "team-a-doomed" not in topics, ACL_PROPAGATION)
    assert "team-a-doomed" not in gone


WORKLOAD: list[tuple[str, str, int, int, dict[str, Any]]] = [
    # (user, host, api key, version, request): admin work through the proxy, all of it dry
    *[
        ("alice", "127.0.0.1", 19, 7, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}], "timeout": 30000, "validate_only": True})
        for name in ("team-a-w1", "team-a-w1", "team-a-w2", "team-b-w")
    ],
    ("bob", "127.0.0.1", 19, 7, {"topics": [{"name": "team-a-w1", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}], "timeout": 30000, "validate_only": True}),
    ("alice", "127.0.0.1", 37, 3, {"topics": [{"name": "team-a-w1", "count": 1, "assignments": None}], "timeout": 30000, "validate_only": True}),
    ("alice", "127.0.0.1", 44, 1, {"resources": [{"resource_type": 2, "resource_name": "team-a-w1", "configs": []}], "validate_only": True}),
    ("bob", "127.0.0.1", 43, 2, {"election_type": 0, "topic_partitions": [], "timeout": 30000}),
]
ALICE_CREATE = {
    "resource_type_filter": 2, "resource_name_filter": "team-a-", "pattern_type_filter": 4, "principal_filter": "User:alice",
    "host_filter": "*", "operation": 5, "permission_type": 3,
}


def _record_workload(node: KafkaNode, workdir: Path) -> Path:
    """The workload sent by real SASL/PLAIN clients through a running proxy (`envelope-proxy run`); its audit folder."""
    from devkit import wire
    from devkit.processes import start_server, write_properties
    from envelope_proxy.embedded import proxy_properties

    port = free_port()
    audit = workdir / "workload-audit"
    props = proxy_properties(int(node.controller_address.rsplit(":", 1)[1]), audit) | node.proxy_upstream_properties()
    props["listeners"] = f"CLIENT://127.0.0.1:{port}"
    props["listener.security.protocol.map"] = "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    process = start_server(["run", "--config", str(write_properties(workdir / "workload.properties", props))], workdir / "proxy.log")
    try:
        wait_for_port(port, process, log=workdir / "proxy.log")
        for user, host, api, version, values in WORKLOAD:
            with wire.connect(f"127.0.0.1:{port}", source=host, timeout=30) as sock:
                assert wire.sasl_plain_login(sock, user, node.users[user]) == 0
                wire.call(sock, api, version, values)
    finally:
        assert stop_process(process) == 0
    return audit


def test_replay_shows_a_planted_policy_change_as_exactly_the_denials_it_causes(plugin_node: tuple[str, KafkaNode, Any], tmp_path: Path) -> None:
    kind, node, _ = plugin_node
    if kind != "standard":
        pytest.skip("the replay is shown against one plug-in")
    from envelope_proxy.cli import main

    audit = _record_workload(node, tmp_path)
    client = EnvelopeClient(_controller(node))
    admin = Principal("User", "admin")
    try:
        # the planted change: alice loses CREATE on the team-a- prefix
        deleted = client.call(admin, 31, 3, {"filters": [ALICE_CREATE]})
        assert [len(r.matching_acls) for r in deleted.filter_results] == [1]
        config = probe_config(tmp_path, _controller(node))
        code = main(["authz", "replay", "--config", str(config), "--audit", str(audit), "--since", "2000-01-01T00:00:00Z", "--report", str(tmp_path / "replay.json")])
    finally:
        grant_policy(_controller(node))  # the policy back for the tests after this one
        client.close()
    report = json.loads((tmp_path / "replay.json").read_text())
    changed = {(q["principal"], q["method"], q["resourceName"], q["outcome"]) for q in report["questions"] if q["outcome"] != "UNCHANGED"}
    assert changed == {("User:alice", "kafka.CreateTopics", "team-a-w1", "NEW DENIAL"), ("User:alice", "kafka.CreateTopics", "team-a-w2", "NEW DENIAL")}, report
    assert code == 1
    assert report["counts"]["UNCHANGED"] == len(report["questions"]) - 2
    new = next(q for q in report["questions"] if q["resourceName"] == "team-a-w1" and q["outcome"] == "NEW DENIAL")
    assert (new["production"], new["candidate"], new["requests"]) == ("ALLOWED", "DENIED", 2)
