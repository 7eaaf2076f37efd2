"""The workflow in Kafka's Java AdminClient, in Kafka's own CLI tool classes, and in kcat.

The two Java programs beside this file are compiled once per run against the Kafka jars. The CLI
tools run in one JVM per phase (ToolsRunner), each command's exit code and output kept; what the
matrix compares is that output with the topic's name taken out, line by line, as an operator reads it.
kcat does no admin work: it reads the cluster's metadata, which is what it is used for in admin
workflows (which brokers, which partitions, and what a user without ACLs is told).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devkit.kafka_jars import java_command
from devkit.kafka_node_config import plain_client_properties
from tests.interop.client_matrix.workflow import ACL_PRINCIPAL, ALTERED_CONFIG, PARTITIONS_AFTER, TOPIC_CONFIG, WorkflowSpec

HERE = Path(__file__).resolve().parent
JAVA_SOURCES = (HERE / "AdminWorkflow.java", HERE / "ToolsRunner.java")
RUN_TIMEOUT = 300.0
SETTLE_MS = "1500"
"""Before a read that follows a change: a Kafka broker learns the controller's changes a moment later."""
READ_RETRIES = 3

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "kafka.admin.ConfigCommand"
ACLS = "org.apache.kafka.tools.AclCommand"
CLUSTER = "org.apache.kafka.tools.ClusterTool"


class ClientFailed(AssertionError):
    """The client crashed, hung, or printed what the matrix cannot read; the message names it."""


