"""The sidecar's configuration (deploy/kubernetes/sidecar.yaml) against a real Apache Kafka KRaft controller.

What docs/deploy.md walks an operator through, on loopback: the init container's render.sh produces the
two files, Kafka formats its storage and starts as a controller-only node with the CONTROLLER and
PROXY listeners (SASL_SSL; bound and advertised on 127.0.0.1 here instead of the pod network and the
pod's name), the proxy logs in to PROXY, a SCRAM client's CreateAcls is refused until User:proxy holds
ClusterAction (granted with Kafka's own AclCommand --bootstrap-controller, as the guide shows), then
forwarded, answered and audited (and admin's, a super user on the controller as at the proxy, without any ACL),
and with the guide's Describe grant the proxy learns the active
controller from the controller (DescribeQuorum) at its PROXY endpoint. Only addresses, ports, file paths
and the discovery interval are changed; every other key is the manifest's. Marker `interop`: needs
Java 17+ (and Maven until the Kafka jars are cached); skipped without them, failed when CI=true.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import javaproperties
import pytest

from devkit.kafka_jars import ensure_kafka_jars, kafka_jvm, missing_tools
from devkit.processes import free_port, skip_or_fail, stop_process, wait_for_port
from devkit.tooling import ToolingMissing
from envelope_proxy.dev_pki import DevPki
from tests.deploy.deploy_files import dev_pki, localize, render_sidecar, scram_file, sidecar_cluster_id

pytestmark = pytest.mark.interop

CLUSTER_ID = sidecar_cluster_id()  # the manifest's: the storage is formatted with it and the proxy is told it


@pytest.fixture(scope="module")
def kafka_lib() -> Path:
    if "java" in missing_tools():
        skip_or_fail("java not installed: a real Kafka controller needs Java 17+")
    try:
        return ensure_kafka_jars()
    except ToolingMissing as exc:
        skip_or_fail(str(exc))
        raise


class Sidecar:
    """One rendered sidecar pod on loopback: Kafka's controller and the proxy."""

    def __init__(self, workdir: Path, lib: Path) -> None:
        self.workdir = workdir
        self.java = kafka_jvm(lib, workdir)
        self.pki: DevPki = dev_pki(workdir / "pki")
        kafka_raw, proxy_raw = render_sidecar(workdir / "render", "kafka-controller-0")
        scram = scram_file(workdir, {"alice": "alice-secret", "admin": "admin-secret"})
        self.controller_port, self.proxy_listener_port, self.client_port = free_port(), free_port(), free_port()

        kafka = localize(kafka_raw, self.pki, scram)
        assert kafka["listeners"] == "CONTROLLER://:9093,PROXY://:9095"
        assert kafka["advertised.listeners"].endswith("PROXY://kafka-controller-0.kafka-controller.kafka.svc.cluster.local:9095")
        kafka["listeners"] = kafka["advertised.listeners"] = (
            f"CONTROLLER://127.0.0.1:{self.controller_port},PROXY://127.0.0.1:{self.proxy_listener_port}"
        )
        kafka["controller.quorum.voters"] = f"0@127.0.0.1:{self.controller_port}"  # one voter instead of three
        kafka["log.dirs"] = kafka["metadata.log.dir"] = str(workdir / "data")
        self.kafka_properties = workdir / "controller.properties"
        self.kafka_properties.write_text(javaproperties.dumps(kafka, timestamp=False))

        proxy = localize(proxy_raw, self.pki, scram)
        # its own pod's PROXY listener first, then the whole quorum's
        assert proxy["controller.quorum.bootstrap.servers"].split(",")[:2] == [
            "kafka-controller-0.kafka-controller.kafka.svc.cluster.local:9095",
            "kafka-controller-0.kafka-controller.kafka.svc.cluster.local:9095",
        ]
        proxy["controller.quorum.bootstrap.servers"] = f"127.0.0.1:{self.proxy_listener_port}"
        assert proxy["controller.listener.names"] == "PROXY", "named as Kafka names it: DescribeQuorum lists endpoints by name"
        proxy["controller.discovery.interval.ms"] = "500"  # ask again soon after the grant, not in 30 s
        proxy["listeners"] = proxy["advertised.listeners"] = f"CLIENT://127.0.0.1:{self.client_port}"
        self.metrics_port = free_port()
        proxy["metrics.listen"] = f"127.0.0.1:{self.metrics_port}"
        proxy["audit.log.dir"] = str(workdir / "audit")
        del proxy["read.bootstrap.servers"]  # no broker here: the controller answers the proxy's reads
        self.proxy_properties = workdir / "proxy.properties"
        self.proxy_properties.write_text(javaproperties.dumps(proxy, timestamp=False))

        self.admin_properties = workdir / "kafka-admin.properties"
        self.admin_properties.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            + javaproperties.dumps(
                {
                    # User:kafka's login, as in the Secret kafka-controller-secrets
                    "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="kafka" password="change-me-kafka";',
                    "ssl.truststore.type": "PKCS12",
                    "ssl.truststore.location": str(self.pki.truststore_p12),
                    "ssl.truststore.password": self.pki.password,
                },
                timestamp=False,
            )
        )

    def kafka_tool(self, main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.java, main_class, *args], capture_output=True, text=True, timeout=180, check=False)

    def grant(self, principal: str, *operations: str) -> None:
        """kafka-acls.sh --bootstrap-controller ... --add --allow-principal P --operation O --cluster, as User:kafka."""
        args = ["--bootstrap-controller", f"127.0.0.1:{self.controller_port}", "--command-config", str(self.admin_properties)]
        args += ["--add", "--allow-principal", principal, "--cluster"]
        for operation in operations:
            args += ["--operation", operation]
        result = self.kafka_tool("org.apache.kafka.tools.AclCommand", *args)
        assert result.returncode == 0, result.stdout + result.stderr

    def admin_client(self, user: str, password: str) -> object:
        from confluent_kafka.admin import AdminClient

        return AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{self.client_port}",
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": user,
                "sasl.password": password,
                "ssl.ca.location": str(self.pki.truststore_pem),
            }
        )


