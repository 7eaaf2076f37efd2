"""A scripted, throwaway Apache Kafka KRaft node (broker + controller) for interop tests and for users: the process.

`KafkaNode` takes its jars from kafka_jars.py (Maven Central, cached once per
version), writes the `server.properties` kafka_node_config.py renders for a
combined node on free loopback ports, formats the storage with
`kafka.tools.StorageTool format --standalone` (or for a static quorum's
voters), runs `kafka.Kafka` and waits until a real client (confluent-kafka,
SASL PLAIN as admin) gets metadata listing the node; it kills, terminates and
restarts the process as the tests need.

    python -m devkit.kafka_node

starts one, prints how to point the proxy at it and runs until Ctrl-C (kafka_node_cli.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from devkit.kafka_jars import KAFKA_VERSION, KafkaNodeError, ensure_kafka_jars, kafka_jvm
from devkit.kafka_node_config import (
    DEFAULT_USERS,
    LOG4J2_PROPERTIES,
    NODE_USER,
    new_cluster_id,
    render_properties,
    server_properties,
)
from devkit.processes import free_port
from proxy.net.sasl.login_modules import plain_jaas


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
        quick_compiler: bool = True,
    ) -> None:
        """`voters` (`controller.quorum.voters`) makes this node one member of a static quorum: its storage is
        formatted for those voters instead of --standalone, and `ports` (broker, controller) must be the ones
        the voters name. `extra_properties` are added to (or override) server.properties; `jvm_options` go
        to the JVM after the heap. `quick_compiler`: C1 alone (devkit/kafka_jars.py `QUICK_COMPILER`), for a node
        that lives for a test; a benchmark's node, measured at its steady speed, passes False."""
        self.extra_properties = dict(extra_properties or {})
        self.jvm_options = tuple(jvm_options)
        self.quick_compiler = quick_compiler
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
        self.cluster_id = cluster_id or new_cluster_id()

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
        return server_properties(
            node_id=self.node_id,
            host=self.host,
            broker_port=self._broker_port,
            controller_port=self._controller_port,
            users=self.users,
            proxy_super_user=self.proxy_super_user,
            voters=self.voters,
            data=self.workdir / "data",
            extra_properties=self.extra_properties,
        )

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
            "listener.name.controller.plain.sasl.jaas.config": plain_jaas(username="proxy", password=self.users["proxy"]),
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
        self.properties_path.write_text(render_properties(self.server_properties()))
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(LOG4J2_PROPERTIES)
        jvm = kafka_jvm(lib, self.workdir, heap=self.heap, options=tuple(self.jvm_options), log4j=log4j, quick=self.quick_compiler)
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


if __name__ == "__main__":
    # The command line lives in kafka_node_cli.py; `python -m devkit.kafka_node` stays the way to run it.
    import sys

    from devkit.kafka_node_cli import main

    sys.exit(main())