def compile_programs(lib: Path, classes: Path) -> Path:
    classes.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["javac", "-nowarn", "-cp", f"{lib}/*", "-d", str(classes), *map(str, JAVA_SOURCES)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise ClientFailed(f"javac failed: {done.stderr[-3000:]}")
    return classes


def _java(lib: Path, classes: Path, main: str, *args: str, name: str) -> str:
    command = [*java_command(f"{lib}/*:{classes}"), main, *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ClientFailed(f"{name} hung for {RUN_TIMEOUT:.0f}s") from exc
    if done.returncode != 0:
        raise ClientFailed(f"{name} exited with {done.returncode}: {done.stderr[-3000:]}")
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise ClientFailed(f"{name} printed nothing: {done.stderr[-3000:]}")
    return lines[-1]


# --------------------------------------------------------------------------- Java AdminClient


def java_admin_workflow(spec: WorkflowSpec, lib: Path, classes: Path) -> dict[str, Any]:
    line = _java(
        lib, classes, "AdminWorkflow", spec.bootstrap, *spec.admin, *spec.outsider, spec.topic, ",".join(spec.steps), name="the Java AdminClient"
    )
    result: dict[str, Any] = json.loads(line)
    return result


# --------------------------------------------------------------------------- Kafka's CLI tools


def _client_properties(directory: Path, user: tuple[str, str]) -> Path:
    return plain_client_properties(directory / f"{user[0]}.properties", *user)


def _shown(text: str) -> list[str]:
    """What an operator reads: the lines, without log lines and stack frames, and with generated ids taken out."""
    lines = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("\tat ") or re.match(r"^\[?\d{4}-\d\d-\d\d", line):
            continue
        line = re.sub(r"TopicId: [A-Za-z0-9_-]{22}", "TopicId: <id>", line)
        line = re.sub(r"Leader: \d+\tReplicas: [\d,]+\tIsr: [\d,]+", "Leader: <n>\tReplicas: <n>\tIsr: <n>", line)
        # The proxy does not serve DescribeTopicPartitions (KIP-966), so the tools fall back to Metadata, which carries
        # no eligible leader replicas: they print N/A where Kafka prints the (empty) list. docs/clients.md says so.
        line = re.sub(r"(Elr|LastKnownElr): (N/A|[\d,]*)", r"\1: <elr>", line)
        lines.append(line.rstrip())
    return lines


def cli_tools_workflow(spec: WorkflowSpec, lib: Path, classes: Path, workdir: Path) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    admin = str(_client_properties(workdir, spec.admin))
    outsider = str(_client_properties(workdir, spec.outsider))
    server = ["--bootstrap-server", spec.bootstrap]
    topic = ["--topic", spec.topic]
    entity = ["--entity-type", "topics", "--entity-name", spec.topic]
    acl = ["--allow-principal", ACL_PRINCIPAL, "--operation", "Read", "--topic", spec.topic]
    settle = [["sleep", SETTLE_MS]]
    commands: dict[str, list[list[str]]] = {
        "create_topic": [
            [TOPICS, *server, "--command-config", admin, "--create", *topic, "--partitions", "1", "--replication-factor", "1",
             "--config", "=".join(TOPIC_CONFIG)]
        ],
        "describe_topic": [*settle, [TOPICS, *server, "--command-config", admin, "--describe", *topic]],
        "describe_configs": [[CONFIGS, *server, "--command-config", admin, "--describe", *entity]],
        "describe_configs_all": [[CONFIGS, *server, "--command-config", admin, "--describe", "--all", *entity]],
        "alter_config": [[CONFIGS, *server, "--command-config", admin, "--alter", *entity, "--add-config", "=".join(ALTERED_CONFIG)]],
        "read_back": [*settle, [CONFIGS, *server, "--command-config", admin, "--describe", *entity]],
        "add_partitions": [[TOPICS, *server, "--command-config", admin, "--alter", *topic, "--partitions", str(PARTITIONS_AFTER)]],
        "describe_partitions": [*settle, [TOPICS, *server, "--command-config", admin, "--describe", *topic]],
        "create_acl": [[ACLS, *server, "--command-config", admin, "--add", *acl]],
        "describe_acls": [*settle, [ACLS, *server, "--command-config", admin, "--list", "--topic", spec.topic]],
        "delete_acls": [[ACLS, *server, "--command-config", admin, "--remove", "--force", *acl]],
        "acls_after_delete": [*settle, [ACLS, *server, "--command-config", admin, "--list", "--topic", spec.topic]],
        "describe_cluster": [[CLUSTER, "cluster-id", *server, "--config", admin]],
        "refused": [
            [TOPICS, *server, "--command-config", outsider, "--create", "--topic", f"{spec.topic}-refused", "--partitions", "1",
             "--replication-factor", "1"]
        ],
        "delete_topic": [[TOPICS, *server, "--command-config", admin, "--delete", *topic]],
        "after_delete": [*settle, [TOPICS, *server, "--command-config", admin, "--describe", *topic]],
    }
    steps = [step for name in spec.steps for step in ([name, "describe_configs_all"] if name == "describe_configs" else [name])]
    # A read that follows a change may be run again (bounded) until it shows the change, as a person would.
    expected: dict[str, Callable[[list[str]], bool]] = {
        "describe_topic": lambda out: any("PartitionCount: 1" in line for line in out),
        "read_back": lambda out: any("=".join(ALTERED_CONFIG) in line for line in out),
        "describe_partitions": lambda out: any(f"PartitionCount: {PARTITIONS_AFTER}" in line for line in out),
        "describe_acls": lambda out: any(ACL_PRINCIPAL in line for line in out),
        "acls_after_delete": lambda out: not any(ACL_PRINCIPAL in line for line in out),
        "after_delete": lambda out: any("does not exist" in line for line in out),
    }

    def run(names: list[str]) -> dict[str, dict[str, Any]]:
        script = workdir / "commands.tsv"
        lines = [command for name in names for command in commands[name]]
        script.write_text("".join("\t".join(command) + "\n" for command in lines))
        reports = json.loads(_java(lib, classes, "ToolsRunner", str(script), name="Kafka's CLI tools"))
        ran = [name for name in names for command in commands[name] if command[0] != "sleep"]
        if len(reports) != len(ran):
            raise ClientFailed(f"Kafka's CLI tools ran {len(reports)} of {len(ran)} commands")
        return {
            name: {"exit": report["exit"], "out": _shown(report["out"]) or _shown(report["err"])[-3:]}
            for name, report in zip(ran, reports, strict=True)
        }

    results = run(steps)
    for name, done in expected.items():
        tries = 1
        while name in results and not done(results[name]["out"]) and tries < READ_RETRIES:
            time.sleep(float(SETTLE_MS) / 1000)
            results[name] = run([name])[name]
            tries += 1
    if "describe_cluster" in results:
        shown = results["describe_cluster"]["out"]
        found = [line.split(":", 1)[1].strip() for line in shown if line.startswith("Cluster ID:")]
        results["describe_cluster"]["cluster_id"] = found[0] if found else None
    return {name: results[name] for name in steps}


# --------------------------------------------------------------------------- kcat


def kcat_workflow(spec: WorkflowSpec, kcat: str) -> dict[str, Any]:
    """kcat's view, for the phases' metadata steps: the cluster, the topic's partitions, what a stranger is told."""

    def metadata(user: tuple[str, str], *topic: str) -> dict[str, Any]:
        args = [kcat, "-b", spec.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
                "-X", f"sasl.username={user[0]}", "-X", f"sasl.password={user[1]}", "-m", "30", "-L", "-J"]
        if topic:
            args += ["-t", topic[0]]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ClientFailed(f"kcat hung for {RUN_TIMEOUT:.0f}s") from exc
        if done.returncode != 0:
            raise ClientFailed(f"kcat exited with {done.returncode}: {done.stderr[-2000:]}")
        found: dict[str, Any] = json.loads(done.stdout)
        return found

    def topic_view(user: tuple[str, str]) -> dict[str, Any]:
        seen = metadata(user, spec.topic)
        (topic,) = [t for t in seen["topics"] if t["topic"] == spec.topic]
        return {"error": topic.get("error"), "partitions": len(topic.get("partitions", []))}

    results: dict[str, Any] = {}
    for step in spec.steps:
        if step in ("describe_topic", "describe_partitions", "after_delete"):
            wanted = {"describe_topic": 1, "describe_partitions": PARTITIONS_AFTER, "after_delete": 0}[step]
            deadline = time.monotonic() + 20
            view = topic_view(spec.admin)
            while view["partitions"] != wanted and time.monotonic() < deadline:
                time.sleep(0.25)
                view = topic_view(spec.admin)
            results[step] = view
        elif step == "describe_cluster":
            seen = metadata(spec.admin)
            brokers = [b["id"] for b in seen["brokers"]]
            results[step] = {"controller_is_a_broker": seen.get("controllerid") in brokers, "brokers_listed": bool(brokers)}
        elif step == "refused":
            results[step] = topic_view(spec.outsider)
    return results


__all__ = ["ClientFailed", "cli_tools_workflow", "compile_programs", "java_admin_workflow", "kcat_workflow"]
