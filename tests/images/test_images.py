"""The built images run as deploy/kubernetes/standalone.yaml and audit-cronjob.yaml run them (`make image-test`).

A controller container (the proxy image running the embedded reference controller, SASL_SSL) and a proxy container
side by side on the host network, a real Kafka client (confluent-kafka, SASL_SSL with SCRAM) from the host through the
proxy container, SIGTERM under load, then the audit image's Spark job over the audit volume.

What comes from the manifests: the proxy's configuration (ConfigMap and Secret, rendered by the init container's own
command inside the image), every volume mount path of the proxy and of the audit job, the user, the read-only root,
the dropped capabilities, the grace period, the probes' paths and the job's command. What the test changes: the
addresses (loopback, free ports: the host network is shared) and the controller's address (the embedded controller).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import javaproperties
import pytest

from devkit.processes import free_port
from envelope_proxy.dev_pki import DevPki, generate_dev_pki
from proxy.net.sasl.credentials import add_user
from proxy.properties import load_properties
from tests.audit_records import assert_valid, complete_lines, records_under
from tests.deploy.deploy_files import KUBERNETES, find, load_documents, pod_template
from tests.images.containers import (
    AUDIT_IMAGE,
    PROXY_IMAGE,
    Container,
    engine,
    health_status,
    http_status,
    inspect,
    require_images,
    run_detached,
    wait_until,
)

UID = 10001
POD = "envelope-proxy-images-0"
USERS = {"admin": "admin-scram-secret", "alice": "alice-scram-secret", "bob": "bob-scram-secret"}
CONTROLLER_DIR = "/etc/envelope-proxy-controller"
TIMEOUT = 30


# --------------------------------------------------------------------------- the manifests


def _standalone() -> list[dict[str, Any]]:
    return load_documents(KUBERNETES / "standalone.yaml")


def _proxy_pod() -> dict[str, Any]:
    template = pod_template(find(_standalone(), "Deployment", "envelope-proxy"))
    assert template is not None
    spec: dict[str, Any] = template["spec"]
    return spec


def _container(spec: dict[str, Any], name: str, init: bool = False) -> dict[str, Any]:
    (container,) = [c for c in spec["initContainers" if init else "containers"] if c["name"] == name]
    return container


def _audit_job() -> tuple[dict[str, Any], dict[str, Any]]:
    template = pod_template(find(load_documents(KUBERNETES / "audit-cronjob.yaml"), "CronJob", "envelope-proxy-audit"))
    assert template is not None
    spec = template["spec"]
    return spec, _container(spec, "audit")


def _size(limit: str) -> str:
    """A Kubernetes quantity (64Mi, 10Gi) as a tmpfs size."""
    match = re.fullmatch(r"(\d+)([KMG])i", limit)
    assert match, limit
    return f"{match.group(1)}{match.group(2).lower()}"


def _security_options(container: dict[str, Any], pod: dict[str, Any]) -> list[str]:
    """The pod's and container's securityContext as engine options: user, read-only root, no capabilities, no privilege gain."""
    context = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
    assert context["runAsUser"] == UID and context["runAsGroup"] == UID
    assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    return [
        "--user", f"{context['runAsUser']}:{context['runAsGroup']}", "--read-only", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", "--network", "host",
    ]  # fmt: skip


def _mounts(container: dict[str, Any], pod: dict[str, Any], sources: dict[str, Path]) -> list[str]:
    """The container's volumeMounts as engine options: each volume from `sources` (host folders), emptyDirs as tmpfs.

    Every mount of the manifest must be provided, and Secret and ConfigMap files get the volume's defaultMode with
    the pod's fsGroup, as the kubelet gives them."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    fs_group = pod["securityContext"].get("fsGroup")
    options: list[str] = []
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "emptyDir" in volume and volume["emptyDir"].get("medium") != "Memory" and mount["name"] not in sources:
            size = _size(volume["emptyDir"].get("sizeLimit", "64Mi"))
            options += ["--tmpfs", f"{mount['mountPath']}:rw,exec,nosuid,nodev,size={size},mode=1777"]
            continue
        assert mount["name"] in sources, f"the test provides no folder for volume {mount['name']} at {mount['mountPath']}"
        source = sources[mount["name"]]
        mode = (volume.get("secret") or volume.get("configMap") or {}).get("defaultMode")
        if mode is not None:
            for path in source.iterdir():
                os.chown(path, 0, fs_group)
                path.chmod(mode)
        readonly = ":ro" if mount.get("readOnly") else ""
        options += ["--volume", f"{source}:{mount['mountPath']}{readonly}"]
    # A mount inside another (tls/ inside /etc/envelope-proxy) needs its mount point in the outer folder: the
    # runtime cannot create it in a read-only bind mount (the kubelet creates it in the emptyDir).
    for outer in container["volumeMounts"]:
        for inner in container["volumeMounts"]:
            if inner["mountPath"].startswith(outer["mountPath"].rstrip("/") + "/") and outer["name"] in sources:
                (sources[outer["name"]] / inner["mountPath"][len(outer["mountPath"]) :].strip("/")).mkdir(parents=True, exist_ok=True)
    return options


