"""Running docs/deploy.md's host path as written against a real Apache Kafka 4.3.1 (issue 50): what the two
variants' tests (test_deploy_guide.py, as a process; test_deploy_guide_container.py, in the image) share. Each
variant is a file of its own, so that the suite's workers run them side by side.

The guide's own shell blocks, those marked `<!-- host-path -->` (tests/deploy/guide_blocks.py), run in the
guide's order by one bash on an empty directory, as a newcomer pastes them into one terminal: passwords and a
development PKI, SCRAM users, Kafka's node (broker and controller, one voter) formatted and started with Kafka's
jars, the proxy's ACLs granted at the controller, the proxy started (as a process; or in its image with
tools/container/engine), admin granting alice through the proxy, alice creating, configuring and describing her
topic, bob refused, the proxy and Kafka stopped, and the Spark audit job over what the proxy wrote.

Nothing of the commands is changed: only the variables the guide defines at its top (`WORKDIR`, `VENV`,
`KAFKA_LIB`, the ports, the container's name) are set, to a temporary directory, the test's own environment,
the cached Kafka jars and free loopback ports. Beside them the `java` launcher's own variable `JDK_JAVA_OPTIONS` puts
every JVM the guide starts (Kafka's node and tools, the Spark job's driver) on C1 alone, as the suite's other Kafka
JVMs are (devkit/kafka_jars.py `QUICK_COMPILER`): each lives for seconds, and a walkthrough took 49 to 52 CPU-s
against 62 to 65 with both compilers, run for run. It also maps the class archive of Kafka's jars where `make test`
made one (devkit/kafka_class_archive.py), in the JVMs whose class path is Kafka's jars; the others skip it silently.
Every wait in the guide is bounded, the whole run too, and every process it started is killed at the end. Marker `interop`: needs Java 17+ (and Maven until the Kafka
jars are cached) and curl; skipped without them, failed when CI=true.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devkit.kafka_jars import QUICK_COMPILER, class_archive_options, ensure_kafka_jars, missing_tools
from devkit.processes import free_port, skip_or_fail
from devkit.tooling import ToolingMissing
from tests.audit_records import assert_valid, records_under
from tests.deploy.deploy_files import ROOT
from tests.deploy.guide_blocks import host_path_script

GUIDE_TIMEOUT = 900.0  # the whole host path; about 3 minutes on a busy 2-core machine, most of it the Spark job
PORTS = ("CLIENT_PORT", "CONTROLLER_PORT", "BROKER_PORT", "PROXY_PORT", "METRICS_PORT")


@pytest.fixture(scope="module")
def kafka_lib() -> Path:
    if "java" in missing_tools():
        skip_or_fail("java not installed: the guide's Kafka node needs Java 17+")
    if shutil.which("curl") is None:
        skip_or_fail("curl not installed: the guide waits for the proxy's /readyz with it")
    if not (Path(sys.prefix) / "bin" / "envelope-proxy").is_file():
        # the guide's VENV is this test's environment: without envelope-proxy in it, the guide would pip-install into it
        skip_or_fail(f"no envelope-proxy in {sys.prefix}: run the tests from the environment `make test` makes")
    try:
        return ensure_kafka_jars()
    except ToolingMissing as exc:
        skip_or_fail(str(exc))
        raise


@dataclass
class GuideRun:
    workdir: Path
    output: str
    returncode: int

    def records(self) -> list[dict[str, Any]]:
        return records_under(self.workdir / "audit")


def _distinct_ports() -> dict[str, str]:
    ports: set[int] = set()
    while len(ports) < len(PORTS):
        ports.add(free_port())
    return dict(zip(PORTS, map(str, sorted(ports)), strict=True))


def _kill_leftovers(process: subprocess.Popen[bytes], workdir: Path) -> None:
    """The bash, and whatever the guide left running: its process group (nohup'd java and proxy), then the pid files."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid_file in ("proxy.pid", "kafka.pid"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((workdir / pid_file).read_text().strip()), signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(10)


@contextlib.contextmanager
def run_guide(variant: str, tmp_path: Path, kafka_lib: Path, **extra: str) -> Iterator[GuideRun]:
    workdir = tmp_path / "envelope-proxy-host"
    start = tmp_path / "terminal"  # an empty directory to start in; the guide's first block changes to WORKDIR
    start.mkdir()
    script = tmp_path / "guide.sh"
    script.write_text(host_path_script(variant))
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith(("KAFKA_", "PROXY_", "PYTEST_"))},
        "REPO": str(ROOT),
        "WORKDIR": str(workdir),
        "VENV": sys.prefix,  # the environment running this test has envelope-proxy (and PySpark): the guide skips pip
        "KAFKA_LIB": str(kafka_lib),
        # read by the java launcher, not by the guide: it prints a NOTE naming it on each JVM's stderr
        "JDK_JAVA_OPTIONS": " ".join([QUICK_COMPILER, *class_archive_options(kafka_lib)]),
        **_distinct_ports(),
        **extra,
    }
    log = tmp_path / "guide.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["bash", str(script)],
            cwd=start,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        try:
            process.wait(GUIDE_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the guide's host path did not finish within {GUIDE_TIMEOUT:.0f}s:\n{_tail(log, workdir)}")
        run = GuideRun(workdir, log.read_text(errors="replace"), process.returncode)
        print(f"host path ({variant}): exit {run.returncode} after {time.monotonic() - started:.0f}s")
        assert run.returncode == 0 and ">>> docs/deploy.md: host path done" in run.output, _tail(log, workdir)
        yield run
    finally:
        _kill_leftovers(process, workdir)


def _tail(log: Path, workdir: Path) -> str:
    parts = [f"--- {log.name}\n{log.read_text(errors='replace')[-6000:]}"]
    for name in ("proxy.log", "kafka.log"):
        if (workdir / name).exists():
            parts.append(f"--- {name}\n{(workdir / name).read_text(errors='replace')[-3000:]}")
    return "\n".join(parts)


def _outcomes(records: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(principal, method, status, authorization decision) of every forwarded change's outcome and every read."""
    return [
        (
            r["data"]["authenticationInfo"]["principal"],
            r["data"]["methodName"],
            r["data"]["result"]["status"],
            (r["data"].get("authorizationInfo") or {}).get("decision", ""),
        )
        for r in records
        if r["data"].get("stage") in ("outcome", "read")
    ]


def check_the_walkthrough(run: GuideRun) -> None:
    """What the guide says happens, from its own output, the proxy's audit records and the audit job's summary."""
    # alice's topic, its config, and the two describes she is allowed (reads the proxy authorizes and sends to the broker)
    assert re.search(r"Topic: orders\s+TopicId: \S+\s+PartitionCount: 3\s+ReplicationFactor: 1", run.output), run.output[-4000:]
    assert "retention.ms=604800000" in run.output
    assert run.output.count("refused, as expected") == 2, "bob's topic and bob's ACL are both refused"
    assert re.search(r"^envelope_proxy_upstream_connected 1\.0$", run.output, re.M)

    records = run.records()
    assert_valid(records)
    outcomes = _outcomes(records)
    seen = {(principal, method, status) for principal, method, status, _ in outcomes}
    for expected in (
        ("User:admin", "kafka.CreateAcls", "SUCCESS"),
        ("User:alice", "kafka.CreateTopics", "SUCCESS"),
        ("User:alice", "kafka.IncrementalAlterConfigs", "SUCCESS"),
        ("User:bob", "kafka.CreateTopics", "FAILURE"),  # the controller refuses it
    ):
        assert expected in seen, f"{expected} not among the outcomes {outcomes}"
    # AclCommand lists the ACLs first: the proxy's edge authorizer refuses bob that read, so no CreateAcls is sent
    assert any(o[:2] == ("User:bob", "kafka.DescribeAcls") and o[3] == "DENIED" for o in outcomes), outcomes
    assert not any(o[:2] == ("User:bob", "kafka.CreateAcls") for o in outcomes), outcomes
    assert {r["data"]["forwardingPrincipal"] for r in records if r["data"].get("forwardingPrincipal")} == {"User:proxy"}
    staging = run.workdir / "audit" / "proxy-0" / ".staging"
    assert not list(staging.glob("*.jsonl")), "a clean stop publishes the audit file"

    (day,) = (run.workdir / "report").iterdir()
    summary = json.loads((day / "summary.json").read_text())
    assert summary["records"] == len(records) and summary["malformed"] == 0 and summary["intents_without_outcome"] == 0
    assert summary["denials"] >= 3  # bob's two, and alice's ListPartitionReassignments (TopicCommand --describe)

    # the pod's files, rendered on the host from the guide's own fragments (no cluster)
    pod_proxy = (run.workdir / "pod-0" / "proxy" / "proxy.properties").read_text()
    assert "node.id=1000" in pod_proxy and f"cluster.id={(run.workdir / 'cluster.id').read_text().strip()}" in pod_proxy
    assert f'password="{(run.workdir / "proxy.password").read_text().strip()}"' in pod_proxy
