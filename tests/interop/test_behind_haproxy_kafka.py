"""Behind a real HAProxy (`send-proxy` and `send-proxy-v2`), a real Kafka 4.x controller decides on the client's address.

The proxy's upstream is the session's Kafka node. An ACL on the node lets User:alice create topics with one prefix
only from 127.0.0.2. Clients enter HAProxy through doors that make it see them at 127.0.0.2 or 127.0.0.3 (Kafka clients
cannot choose their source address, see devkit/haproxy.py); HAProxy connects to the proxy from 127.0.0.1 and names
the client in the PROXY header. Each door has a proxy listener of its own, advertised as that door, so Metadata sends
the client back through the same door. confluent-kafka (through both header versions) and Kafka's own kafka-topics
tool are granted from 127.0.0.2 and refused with TOPIC_AUTHORIZATION_FAILED from 127.0.0.3: the controller sees the
address the Envelope carries, not the load balancer's. The proxy's audit names the client and, as `proxiedBy`, HAProxy.
"""

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from devkit.haproxy import Backend, Door, haproxy_binary, start_haproxy, stop_process
from devkit.kafka_jars import ensure_kafka_jars, kafka_jvm
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import plain_client_properties
from devkit.processes import free_port, skip_or_fail
from envelope_proxy.embedded import proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from proxy.net.sasl.login_modules import plain_jaas
from tests.audit_records import records_under
from tests.interop.test_conformance import unique
from tests.interop.upstreams import ACL_PROPAGATION, poll

pytestmark = pytest.mark.interop

TIMEOUT = 30
TOOL_TIMEOUT = 120
ALLOWED, OTHER, LOAD_BALANCER = "127.0.0.2", "127.0.0.3", "127.0.0.1"
TOPICS = "org.apache.kafka.tools.TopicCommand"
# proxy listener -> (PROXY protocol version, the source HAProxy sees the client at)
LISTENERS = {"V1ALLOWED": (1, ALLOWED), "V1OTHER": (1, OTHER), "V2ALLOWED": (2, ALLOWED), "V2OTHER": (2, OTHER)}


def _admin(address: str, node: KafkaNode, user: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({**node.client_config(user), "bootstrap.servers": address})


def _create(admin: Any, topic: str) -> str:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    try:
        for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT, request_timeout=TIMEOUT).values():
            future.result(timeout=TIMEOUT)
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "OK"


def _prefixed(admin: Any, prefix: str) -> list[str]:
    return sorted(topic for topic in admin.list_topics(timeout=TIMEOUT).topics if topic.startswith(prefix))


def _kafka_topics_create(lib: Path, workdir: Path, door: Door, config: Path, topic: str) -> "subprocess.Popen[str]":
    """`kafka-topics --create` (TopicCommand) through `door` with alice's command config, started."""
    command = [
        *kafka_jvm(lib, workdir, heap="256m"),
        TOPICS,
        "--bootstrap-server",
        door.address,
        "--command-config",
        str(config),
        "--create",
        "--topic",
        topic,
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    ]
    env = {**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir, env=env)