# --------------------------------------------------------------------------- the set-up


def load_properties_text(text: str) -> dict[str, str]:
    loaded: dict[str, str] = javaproperties.loads(text)
    return loaded


@dataclass
class Stack:
    root: Path
    pki: DevPki
    client_port: int
    metrics_port: int
    controller_port: int
    audit_root: Path
    audit_dir: Path
    shutdown_ms: int
    grace_seconds: int
    controller: Container
    proxy: Container
    answered: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.metrics_port}{path}"

    def client(self, user: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": f"127.0.0.1:{self.client_port}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": USERS[user],
            "ssl.ca.location": str(self.pki.ca_cert),
            "log_level": 0,
        }


def _owned_dir(path: Path, mode: int = 0o750) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, UID, UID)
    path.chmod(mode)
    return path


def _override(template: str, values: dict[str, str | None]) -> str:
    """The ConfigMap's template with some keys replaced (None: removed); every key must be in the template."""
    lines = template.splitlines()
    for key, value in values.items():
        matches = [i for i, line in enumerate(lines) if line.startswith(f"{key}=")]
        assert len(matches) == 1, f"{key} is not set once in the manifest's proxy.properties"
        if value is None:
            del lines[matches[0]]
        else:
            lines[matches[0]] = f"{key}={value}"
    return "\n".join(lines) + "\n"


