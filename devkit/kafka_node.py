"""A scripted, throwaway Apache Kafka KRaft node (broker + controller) for interop tests and for users.

Nothing from Kafka is committed: `ensure_kafka_jars()` asks Maven to copy the
jars named by `devkit/kafka/pom.xml` (kafka_2.13, kafka-tools, a log4j2
binding) from Maven Central into a per-version cache folder, once.

`KafkaNode` writes a `server.properties` for a combined node with SASL_PLAINTEXT
BROKER and CONTROLLER listeners on free loopback ports, PLAIN users
admin/proxy/alice/bob, the StandardAuthorizer and User:proxy as a super user
(or, with `proxy_super_user=False`, an ACL granting it ClusterAction), delegation
tokens enabled (`delegation.token.secret.key`), formats
the storage with `kafka.tools.StorageTool format --standalone`, runs
`kafka.Kafka` and waits until a real client (confluent-kafka, SASL PLAIN as
admin) gets metadata listing the node.

    python -m devkit.kafka_node

starts one, prints how to point the proxy at it and runs until Ctrl-C.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from devkit.processes import free_port

__all__ = [
    "DEFAULT_USERS",
    "DELEGATION_TOKEN_SECRET",
    "KAFKA_VERSION",
    "POM",
    "KafkaNode",
    "KafkaNodeError",
    "KafkaToolingMissing",
    "ensure_kafka_jars",
    "kafka_lib_dir",
    "main",
    "missing_tools",
]

KAFKA_VERSION = os.environ.get("KAFKA_NODE_VERSION", "4.3.1")
"""Newest 4.x whose kafka_2.13 *and* kafka-tools artifacts are on Maven Central (4.4.0 lacks kafka-tools/kafka-tools-api)."""

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
DEFAULT_USERS: dict[str, str] = {"admin": "admin-secret", "proxy": "proxy-secret", "alice": "alice-secret", "bob": "bob-secret"}
DELEGATION_TOKEN_SECRET = "kafka-envelope-proxy-interop"
"""`delegation.token.secret.key` of every node: delegation tokens are enabled (KIP-48)."""
NODE_USER = "admin"
"""The principal the node itself uses on its BROKER and CONTROLLER listeners (a super user)."""

_MARKER = ".complete.json"
_MAVEN_TIMEOUT = 1800.0


class KafkaToolingMissing(RuntimeError):
    """java or mvn is not installed, so no real Kafka node can be built or run."""


class KafkaNodeError(RuntimeError):
    """The node could not be formatted, started or reached; the message carries the end of its log."""


# --------------------------------------------------------------------------- jars


def missing_tools() -> list[str]:
    """Names of the required executables (java, mvn) that are not available."""
    missing = []
    if _java() is None:
        missing.append("java")
    if shutil.which("mvn") is None:
        missing.append("mvn")
    return missing


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def _require_java() -> str:
    java = _java()
    if java is None:
        raise KafkaToolingMissing("java not found (set JAVA_HOME or put java on PATH): a Kafka 4.x node needs Java 17+")
    return java


def cache_root() -> Path:
    override = os.environ.get("KAFKA_ENVELOPE_PROXY_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-envelope-proxy"


def kafka_lib_dir(version: str = KAFKA_VERSION) -> Path:
    """Where the jars for `version` live: ~/.cache/kafka-envelope-proxy/kafka-<version>/lib."""
    return cache_root() / f"kafka-{version}" / "lib"


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def _is_complete(lib: Path, version: str) -> bool:
    try:
        marker = json.loads((lib / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("version") != version or marker.get("pom_sha256") != _pom_digest():
        return False
    jars = marker.get("jars")
    return isinstance(jars, list) and bool(jars) and all((lib / str(name)).is_file() for name in jars)


def ensure_kafka_jars(version: str = KAFKA_VERSION) -> Path:
    """Return a folder holding every jar a Kafka `version` node and its tools need, running Maven the first time.

    Idempotent and safe to call from concurrent processes: the copy goes to a
    scratch folder that is renamed into place under a file lock, and a marker
    (version, pom hash, jar names) decides whether the folder is complete.
    """
    lib = kafka_lib_dir(version)
    if _is_complete(lib, version):
        return lib
    _require_java()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaToolingMissing("mvn not found: Maven 3.8+ is needed once to fetch the Kafka jars from Maven Central")
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(lib, version):
            return lib
        scratch = Path(tempfile.mkdtemp(prefix="lib.partial-", dir=lib.parent))
        try:
            command = [
                mvn,
                "-q",
                "-B",
                "-Dstyle.color=never",
                "-f",
                str(POM),
                f"-Dkafka.version={version}",
                "dependency:copy-dependencies",
                f"-DoutputDirectory={scratch}",
            ]
            started = time.monotonic()
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=_MAVEN_TIMEOUT, check=False)
            except subprocess.TimeoutExpired as exc:
                raise KafkaNodeError(f"maven did not finish within {_MAVEN_TIMEOUT:.0f}s: {' '.join(command)}") from exc
            jars = sorted(path.name for path in scratch.glob("*.jar"))
            if result.returncode != 0 or not any(name.startswith(f"kafka_2.13-{version}") for name in jars):
                output = (result.stdout + result.stderr).strip()[-4000:]
                raise KafkaNodeError(
                    f"could not fetch Kafka {version} from Maven Central (mvn exit {result.returncode}):\n  {' '.join(command)}\n{output}"
                )
            marker = {"version": version, "pom_sha256": _pom_digest(), "jars": jars, "seconds": round(time.monotonic() - started, 1)}
            (scratch / _MARKER).write_text(json.dumps(marker, indent=1) + "\n")
            if lib.exists():
                shutil.rmtree(lib)
            scratch.rename(lib)
        finally:
            if scratch.exists():
                shutil.rmtree(scratch, ignore_errors=True)
    return lib


# --------------------------------------------------------------------------- node


def kafka_jvm(lib: Path, workdir: Path, *, heap: str = "384m", options: tuple[str, ...] = (), log4j: Path | None = None) -> list[str]:
    """The java command line every Kafka JVM here starts with (a node, the sidecar's controller, Kafka's tools): a
    small serial-GC heap, headless, logs under `workdir`, the jars of `lib`; a main class and its arguments follow."""
    logging = [f"-Dlog4j2.configurationFile={log4j}"] if log4j is not None else []
    return [
        _require_java(),
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        *options,
        "-Djava.awt.headless=true",
        *logging,
        f"-Dkafka.logs.dir={workdir}",
        "-cp",
        f"{lib}/*",
    ]


def _cluster_id() -> str:
    """A Kafka Uuid in its base64url form (what `kafka-storage random-uuid` prints); Kafka avoids a leading '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def _jaas(**options: str) -> str:
    rendered = " ".join(f'{key}="{value}"' for key, value in options.items())
    return f"{PLAIN_MODULE} required {rendered};"


