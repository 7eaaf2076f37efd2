"""The servers of bench/forwarding and the rows measured against them.

Started once per run and measured in turn at each connection count: the zero-work upstream (the Go
loadgen in upstream mode), a real Kafka combined KRaft node (devkit/kafka_node.py), the proxy
in front of each (as `envelope-proxy run` processes), and a bare trio relay.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kio.schema.errors import ErrorCode
from processes import Processes, read_announcement

from devkit.kafka_node import KafkaNode
from devkit.processes import free_port, wait_for_port, write_properties
from proxy.net.sasl.login_modules import plain_jaas

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLIENT_USER, CLIENT_PASSWORD = "alice", "alice-secret"
START_TIMEOUT = 60.0
READY_TIMEOUT = 60.0
PROBE_SECONDS = "300ms"


@dataclass
class Row:
    """One line of the table: where the load generator sends, how, and which processes' CPU counts."""

    name: str
    what: str
    target: str
    loadgen_args: list[str]
    measured: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """role ("proxy", "kafka", "relay") -> its pids (several proxies share a port with socket.reuse.port), for CPU
    per request (summed over the pids) and peak RSS (the largest)."""


def proxy_properties(
    port: int, upstream: str, workdir: Path, durability: str, controller_connections: int | None, *, reuse_port: bool = False
) -> dict[str, str]:
    """The proxy with one SASL_PLAINTEXT/PLAIN client listener, logged in to `upstream` as User:proxy."""
    props = {
        "node.id": "100",
        "socket.reuse.port": str(reuse_port).lower(),
        "listeners": f"CLIENT://127.0.0.1:{port}",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": plain_jaas(**{f"user_{CLIENT_USER}": CLIENT_PASSWORD}),
        "controller.quorum.bootstrap.servers": upstream,
        "controller.listener.names": "CONTROLLER",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": plain_jaas(username="proxy", password="proxy-secret"),
        "audit.log.dir": str(workdir / "audit"),
        "audit.durability": durability,
    }
    if controller_connections is not None:
        props["controller.connections"] = str(controller_connections)
    return props


def _proxy_command() -> list[str]:
    script = Path(sys.executable).parent / "envelope-proxy"
    return [str(script)] if script.exists() else [sys.executable, "-m", "envelope_proxy.cli"]


def probe(loadgen: Path, target: str, extra: list[str], timeout: float = READY_TIMEOUT) -> None:
    """Until one short load-generator run through `target` gets answers without errors (the proxy has found its controller)."""
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        argv = [str(loadgen), "client", "--target", target, "--connections", "1", "--duration", PROBE_SECONDS, "--warmup", "0s", *extra]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
        except subprocess.TimeoutExpired:
            last = "the probe did not finish in 30 s"
            continue
        if done.returncode == 0:
            report = json.loads(done.stdout)
            if not report["errors"] and not report["connection_failures"]:
                return
            last = f"errors {report['errors']} failures {report['connection_failures']}"
        else:
            last = (done.stdout + done.stderr).decode(errors="replace").strip()[-500:]
        time.sleep(0.5)
    raise RuntimeError(f"{target} did not answer CreateTopics cleanly within {timeout:.0f}s: {last}")


def start_proxy(
    procs: Processes, name: str, upstream: str, durability: str, controller_connections: int | None, processes: int = 1
) -> tuple[str, tuple[int, ...]]:
    """`processes` proxies on one port (socket.reuse.port when more than one): one node.id, an audit folder each."""
    port = free_port()
    pids = []
    for index in range(processes):
        member = name if processes == 1 else f"{name}-{index + 1}"
        workdir = procs.workdir / member
        workdir.mkdir()
        props = proxy_properties(port, upstream, workdir, durability, controller_connections, reuse_port=processes > 1)
        config = write_properties(workdir / "proxy.properties", props)
        process = procs.start(member, [*_proxy_command(), "run", "--config", str(config)], cwd=ROOT)
        try:
            # A later member's port is already open (the first one's): its own start shows in its log instead.
            if index == 0:
                wait_for_port(port, process, START_TIMEOUT)
            else:
                _wait_for_log(procs, member, "listening on", process)
        except AssertionError as exc:
            raise RuntimeError(f"{member}: {exc}\n{procs.log_tail(member)}") from None
        print(f"bench-forwarding: {member} is pid {process.pid} (py-spy record -o profile.svg --pid {process.pid})", file=sys.stderr, flush=True)
        pids.append(process.pid)
    return f"127.0.0.1:{port}", tuple(pids)