def _controller_properties(port: int, password: str, proxy_password: str) -> str:
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_proxy="{proxy_password}";'
    props = {
        "node.id": "1",
        "process.roles": "controller",
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": jaas,
        "listener.name.controller.ssl.keystore.type": "PKCS12",
        "listener.name.controller.ssl.keystore.location": f"{CONTROLLER_DIR}/tls/keystore.p12",
        "listener.name.controller.ssl.keystore.password": password,
        "listener.name.controller.ssl.key.password": password,
        # The reference controller trusts the proxy's principal as a super user (Kafka's would need ClusterAction ACLs).
        "super.users": "User:proxy;User:admin",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "metadata.log.dir": "/var/lib/envelope-proxy-controller",
    }
    return "".join(f"{key}={value}\n" for key, value in props.items())


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_images()
    if os.geteuid() != 0:
        pytest.skip("IMAGE TESTS NOT RUN: the volumes are chowned to uid 10001 as the kubelet's fsGroup would, which needs root")
    root = tmp_path_factory.mktemp("images")
    root.chmod(0o755)
    documents = _standalone()
    template = find(documents, "ConfigMap", "envelope-proxy-config")["data"]["proxy.properties"]
    fragment = find(documents, "Secret", "envelope-proxy-standalone-secrets")["stringData"]["proxy-secrets.properties"]
    secrets = load_properties_text(fragment)
    store_password = secrets["listener.name.client.ssl.keystore.password"]
    proxy_password = re.search(r'password="([^"]*)"', secrets["listener.name.controller.plain.sasl.jaas.config"])
    assert proxy_password

    # The Secrets of docs/deploy.md steps 3-5: key and trust stores (with the manifest's example password) and SCRAM users.
    pki = generate_dev_pki(root / "pki", hosts=["127.0.0.1", "localhost"], clients=[], password=store_password)
    tls = root / "secret-tls"
    tls.mkdir()
    (tls / "keystore.p12").write_bytes(pki.server_p12.read_bytes())
    (tls / "truststore.p12").write_bytes(pki.truststore_p12.read_bytes())
    scram = root / "secret-scram"
    scram.mkdir()
    for user, password in USERS.items():
        add_user(scram / "scram.json", user, password, ["SCRAM-SHA-256", "SCRAM-SHA-512"], iterations=4096)

    client_port, metrics_port, controller_port = free_port(), free_port(), free_port()
    raw = load_properties_text(template)
    templates = root / "configmap"
    templates.mkdir()
    (templates / "proxy.properties").write_text(
        _override(
            template,
            {
                "listeners": f"CLIENT://127.0.0.1:{client_port}",
                "advertised.listeners": f"CLIENT://127.0.0.1:{client_port}",
                "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
                "metrics.listen": f"127.0.0.1:{metrics_port}",
                "read.bootstrap.servers": None,  # the embedded controller serves the reads itself
            },
        )
    )
    secret_dir = root / "secret-proxy"
    secret_dir.mkdir()
    (secret_dir / "proxy-secrets.properties").write_text(fragment)
    rendered = _owned_dir(root / "rendered", 0o770)
    audit_root = _owned_dir(root / "audit-volume")
    audit_dir = _owned_dir(audit_root / POD)  # subPathExpr: $(POD_NAME)

    pod = _proxy_pod()
    # The init container's own command, in the proxy image, as the manifest runs it.
    init = _container(pod, "render", init=True)
    init_options = _mounts(init, pod, {"templates": templates, "secrets": secret_dir, "rendered": rendered})
    result = engine(
        "run", "--rm", *_security_options(init, pod), *init_options, "--entrypoint", init["command"][0], PROXY_IMAGE, *init["command"][1:]
    )
    assert result.returncode == 0
    assert load_properties(rendered / "proxy.properties")["listener.name.client.ssl.keystore.password"] == store_password

    controller_config = root / "controller-config"
    controller_config.mkdir()
    (controller_config / "controller.properties").write_text(_controller_properties(controller_port, store_password, proxy_password.group(1)))
    controller_tls = root / "controller-tls"
    controller_tls.mkdir()
    (controller_config / "tls").mkdir()  # its mount point inside the read-only configuration mount
    (controller_tls / "keystore.p12").write_bytes(pki.server_p12.read_bytes())
    for path in [controller_config / "controller.properties", *controller_tls.iterdir()]:
        os.chown(path, 0, UID)
        path.chmod(0o440)
    controller_data = _owned_dir(root / "controller-data")

    container = _container(pod, "envelope-proxy")
    controller = run_detached(
        "envelope-proxy-images-controller",
        [
            *_security_options(container, pod), "--tmpfs", "/tmp:rw,size=16m", "--no-healthcheck",
            "--volume", f"{controller_config}:{CONTROLLER_DIR}:ro", "--volume", f"{controller_tls}:{CONTROLLER_DIR}/tls:ro",
            "--volume", f"{controller_data}:/var/lib/envelope-proxy-controller", "--stop-timeout", "30",
            "--entrypoint", "envelope-proxy",
        ],
        PROXY_IMAGE,
        ["controller", "--config", f"{CONTROLLER_DIR}/controller.properties"],
    )  # fmt: skip
    grace = int(pod["terminationGracePeriodSeconds"])
    env = [f"{e['name']}={POD}" for e in container["env"] if e["name"] == "POD_NAME"]
    assert env, "the proxy container has POD_NAME (its audit subPathExpr)"
    proxy = run_detached(
        "envelope-proxy-images-proxy",
        [
            *_security_options(container, pod),
            *_mounts(container, pod, {"rendered": rendered, "tls": tls, "scram": scram, "audit": audit_dir}),
            "--env", env[0], "--env", f"ENVELOPE_PROXY_HEALTHZ=http://127.0.0.1:{metrics_port}/healthz",
            "--stop-timeout", str(grace),
        ],
        PROXY_IMAGE,
    )  # fmt: skip
    stack = Stack(
        root, pki, client_port, metrics_port, controller_port, audit_root, audit_dir, int(raw["shutdown.timeout.ms"]), grace, controller, proxy
    )
    try:
        wait_until(f"/readyz of the proxy container\n{proxy.logs()}", lambda: http_status(stack.url("/readyz")) == 200, 180)
        yield stack
    finally:
        for c in (proxy, controller):
            print(f"--- {c.name}\n{c.logs()[-4000:]}")
            c.remove()