def _render_properties(props: dict[str, str]) -> str:
    lines = []
    for key, value in props.items():
        if any(ch in value for ch in "\\\n\r") or any(ch in key for ch in " =:\\\n"):
            raise ValueError(f"property {key!r} needs escaping; keep keys and values simple")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


LOG4J2_PROPERTIES = """\
status = warn
name = kafka-envelope-proxy-interop
appender.out.type = Console
appender.out.name = OUT
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
# denials at INFO, grants at DEBUG
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


class KafkaNode:
    """One combined KRaft node (process.roles=broker,controller, node.id=1) on loopback; use as a context manager.

    >>> with KafkaNode() as node:                      # doctest: +SKIP
    ...     node.broker_address, node.controller_address, node.log_path
    """

    def __init__(
        self,
        *,
        proxy_super_user: bool = True,
        workdir: Path | None = None,
        version: str = KAFKA_VERSION,
        lib_dir: Path | None = None,
        users: dict[str, str] | None = None,
        heap: str = "512m",
        startup_timeout: float = 120.0,
        stop_timeout: float = 30.0,
        host: str = "127.0.0.1",
        node_id: int = 1,
        voters: str | None = None,
        ports: tuple[int, int] | None = None,
        cluster_id: str | None = None,
        extra_properties: dict[str, str] | None = None,
        jvm_options: tuple[str, ...] = (),
    ) -> None:
        """`voters` (`controller.quorum.voters`) makes this node one member of a static quorum: its storage is
        formatted for those voters instead of --standalone, and `ports` (broker, controller) must be the ones
        the voters name. `extra_properties` are added to (or override) server.properties; `jvm_options` go
        to the JVM after the heap."""
        self.extra_properties = dict(extra_properties or {})
        self.jvm_options = tuple(jvm_options)
        self.node_id = node_id
        self.voters = voters
        self._ports = ports
        self.proxy_super_user = proxy_super_user
        self.version = version
        self.users = dict(users or DEFAULT_USERS)
        for required in (NODE_USER, "proxy"):
            if required not in self.users:
                raise ValueError(f"users must include {required!r}")
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.host = host
        self._lib_dir = lib_dir
        self._own_workdir = workdir is None
        self._workdir = workdir
        self._process: subprocess.Popen[bytes] | None = None
        self._jvm: list[str] = []
        self._log_file: Any = None
        self._broker_port = 0
        self._controller_port = 0
        self.cluster_id = cluster_id or _cluster_id()

    # ---------------------------------------------------------------- addresses and paths

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            raise KafkaNodeError("the node has not been started")
        return self._workdir

    @property
    def broker_address(self) -> str:
        """host:port of the BROKER listener (SASL_PLAINTEXT, PLAIN)."""
        self._require_ports()
        return f"{self.host}:{self._broker_port}"

    @property
    def controller_address(self) -> str:
        """host:port of the CONTROLLER listener (SASL_PLAINTEXT, PLAIN): what the proxy connects to."""
        self._require_ports()
        return f"{self.host}:{self._controller_port}"

    @property
    def log_path(self) -> Path:
        """Everything the JVM wrote (log4j2 goes to stdout), storage formatting included."""
        return self.workdir / "kafka.log"

    @property
    def properties_path(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _require_ports(self) -> None:
        if not self._broker_port:
            raise KafkaNodeError("the node has not been started")

    # ---------------------------------------------------------------- configuration

    def server_properties(self) -> dict[str, str]:
        users = {f"user_{name}": password for name, password in self.users.items()}
        jaas = _jaas(username=NODE_USER, password=self.users[NODE_USER], **users)
        super_users = [f"User:{NODE_USER}"] + (["User:proxy"] if self.proxy_super_user else [])
        data = self.workdir / "data"
        broker = f"{self.host}:{self._broker_port}"
        controller = f"{self.host}:{self._controller_port}"
        return {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "listeners": f"BROKER://{broker},CONTROLLER://{controller}",
            "advertised.listeners": f"BROKER://{broker},CONTROLLER://{controller}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "BROKER",
            "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.broker.plain.sasl.jaas.config": jaas,
            "listener.name.controller.plain.sasl.jaas.config": jaas,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": ";".join(super_users),
            # --standalone (KIP-853 dynamic quorum) wants bootstrap servers; a static quorum names its voters
            **({"controller.quorum.voters": self.voters} if self.voters else {"controller.quorum.bootstrap.servers": controller}),
            "log.dirs": str(data),
            "metadata.log.dir": str(data),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            # delegation tokens on, as the differential suite compares them; nothing else changes with it
            "delegation.token.secret.key": DELEGATION_TOKEN_SECRET,
            **self.extra_properties,
        }

    def client_config(self, user: str = "admin", **extra: str) -> dict[str, str]:
        """confluent-kafka settings for `user` over SASL_PLAINTEXT/PLAIN to the BROKER listener."""
        return {
            "bootstrap.servers": self.broker_address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": self.users[user],
            **extra,
        }

    def proxy_upstream_properties(self) -> dict[str, str]:
        """The proxy settings that point it at this node's controller as User:proxy."""
        return {
            "controller.quorum.bootstrap.servers": self.controller_address,
            "controller.listener.names": "CONTROLLER",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": _jaas(username="proxy", password=self.users["proxy"]),
        }

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> KafkaNode:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        self.prepare()
        try:
            self.spawn()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def prepare(self) -> None:
        """Workdir, ports, server.properties and formatted storage: everything but the process."""
        if self._process is not None:
            raise KafkaNodeError("already started")
        lib = self._lib_dir or ensure_kafka_jars(self.version)
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="kafka-node-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self._ports is not None:
            self._broker_port, self._controller_port = self._ports
        else:
            self._broker_port = free_port(self.host)
            self._controller_port = free_port(self.host)
            while self._controller_port == self._broker_port:
                self._controller_port = free_port(self.host)
        self.properties_path.write_text(_render_properties(self.server_properties()))
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(LOG4J2_PROPERTIES)
        jvm = kafka_jvm(lib, self.workdir, heap=self.heap, options=tuple(self.jvm_options), log4j=log4j)
        self._log_file = open(self.log_path, "ab")  # closed in stop()
        self._jvm = jvm
        try:
            self._format(jvm)
        except BaseException:
            self.stop()
            raise

    def wait_ready(self) -> None:
        self._wait_ready()
        if not self.proxy_super_user:
            self.grant_cluster_action("User:proxy")

    def spawn(self) -> None:
        """Start the JVM without waiting: the members of a quorum must all run before any is ready."""
        self._process = subprocess.Popen(
            [*self._jvm, "kafka.Kafka", str(self.properties_path)],
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop the node in order
        )

    def kill(self) -> None:
        """SIGKILL the node, as a crash would: no controlled shutdown; storage, ports and log stay for restart()."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)

    def terminate(self) -> None:
        """SIGTERM the node (Kafka's controlled shutdown) and wait; storage, ports and log stay for restart()."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)

    def restart(self) -> None:
        """Run the killed or terminated node again on the same ports and storage, and wait until it is ready."""
        if self._process is not None or not self._jvm:
            raise KafkaNodeError("restart() needs a node that was started and then killed or terminated")
        assert self._log_file is not None
        self._log_file.write(b"$ restart: kafka.Kafka server.properties\n")
        self._log_file.flush()
        try:
            self.spawn()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _format(self, jvm: list[str]) -> None:
        quorum = [] if self.voters else ["--standalone"]
        command = [*jvm, "kafka.tools.StorageTool", "format", "-t", self.cluster_id, *quorum, "-c", str(self.properties_path)]
        assert self._log_file is not None
        self._log_file.write(f"$ {' '.join(command)}\n".encode())
        self._log_file.flush()
        try:
            code = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                timeout=120,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired as exc:
            raise KafkaNodeError(f"storage format timed out\n{self.log_tail()}") from exc
        if code != 0:
            raise KafkaNodeError(f"storage format failed (exit {code})\n{self.log_tail()}")
        self._log_file.write(b"$ kafka.Kafka server.properties\n")
        self._log_file.flush()

    def _wait_ready(self) -> None:
        """Poll until a SASL/PLAIN admin client gets metadata listing this node, the process dies, or the deadline passes."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + self.startup_timeout
        admin: Any = None
        last_error = "no TCP connection yet"
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                code = None if self._process is None else self._process.returncode
                raise KafkaNodeError(f"kafka exited with {code} before it was ready\n{self.log_tail()}")
            if admin is None:
                if not (_tcp_open(self.host, self._broker_port) and _tcp_open(self.host, self._controller_port)):
                    time.sleep(0.5)
                    continue
                admin = AdminClient(self.client_config(NODE_USER, **{"log_level": "3"}))
            try:
                metadata = admin.list_topics(timeout=min(5.0, max(0.5, deadline - time.monotonic())))
            except KafkaException as exc:
                last_error = str(exc)
                time.sleep(0.5)
                continue
            if self.node_id in metadata.brokers:
                return
            last_error = f"metadata lists brokers {sorted(metadata.brokers)}"
            time.sleep(0.5)
        raise KafkaNodeError(f"kafka was not ready within {self.startup_timeout:.0f}s ({last_error})\n{self.log_tail()}")

    def grant_cluster_action(self, principal: str) -> None:
        """As admin, allow `principal` ClusterAction on the cluster (what the controller checks for Envelope)."""
        from confluent_kafka.admin import (
            AclBinding,
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            AdminClient,
            ResourcePatternType,
            ResourceType,
        )

        admin = AdminClient(self.client_config(NODE_USER))
        binding = AclBinding(
            ResourceType.BROKER,
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation.CLUSTER_ACTION,
            AclPermissionType.ALLOW,
        )
        for future in admin.create_acls([binding], request_timeout=30).values():
            future.result()
        wanted = AclBindingFilter(
            ResourceType.BROKER,
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            principal,
            None,
            AclOperation.CLUSTER_ACTION,
            AclPermissionType.ALLOW,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if admin.describe_acls(wanted, request_timeout=10).result():
                return
            time.sleep(0.2)
        raise KafkaNodeError(f"the ClusterAction ACL for {principal} did not become visible\n{self.log_tail()}")

    def stop(self) -> None:
        """Terminate (SIGTERM: Kafka's controlled shutdown), kill after `stop_timeout`, remove what start() made; idempotent."""
        self.terminate()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._own_workdir and self._workdir is not None and not os.environ.get("KAFKA_NODE_KEEP"):
            shutil.rmtree(self._workdir, ignore_errors=True)

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return f"(no log at {self._workdir and self.log_path})"
        tail = "\n".join(text.splitlines()[-lines:])
        return f"--- last {lines} lines of {self.log_path} ---\n{tail}"


def _tcp_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------- command line


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _proxy_properties(node: KafkaNode, proxy_port: int) -> dict[str, str]:
    clients = {f"user_{name}": password for name, password in node.users.items() if name != "proxy"}
    return {
        "node.id": "100",
        "listeners": f"CLIENT://127.0.0.1:{proxy_port}",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": _jaas(**clients),
        **node.proxy_upstream_properties(),
        "audit.log.dir": str(node.workdir / "audit"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.kafka_node", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=KAFKA_VERSION, help="Kafka version from Maven Central (default %(default)s)")
    parser.add_argument(
        "--proxy-not-super-user", action="store_true", help="leave User:proxy out of super.users and grant it ClusterAction by ACL"
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep configs, data and kafka.log here (default: a temporary folder, removed on exit)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the node to be ready")
    args = parser.parse_args(argv)
    try:
        started = time.monotonic()
        print(f"fetching Kafka {args.version} jars (first run only) ...", flush=True)
        lib = ensure_kafka_jars(args.version)
        print(f"jars: {lib} ({time.monotonic() - started:.1f}s)", flush=True)
        node = KafkaNode(
            proxy_super_user=not args.proxy_not_super_user,
            workdir=args.workdir,
            version=args.version,
            lib_dir=lib,
            startup_timeout=args.timeout,
        )
        with _sigterm_as_interrupt(), node:
            proxy_file = node.workdir / "proxy.properties"
            proxy_file.write_text(_render_properties(_proxy_properties(node, free_port())))
            users = ", ".join(f"{name}/{password}" for name, password in node.users.items())
            upstream = "\n".join(f"  {key}={value}" for key, value in node.proxy_upstream_properties().items())
            print(
                f"\nKafka {node.version} KRaft node (broker+controller, node.id=1, cluster {node.cluster_id}) is ready"
                f" after {time.monotonic() - started:.1f}s\n"
                f"  BROKER listener     {node.broker_address}  (SASL_PLAINTEXT, PLAIN)\n"
                f"  CONTROLLER listener {node.controller_address}  (SASL_PLAINTEXT, PLAIN)\n"
                f"  users               {users}\n"
                f"  User:proxy          {'super user' if node.proxy_super_user else 'ClusterAction granted by ACL'}\n"
                f"  server.properties   {node.properties_path}\n"
                f"  log                 {node.log_path}\n"
                f"\nPoint the proxy at the controller with:\n{upstream}\n"
                f"\nA complete proxy configuration is in {proxy_file}:\n"
                f"  envelope-proxy run --config {proxy_file}\n"
                f"\nPress Ctrl-C to stop.",
                flush=True,
            )
            while node.running:
                time.sleep(1)
            print(f"kafka exited on its own\n{node.log_tail()}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("\nstopped", flush=True)
        return 0
    except (KafkaToolingMissing, KafkaNodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