@pytest.fixture
def sidecar(kafka_lib: Path, tmp_path: Path) -> Iterator[Sidecar]:
    pod = Sidecar(tmp_path, kafka_lib)
    kafka_log = tmp_path / "kafka.log"
    with open(kafka_log, "wb") as log:
        formatted = subprocess.run(
            [
                *pod.java,
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                CLUSTER_ID,
                "--config",
                str(pod.kafka_properties),
                "--ignore-formatted",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=180,
            check=False,
        )
    assert formatted.returncode == 0, kafka_log.read_text()[-4000:]
    with open(kafka_log, "ab") as log:  # the child keeps its own descriptor
        kafka = subprocess.Popen(
            [*pod.java, "kafka.Kafka", str(pod.kafka_properties)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_for_port(pod.proxy_listener_port, kafka, 120, kafka_log)
        yield pod
    finally:
        if kafka.poll() is None:
            os.killpg(kafka.pid, signal.SIGTERM)
        try:
            kafka.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(kafka.pid, signal.SIGKILL)
            kafka.wait(10)


def _create_acl(client: object, topic: str) -> str:
    """Forward one CreateAcls through the proxy; 'ok' or the Kafka error name."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    binding = AclBinding(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    try:
        client.create_acls([binding], request_timeout=30)[binding].result()  # type: ignore[attr-defined]
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "ok"


def test_sidecar_configuration_in_front_of_a_real_controller(sidecar: Sidecar) -> None:
    proxy_log = sidecar.workdir / "proxy.log"
    with open(proxy_log, "wb") as log:
        proxy = subprocess.Popen(
            [sys.executable, "-m", "envelope_proxy.cli", "run", "--config", str(sidecar.proxy_properties)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_for_port(sidecar.client_port, proxy, 60, proxy_log)
        alice = sidecar.admin_client("alice", "alice-secret")

        # Step 1 of the guide's ACLs not done yet: the controller refuses the proxy's Envelope.
        assert _create_acl(alice, "before-grant") == "CLUSTER_AUTHORIZATION_FAILED"
        assert "--operation ClusterAction --cluster" in proxy_log.read_text()

        sidecar.grant("User:proxy", "ClusterAction", "Describe")
        # With Describe, the controller names the leader (DescribeQuorum): node 0, at the PROXY listener
        # (the controller's voter entry names its CONTROLLER listener, where User:proxy cannot log in).
        found = f"active controller: 0@127.0.0.1:{sidecar.proxy_listener_port} "
        deadline = time.monotonic() + 30
        while found not in proxy_log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert found in proxy_log.read_text(), proxy_log.read_text()[-4000:]
        # The Envelope is accepted now, and the controller authorizes alice herself: she may not alter the cluster yet.
        assert _create_acl(alice, "before-alice") == "CLUSTER_AUTHORIZATION_FAILED"
        sidecar.grant("User:alice", "Alter")
        assert _create_acl(alice, "orders") == "ok"
        # admin holds no ACL: a super user on the controllers as at the proxy, it writes what it may read (issue 50)
        assert _create_acl(sidecar.admin_client("admin", "admin-secret"), "payments") == "ok"

        # What the probes (and Prometheus) of the manifest ask for.
        proxy_container = f"http://127.0.0.1:{sidecar.metrics_port}"
        with (
            urllib.request.urlopen(f"{proxy_container}/healthz", timeout=5) as healthz,
            urllib.request.urlopen(f"{proxy_container}/readyz", timeout=5) as readyz,
        ):
            assert (healthz.status, readyz.status) == (200, 200)
        with urllib.request.urlopen(f"{proxy_container}/metrics", timeout=5) as response:
            assert "envelope_proxy_upstream_connected 1.0" in response.read().decode()
    finally:
        assert stop_process(proxy, 60) == 0, proxy_log.read_text()[-4000:]

    records = [json.loads(line) for path in sorted((sidecar.workdir / "audit").glob("*.jsonl")) for line in path.read_text().splitlines()]
    outcomes = [
        (r["data"]["authenticationInfo"]["principal"], r["data"]["result"]["status"])
        for r in records
        if r["data"]["stage"] == "outcome" and r["data"]["methodName"] == "kafka.CreateAcls"
    ]
    assert outcomes == [("User:alice", "ERROR"), ("User:alice", "FAILURE"), ("User:alice", "SUCCESS"), ("User:admin", "SUCCESS")]
    assert {r["data"]["forwardingPrincipal"] for r in records if r["data"]["stage"] == "outcome"} == {"User:proxy"}
    assert (sidecar.workdir / "audit" / ".staging").is_dir() and not list((sidecar.workdir / "audit" / ".staging").glob("*.jsonl"))

    # The ACL went through the Envelope into the controller's metadata.
    listed = sidecar.kafka_tool(
        "org.apache.kafka.tools.AclCommand",
        "--bootstrap-controller",
        f"127.0.0.1:{sidecar.controller_port}",
        "--command-config",
        str(sidecar.admin_properties),
        "--list",
        "--topic",
        "orders",
    )
    assert listed.returncode == 0 and "principal=User:bob" in listed.stdout, listed.stdout + listed.stderr