# --------------------------------------------------------------------------- the tests


def test_the_proxy_runs_unprivileged_on_a_read_only_root(stack: Stack) -> None:
    image = json.loads(engine("image", "inspect", PROXY_IMAGE).stdout)[0]
    assert image["Config"]["User"] == f"{UID}:{UID}"
    assert image["Config"]["Entrypoint"] == ["envelope-proxy", "run", "--config", "/etc/envelope-proxy/proxy.properties"]
    # The HEALTHCHECK survived the build (podman keeps it only in the docker image format).
    healthcheck = image["Config"].get("Healthcheck") or image.get("Healthcheck") or {}  # docker, podman
    assert "ENVELOPE_PROXY_HEALTHZ" in " ".join(healthcheck.get("Test", [])), image["Config"]
    data = inspect(stack.proxy.name)
    assert data["Config"]["User"] == f"{UID}:{UID}"
    assert data["HostConfig"]["ReadonlyRootfs"] is True
    assert not data["HostConfig"].get("CapAdd")
    assert not data.get("EffectiveCaps"), data.get("EffectiveCaps")
    # What the process itself has: uid/gid 10001, no capabilities at all, no privilege gain, a root it cannot write.
    status = engine("exec", stack.proxy.name, "cat", "/proc/1/status").stdout
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["Uid"].split() == [str(UID)] * 4 and fields["Gid"].split() == [str(UID)] * 4
    for capabilities in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[capabilities], 16) == 0, f"{capabilities}: {fields[capabilities]}"
    assert fields["NoNewPrivs"].strip() == "1"
    for path in ("/opt/envelope-proxy/tamper", "/etc/envelope-proxy/tamper", "/var/lib/envelope-proxy/tamper"):
        refused = engine("exec", stack.proxy.name, "python", "-c", f"open({path!r}, 'w')", check=False)
        assert refused.returncode != 0 and "Read-only file system" in refused.stderr, (path, refused.stderr)
    assert engine("exec", stack.proxy.name, "python", "-c", "open('/tmp/scratch', 'w').write('x')").returncode == 0


def test_admin_work_through_the_proxy_container_is_audited_on_the_volume(stack: Stack) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    admin, alice, bob = (AdminClient(stack.client(user)) for user in ("admin", "alice", "bob"))
    grants = [
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.CREATE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "img-orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.ALTER_CONFIGS, AclPermissionType.ALLOW),
    ]
    for future in admin.create_acls(grants).values():
        future.result(timeout=TIMEOUT)
    for future in alice.create_topics([NewTopic("img-orders", 3, 1), NewTopic("img-scratch", 1, 1)]).values():
        future.result(timeout=TIMEOUT)
    retention = ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "img-orders", incremental_configs=[retention])
    for future in alice.incremental_alter_configs([resource]).values():
        future.result(timeout=TIMEOUT)
    for future in admin.delete_topics(["img-scratch"], operation_timeout=10).values():
        future.result(timeout=TIMEOUT)
    with pytest.raises(KafkaException) as refused:
        for future in bob.create_topics([NewTopic("img-bobs", 1, 1)]).values():
            future.result(timeout=TIMEOUT)
    assert refused.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    topics = admin.list_topics(timeout=TIMEOUT).topics
    assert len(topics["img-orders"].partitions) == 3 and "img-scratch" not in topics and "img-bobs" not in topics
    stack.answered += ["img-orders", "img-scratch", "img-bobs"]

    # The proxy's audit files are on the host's volume (still in .staging while the proxy runs).
    records = records_under(stack.audit_dir)
    assert_valid(records)
    stages = {(r["subject"], r["data"]["stage"], r["data"]["authenticationInfo"]["principal"]) for r in records}
    for subject, principal in (("topic:img-orders", "User:alice"), ("topic:img-scratch", "User:admin"), ("topic:img-bobs", "User:bob")):
        assert {(subject, "intent", principal), (subject, "outcome", principal)} <= stages, subject
    denied = [r for r in records if r["subject"] == "topic:img-bobs" and r["data"]["stage"] == "outcome"]
    assert denied and all([e["errorName"] for e in r["data"]["result"]["errors"]] == ["TOPIC_AUTHORIZATION_FAILED"] for r in denied)
    assert all(r["data"]["authenticationInfo"]["securityProtocol"] == "SASL_SSL" for r in records if "authenticationInfo" in r["data"])