def _finished(process: "subprocess.Popen[str]") -> tuple[int, str]:
    try:
        out, _ = process.communicate(timeout=TOOL_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
        return -1, f"kafka-topics hung for {TOOL_TIMEOUT}s: {out[-3000:]}"
    return process.returncode, out


async def test_a_kafka_controller_behind_haproxy_decides_on_the_client_address(kafka_node: KafkaNode, nursery: Any, tmp_path: Path) -> None:
    if haproxy_binary() is None:
        skip_or_fail("haproxy is not installed (Debian package haproxy; `make tools` installs it)")
    from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    lib = ensure_kafka_jars()
    node = kafka_node
    prefix = unique("lb-kafka")
    backends = {
        name: Backend(name.lower(), free_port(), "send-proxy" if version == 1 else "send-proxy-v2")
        for name, (version, _) in LISTENERS.items()
    }
    doors = {name: Door(name.lower(), name.lower(), source) for name, (_, source) in LISTENERS.items()}
    users = plain_jaas(**{f"user_{name}": password for name, password in node.users.items()})
    audit = tmp_path / "audit"
    props = {
        **proxy_properties(0, audit, users=node.users),
        **node.proxy_upstream_properties(),
        "read.bootstrap.servers": node.broker_address,
        "listeners": ",".join(f"{name}://127.0.0.1:{backend.proxy_port}" for name, backend in backends.items()) + ",PLAIN://127.0.0.1:0",
        # each listener is advertised as its door: Metadata sends the client back through the same door
        "advertised.listeners": ",".join(f"{name}://{door.address}" for name, door in doors.items()),
        "listener.security.protocol.map": ",".join(f"{name}:SASL_PLAINTEXT" for name in LISTENERS)
        + ",PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        **{f"listener.name.{name.lower()}.plain.sasl.jaas.config": users for name in LISTENERS},
        **{f"listener.name.{name.lower()}.proxy.protocol.mode": f"v{version}" for name, (version, _) in LISTENERS.items()},
        "listener.name.plain.proxy.protocol.mode": "off",
        "proxy.protocol.trusted.cidrs": f"{LOAD_BALANCER}/32",
    }
    props.pop("listener.name.client.plain.sasl.jaas.config")
    await nursery.start(run_proxy, parse_proxy_config(props))
    haproxy = start_haproxy(tmp_path, list(backends.values()), list(doors.values()))
    alice_config = plain_client_properties(tmp_path / "alice.properties", "alice", node.users["alice"])
    direct = _admin(node.broker_address, node, "admin")
    grant = AclBinding(
        ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:alice", ALLOWED, AclOperation.CREATE, AclPermissionType.ALLOW
    )
    granted = AclBindingFilter(
        ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    topics = {name: f"{prefix}-{name.lower()}" for name in LISTENERS}
    java_topics = {"V2ALLOWED": f"{prefix}-java-allowed", "V1OTHER": f"{prefix}-java-other"}

    outputs: dict[str, str] = {}

    def workflow() -> dict[str, object]:
        seen: dict[str, object] = {"grant": [future.result(timeout=TIMEOUT) for future in direct.create_acls([grant]).values()]}
        # the first create waits until the controller applies the committed ACL to its decisions
        seen["V1ALLOWED"] = poll(
            lambda: _create(_admin(doors["V1ALLOWED"].address, node, "alice"), topics["V1ALLOWED"]),
            lambda outcome: outcome != "TOPIC_AUTHORIZATION_FAILED",
            ACL_PROPAGATION,
            0.25,
        )
        for name in ("V2ALLOWED", "V1OTHER", "V2OTHER"):
            seen[name] = _create(_admin(doors[name].address, node, "alice"), topics[name])
        # the two JVMs start side by side: the grant is in force already
        runs = {name: _kafka_topics_create(lib, tmp_path, doors[name], alice_config, topic) for name, topic in java_topics.items()}
        for name, run in runs.items():
            code, outputs[name] = _finished(run)
            seen[f"kafka-topics {name}"] = (
                code,
                f"Created topic {java_topics[name]}." in outputs[name],
                "TopicAuthorizationException" in outputs[name],
            )
        expected = sorted([topics["V1ALLOWED"], topics["V2ALLOWED"], java_topics["V2ALLOWED"]])
        seen["on the node"] = poll(lambda: _prefixed(direct, prefix), lambda made: made == expected, TIMEOUT)
        return seen

    try:
        seen = await trio.to_thread.run_sync(workflow)
    finally:
        stop_process(haproxy)

        def cleanup() -> dict[str, list[str]]:
            """Remove the grant and the topics made here; what the node still has of either."""
            direct.delete_acls([granted])[granted].result(timeout=TIMEOUT)
            made = _prefixed(direct, prefix)
            if made:
                for future in direct.delete_topics(made, operation_timeout=TIMEOUT).values():
                    future.result(timeout=TIMEOUT)
            # the broker learns the controller's changes a moment later
            return {
                "acls": poll(
                    lambda: [str(acl) for acl in direct.describe_acls(granted).result(timeout=TIMEOUT)], lambda acls: not acls, TIMEOUT
                ),
                "topics": poll(lambda: _prefixed(direct, prefix), lambda made: not made, TIMEOUT),
            }

        left = await trio.to_thread.run_sync(cleanup)

    assert seen == {
        "grant": [None],
        "V1ALLOWED": "OK",
        "V2ALLOWED": "OK",
        "V1OTHER": "TOPIC_AUTHORIZATION_FAILED",
        "V2OTHER": "TOPIC_AUTHORIZATION_FAILED",
        "kafka-topics V2ALLOWED": (0, True, False),
        "kafka-topics V1OTHER": (1, False, True),
        "on the node": sorted([topics["V1ALLOWED"], topics["V2ALLOWED"], java_topics["V2ALLOWED"]]),
    }, outputs

    records = {
        (r["subject"], r["data"]["stage"]): r["data"] for r in records_under(audit) if r["data"]["methodName"] == "kafka.CreateTopics"
    }
    for name, (version, source) in LISTENERS.items():
        for topic in (topics[name], java_topics.get(name)):
            if topic is None:
                continue
            intent, outcome = records[(f"topic:{topic}", "intent")], records[(f"topic:{topic}", "outcome")]
            for record in (intent, outcome):
                assert record["requestMetadata"]["clientAddress"] == source, (topic, record)
                assert record["authenticationInfo"]["listener"] == name, (topic, record)
                proxied = record["requestMetadata"]["proxiedBy"]
                assert (proxied["address"], proxied["version"], proxied["command"]) == (LOAD_BALANCER, version, "PROXY"), (topic, proxied)
            errors = [(row["resource"], row["errorCode"]) for row in outcome["result"]["errors"]]
            if source == ALLOWED:
                assert (outcome["result"]["status"], errors) == ("SUCCESS", []), (topic, outcome["result"])
            else:
                assert (outcome["result"]["status"], errors) == ("FAILURE", [(topic, ErrorCode.topic_authorization_failed)]), (
                    topic,
                    outcome["result"],
                )
    assert left == {"acls": [], "topics": []}
