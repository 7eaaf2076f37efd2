"""`envelope-proxy demo`: the whole product on one laptop.

Embedded controller + proxy on loopback, a real Kafka client (confluent-kafka)
doing admin work as three users, then the Spark audit job over the records.
"""

import gc
import logging
import tempfile
from pathlib import Path
from typing import Any

import javaproperties
import trio

from envelope_proxy.embedded import EmbeddedStack, client_config, controller_properties, proxy_properties, start_stack

TIMEOUT = 30.0


def _admin_work(stack: EmbeddedStack) -> list[str]:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ConfigResource,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    def admin(user: str) -> Any:
        # librdkafka logs each connection its idle brokers drop; the demo's story is in its own lines.
        return AdminClient({**client_config(stack.sasl_address, user), "log_level": 0})

    lines = []
    grant = AclBinding(
        ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.CREATE, AclPermissionType.ALLOW
    )
    # An AdminClient handle must outlive its futures, so each user keeps one.
    root = admin("admin")
    for future in root.create_acls([grant]).values():
        future.result(timeout=TIMEOUT)
    lines.append("admin granted User:alice CREATE on the cluster")
    alice = admin("alice")
    for name, future in alice.create_topics([NewTopic("orders", 3, 1), NewTopic("payments", 1, 1)]).items():
        future.result(timeout=TIMEOUT)
        lines.append(f"alice created topic {name}")
    # alice may create but not alter configs of the topic yet: grant it, then alter.
    grant_alter = AclBinding(
        ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.ALTER_CONFIGS, AclPermissionType.ALLOW
    )
    for future in root.create_acls([grant_alter]).values():
        future.result(timeout=TIMEOUT)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders", set_config={"retention.ms": "86400000"})
    for future in alice.alter_configs([resource]).values():
        future.result(timeout=TIMEOUT)
    lines.append("alice set retention.ms=86400000 on orders")
    bob = admin("bob")
    for name, future in bob.create_topics([NewTopic("bobs-topic", 1, 1)]).items():
        try:
            future.result(timeout=TIMEOUT)
            lines.append(f"UNEXPECTED: bob created {name}")
        except KafkaException as exc:
            lines.append(f"bob was refused creating {name}: {exc.args[0].name()}")
    return lines


def _write_configs(workdir: Path, stack: EmbeddedStack) -> None:
    """The settings the two servers ran with, to read or to start them again by hand (port 0: any free port)."""
    for name, properties in (
        ("controller.properties", controller_properties()),
        ("proxy.properties", proxy_properties(stack.controller_port, workdir / "audit")),
    ):
        with open(workdir / name, "w", encoding="utf-8") as handle:
            javaproperties.dump(properties, handle, timestamp=False, comments=f"what envelope-proxy demo ran ({name})")


async def _run_stack(workdir: Path) -> list[str]:
    async with trio.open_nursery() as nursery:
        stack = await start_stack(nursery, workdir / "audit")
        _write_configs(workdir, stack)
        print(
            f"controller on 127.0.0.1:{stack.controller_port}, proxy on {stack.sasl_address} (SASL_PLAINTEXT) and {stack.plaintext_address} (PLAINTEXT)",
            flush=True,
        )
        lines = await trio.to_thread.run_sync(_admin_work, stack)
        gc.collect()  # the clients are closed before the proxy stops, so none reconnects to a closed port
        topics = sorted(stack.controller.image.topics)
        lines.append(f"controller now holds topics {topics}")
        for change in stack.controller.image.changes:
            lines.append(
                f"controller saw {change.api} by {change.principal} from {change.client_address} via {change.forwarded_by}: {change.resource} -> error {change.error_code}"
            )
        nursery.cancel_scope.cancel()
    return lines


def run_demo(workdir: Path | None, *, spark: bool = True) -> int:
    root = workdir or Path(tempfile.mkdtemp(prefix="envelope-proxy-demo-"))
    # The demo prints what happened; the servers' INFO lines (every connection) would bury it.
    for name in ("proxy", "controller", "authz"):
        logging.getLogger(name).setLevel(logging.WARNING)
    root.mkdir(parents=True, exist_ok=True)
    lines = trio.run(_run_stack, root)
    print("\n".join(lines), flush=True)
    if any(line.startswith("UNEXPECTED") for line in lines):
        return 1
    if not spark:
        return 0
    # pyspark is the optional [spark] extra: loaded only for the report.
    from spark_audit.job import run
    from spark_audit.options import JobOptions
    from spark_audit.text_report import short_summary

    # The full text report is long; the demo ends with a few lines and the page to open.
    summary = run(str(root / "audit"), str(root / "report"), options=JobOptions(input=str(root / "audit"), print_report=False))
    print(f"audit records in {root / 'audit'}, Parquet outputs and summary.json in {root / 'report'}")
    print("\n".join(short_summary(summary)))
    print(f"HTML report: {summary['outputs']['html']}")
    return 0