def test_health_is_liveness_and_readiness_follows_the_controller(stack: Stack) -> None:
    """docs/metrics.md: /healthz answers 200 while the process runs, /readyz 503 while no controller is connected.
    The image's HEALTHCHECK probes /healthz, so the container stays healthy while the controller is gone."""
    assert engine("healthcheck", "run", stack.proxy.name).returncode == 0
    assert health_status(stack.proxy.name) == "healthy"
    engine("stop", "--time", "20", stack.controller.name, timeout=60)
    assert stack.controller.exit_code() == 0, stack.controller.logs()
    try:
        wait_until("/readyz turns 503 without the controller", lambda: http_status(stack.url("/readyz")) == 503, 60)
        assert http_status(stack.url("/healthz")) == 200
        assert engine("healthcheck", "run", stack.proxy.name).returncode == 0
        assert health_status(stack.proxy.name) == "healthy"
    finally:
        engine("start", stack.controller.name)
    wait_until("/readyz turns 200 with the controller back", lambda: http_status(stack.url("/readyz")) == 200, 180)


def _load(stack: Stack, index: int, stop: threading.Event, answered: list[str], unanswered: list[str]) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    client = AdminClient({**stack.client("admin"), "socket.timeout.ms": 10000})
    for i in range(5000):  # bounded; stops at `stop` long before
        if stop.is_set():
            return
        name = f"img-load-{index}-{i}"
        (future,) = client.create_topics([NewTopic(name, 1, 1)], request_timeout=10).values()
        try:
            future.result(timeout=20)
            answered.append(name)
        except KafkaException as exc:
            # A negative code is librdkafka's own (transport, timeout): no answer from the proxy.
            (answered if exc.args[0].code() >= 0 else unanswered).append(name)
        except Exception:
            unanswered.append(name)


