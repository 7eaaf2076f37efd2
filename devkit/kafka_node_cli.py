"""`python -m devkit.kafka_node`: start one Kafka node by hand, print how to point the proxy at it, run until Ctrl-C.

Writes a complete proxy configuration beside the node's server.properties so
that `envelope-proxy run --config` can be tried against a real Kafka
controller without the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from devkit.kafka_jars import KAFKA_VERSION, KafkaNodeError, ensure_kafka_jars
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import render_properties
from devkit.processes import free_port
from devkit.tooling import ToolingMissing
from proxy.net.sasl.login_modules import plain_jaas


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
        "listener.name.client.plain.sasl.jaas.config": plain_jaas(**clients),
        **node.proxy_upstream_properties(),
        "audit.log.dir": str(node.workdir / "audit"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.kafka_node", description="A scripted, throwaway Apache Kafka KRaft node (broker + controller) for interop tests and for users.")
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
            proxy_file.write_text(render_properties(_proxy_properties(node, free_port())))
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
    except (ToolingMissing, KafkaNodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