def _wait_for_log(procs: Processes, name: str, text: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while text not in procs.log_tail(name, 200):
        if process.poll() is not None:
            raise AssertionError(f"exited with {process.returncode} before logging {text!r}")
        if time.monotonic() > deadline:
            raise AssertionError(f"did not log {text!r} within {START_TIMEOUT:.0f} s")
        time.sleep(0.1)


def start_announcing(procs: Processes, name: str, argv: list[str]) -> tuple[str, int]:
    process = procs.start(name, argv, announces=True, cwd=ROOT)
    try:
        announced = read_announcement(process, START_TIMEOUT)
    except (TimeoutError, RuntimeError) as exc:
        raise RuntimeError(f"{name}: {exc}\n{procs.log_tail(name)}") from None
    return str(announced["listening"]), process.pid


def grant_create(node: KafkaNode, principal: str) -> None:
    """As admin, allow `principal` CREATE on the cluster, so that its CreateTopics pass authorization (validate_only)."""
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    admin = AdminClient(node.client_config("admin", log_level="3"))  # errors only: librdkafka notices would mix with the progress lines
    binding = AclBinding(
        ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, principal, "*", AclOperation.CREATE, AclPermissionType.ALLOW
    )
    for future in admin.create_acls([binding], request_timeout=30).values():
        future.result()


def kafka_pid(node: KafkaNode) -> int:
    process = node._process  # the JVM; KafkaNode keeps its Popen private
    if process is None:
        raise RuntimeError("the Kafka node is not running")
    return process.pid


def client_login() -> list[str]:
    return ["--user", CLIENT_USER, "--password", CLIENT_PASSWORD]


def kafka_rows(procs: Processes, node: KafkaNode, loadgen: Path, controller_connections: int | None, processes: int = 1) -> list[Row]:
    """Rows a, b and c: direct Envelopes to the controller, the broker's own forwarding, the proxy in front of the controller;
    with `processes` over 1, c again with that many proxies sharing one port."""
    jvm = kafka_pid(node)
    grant_create(node, f"User:{CLIENT_USER}")
    proxy, proxy_pids = start_proxy(procs, "proxy-kafka-flush", node.controller_address, "flush", controller_connections)
    probe(loadgen, proxy, client_login())
    proxy_login = ["--user", "proxy", "--password", node.users["proxy"]]
    return [
        Row(
            "direct_envelopes_to_controller",
            "Envelopes (CreateTopics inside, principal User:alice, address 127.0.0.1) straight to the CONTROLLER listener,"
            " logged in as User:proxy (super user): the controller's own cost, no forwarder",
            node.controller_address,
            [*proxy_login, "--envelope", "--principal", f"User:{CLIENT_USER}"],
            {"kafka": (jvm,)},
        ),
        Row(
            "kafka_broker_forwarding",
            "CreateTopics as User:alice to the BROKER listener of the combined node; its broker part forwards each in an Envelope"
            " to the controller part over the CONTROLLER listener (loopback; one connection, one request in flight, as"
            " NodeToControllerChannelManager does); one JVM does both, so its CPU is broker plus controller",
            node.broker_address,
            client_login(),
            {"kafka": (jvm,)},
        ),
        Row(
            "proxy_to_kafka_flush",
            "CreateTopics as User:alice to the proxy (audit.durability=flush), which forwards in Envelopes to the CONTROLLER listener",
            proxy,
            client_login(),
            {"proxy": proxy_pids, "kafka": (jvm,)},
        ),
        *([scaled_out_row("proxy_processes_to_kafka_flush", "the CONTROLLER listener", procs, node.controller_address, loadgen, controller_connections, processes, (jvm,))] if processes > 1 else []),
    ]


def scaled_out_row(
    name: str, upstream_name: str, procs: Processes, upstream: str, loadgen: Path, controller_connections: int | None, processes: int, upstream_pids: tuple[int, ...]
) -> Row:
    """`processes` proxies on one port with socket.reuse.port (one per core): the kernel spreads the connections."""
    address, pids = start_proxy(procs, name.replace("_", "-"), upstream, "flush", controller_connections, processes)
    probe(loadgen, address, client_login())
    return Row(
        name,
        f"CreateTopics as User:alice to {processes} proxy processes sharing one port (socket.reuse.port=true, audit.durability=flush),"
        f" which forward in Envelopes to {upstream_name}; proxy CPU is summed over the processes",
        address,
        client_login(),
        {"proxy": pids, **({"kafka": upstream_pids} if upstream_pids else {})},
    )


def zero_work_rows(procs: Processes, loadgen: Path, controller_connections: int | None, relay: bool, processes: int = 1) -> list[Row]:
    """Rows d, e and f: the proxy (flush, fsync), the load generator and a bare trio relay against the zero-work upstream;
    with `processes` over 1, d (flush) again with that many proxies sharing one port."""
    zero, _ = start_announcing(procs, "zero-work-upstream", [str(loadgen), "upstream", "--listen", "127.0.0.1:0"])
    rows = []
    for durability in ("flush", "fsync"):
        name = f"proxy-zero-{durability}"
        proxy, pids = start_proxy(procs, name, zero, durability, controller_connections)
        probe(loadgen, proxy, client_login())
        rows.append(
            Row(
                name.replace("-", "_").replace("zero", "to_zero_work"),
                f"CreateTopics as User:alice to the proxy (audit.durability={durability}) in front of the zero-work upstream",
                proxy,
                client_login(),
                {"proxy": pids},
            )
        )
    rows.append(
        Row(
            "loadgen_to_zero_work",
            "Envelopes straight to the zero-work upstream: the load generator's and the upstream's own ceiling",
            zero,
            ["--user", "proxy", "--password", "any", "--envelope", "--principal", f"User:{CLIENT_USER}"],
        )
    )
    if processes > 1:
        rows.append(scaled_out_row("proxy_processes_to_zero_work_flush", "the zero-work upstream", procs, zero, loadgen, controller_connections, processes, ()))
    if relay:
        links = str(controller_connections or 4)
        address, pid = start_announcing(procs, "envelope-relay", [sys.executable, str(HERE / "envelope_relay.py"), "--upstream", zero, "--links", links])
        rows.append(
            Row(
                "envelope_relay_to_zero_work",
                "CreateTopics through bench/forwarding/envelope_relay.py: frames read, header peeked, the frame wrapped in an"
                " Envelope and sent over the proxy's pool (controller.connections links, one envelope in flight each), the"
                " answer unwrapped; ApiVersions and a PLAIN login answered, nothing audited, counted or authorized. The"
                " honest floor of a trio forwarder that works as the proxy works",
                address,
                client_login(),
                {"relay": (pid,)},
            )
        )
        address, pid = start_announcing(procs, "trio-relay", [sys.executable, str(HERE / "relay.py"), "--upstream", zero])
        rows.append(
            Row(
                "trio_relay_to_zero_work",
                "CreateTopics through a bare trio TCP relay (bench/forwarding/relay.py: bytes copied, nothing parsed) to the"
                " zero-work upstream, which answers CreateTopics itself: the floor of any trio forwarder",
                address,
                client_login(),
                {"relay": (pid,)},
            )
        )
    return rows


def error_names(errors: dict[str, int]) -> dict[str, int]:
    """The load generator's error keys ("29", "envelope:31", "topics:0") with kio's names for the codes."""
    named: dict[str, int] = {}
    for key, count in errors.items():
        prefix, _, code = key.rpartition(":")
        if prefix == "topics":  # a response with another number of topics than asked
            named[key] = count
            continue
        try:
            label = ErrorCode(int(code)).name
        except ValueError:
            label = code
        named[f"{prefix}:{label}" if prefix else label] = count
    return named


__all__ = ["Row", "client_login", "error_names", "kafka_rows", "probe", "proxy_properties", "start_announcing", "start_proxy", "zero_work_rows"]