def test_sigterm_drains_under_load_and_publishes_every_answered_request(stack: Stack) -> None:
    stop = threading.Event()
    answered: list[str] = []
    unanswered: list[str] = []
    threads = [threading.Thread(target=_load, args=(stack, i, stop, answered, unanswered), daemon=True) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        wait_until("load through the proxy", lambda: len(answered) >= 20, 60, 0.1)
        started = time.monotonic()
        engine("stop", "--time", str(stack.grace_seconds), stack.proxy.name, timeout=stack.grace_seconds + 30)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    logs = stack.proxy.logs()
    assert stack.proxy.exit_code() == 0, logs[-4000:]
    assert "received SIGTERM, draining" in logs
    # shutdown.timeout.ms bounds the drain; the engine would have killed it (exit 137) only after the grace period.
    assert elapsed < stack.shutdown_ms / 1000 + 5, f"stop took {elapsed:.1f} s"
    stack.answered += answered

    # Published (renamed out of .staging), complete, and every answered request has its intent and its outcome.
    assert not list((stack.audit_dir / ".staging").glob("*.jsonl")), "a staged audit file was left behind"
    published = sorted(stack.audit_dir.glob("*.jsonl"))
    assert published
    records = [json.loads(line) for path in published for line in complete_lines(path)]
    assert_valid(records)
    stages: dict[str, set[str]] = {}
    requests: dict[str, set[str]] = {}
    for record in records:
        stages.setdefault(record["subject"], set()).add(record["data"]["stage"])
        requests.setdefault(record["data"]["requestId"], set()).add(record["data"]["stage"])
    missing = [name for name in stack.answered if not {"intent", "outcome"} <= stages.get(f"topic:{name}", set())]
    assert not missing, f"answered but not audited with intent and outcome: {missing}"
    without_outcome = [rid for rid, seen in requests.items() if "intent" in seen and "outcome" not in seen]
    assert not without_outcome, f"intents without an outcome: {without_outcome}"
    print(f"drain: {len(answered)} answered under load, {len(unanswered)} refused or unanswered once stopping, stop took {elapsed:.1f} s")


def test_the_audit_image_reports_over_the_audit_volume(stack: Stack) -> None:
    assert not stack.proxy.running(), "runs after the proxy has drained"
    published = sorted(stack.audit_dir.glob("*.jsonl"))
    assert published, "the drain test publishes the audit files"
    lines = sum(len(complete_lines(path)) for path in published)
    pod, container = _audit_job()
    reports = _owned_dir(stack.root / "reports-volume")
    options = _mounts(container, pod, {"audit": stack.audit_root, "reports": reports})
    env = [f"--env={e['name']}={e['value']}" for e in container.get("env", [])]
    command = container["command"]
    result = engine(
        "run", "--rm", "--name", "envelope-proxy-images-audit", *_security_options(container, pod), *options, *env,
        "--entrypoint", command[0], AUDIT_IMAGE, *command[1:], timeout=900, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    # make image handed the java.nio local file system's jar in (spark_audit/local_fs.py): no fallback line.
    assert "local file system stays" not in result.stderr, result.stderr[-2000:]
    (day,) = [p for p in reports.iterdir() if p.is_dir()]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", day.name), day.name
    summary = json.loads((day / "summary.json").read_text())
    assert summary["records"] == lines
    assert summary["malformed"] == 0
    assert summary["intents_without_outcome"] == 0
    assert summary["denials"] >= 1  # bob's CreateTopics
    assert (day / "records").is_dir() and any((day / "records").rglob("*.parquet"))


def test_the_sidecar_render_script_runs_in_the_proxy_image(tmp_path: Path) -> None:
    """sidecar.yaml's init container runs render.sh (sh, sed, mv) in the proxy image, read-only, as uid 10001."""
    require_images()
    if os.geteuid() != 0:
        pytest.skip("IMAGE TESTS NOT RUN: the volumes are chowned to uid 10001 as the kubelet's fsGroup would, which needs root")
    tmp_path.chmod(0o755)
    documents = load_documents(KUBERNETES / "sidecar.yaml")
    template = pod_template(find(documents, "StatefulSet", "kafka-controller"))
    assert template is not None
    pod = template["spec"]
    render = _container(pod, "render", init=True)
    sources: dict[str, Path] = {}
    for volume, kind, name in (
        ("templates", "ConfigMap", "kafka-controller-config"),
        ("kafka-secrets", "Secret", "kafka-controller-secrets"),
        ("proxy-secrets", "Secret", "envelope-proxy-secrets"),
    ):
        folder = sources[volume] = tmp_path / volume
        folder.mkdir()
        doc = find(documents, kind, name)
        for key, text in (doc.get("data") or doc["stringData"]).items():
            (folder / key).write_text(text)
    sources["kafka-rendered"] = _owned_dir(tmp_path / "kafka-rendered", 0o770)
    sources["proxy-rendered"] = _owned_dir(tmp_path / "proxy-rendered", 0o770)
    cluster_id = find(documents, "ConfigMap", "kafka-cluster-id")["data"]["cluster.id"]
    pod_name = "kafka-controller-2"
    result = engine(
        "run", "--rm", *_security_options(render, pod), *_mounts(render, pod, sources),
        "--env", f"POD_NAME={pod_name}", "--env", f"KAFKA_CLUSTER_ID={cluster_id}",
        "--entrypoint", render["command"][0], PROXY_IMAGE, *render["command"][1:],
    )  # fmt: skip
    assert "wrote the configuration of kafka-controller-2" in result.stdout
    proxy = load_properties(sources["proxy-rendered"] / "proxy.properties")
    kafka = load_properties(sources["kafka-rendered"] / "controller.properties")
    assert (kafka["node.id"], proxy["node.id"], proxy["cluster.id"]) == ("2", "1002", cluster_id)
    assert 'username="proxy"' in proxy["listener.name.proxy.plain.sasl.jaas.config"]
    assert proxy["listener.name.client.ssl.keystore.location"] == "/etc/envelope-proxy/tls/keystore.p12"
