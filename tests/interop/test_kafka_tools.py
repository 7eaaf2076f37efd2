"""Kafka's own tools, a compiled Java AdminClient, confluent-kafka and kafka-python through the proxy, in front of a real node.

Every family creates, alters and deletes as admin and is denied as alice;
the real controller decides, so the proxy must forward the client's identity.
"""

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit.kafka_jars import ensure_kafka_jars, java_command
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import plain_client_properties
from envelope_proxy.embedded import DEFAULT_USERS, client_config
from tests.interop.test_conformance import TIMEOUT, admin_for, outcomes, unique
from tests.interop.upstreams import ACL_PROPAGATION, Target, kafka_target, poll

pytestmark = pytest.mark.interop
JAVA_SOURCE = Path(__file__).parent / "java" / "AdminProbe.java"
TOOL_TIMEOUT = 180.0
TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "kafka.admin.ConfigCommand"
ACLS = "org.apache.kafka.tools.AclCommand"


@pytest.fixture
async def target(kafka_node: KafkaNode, nursery: Any, tmp_path: Path) -> Target:
    return await kafka_target(nursery, kafka_node, tmp_path / "audit")


def _client_properties(directory: Path, user: str) -> Path:
    return plain_client_properties(directory / f"{user}.properties", user, DEFAULT_USERS[user])


def _classpath() -> str:
    return f"{ensure_kafka_jars()}/*"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"}
    return subprocess.run(args, capture_output=True, text=True, timeout=TOOL_TIMEOUT, cwd=cwd, env=env, check=False)


def _tool(main_class: str, target: Target, config: Path, *args: str) -> tuple[int, str]:
    """Exit code and all output of one Kafka command-line tool run."""
    done = _run(
        [
            *java_command(_classpath()),
            main_class,
            "--bootstrap-server",
            target.address,
            "--command-config",
            str(config),
            *args,
        ],
        config.parent,
    )
    return done.returncode, done.stdout + done.stderr


async def test_kafka_command_line_tools(target: Target, tmp_path: Path) -> None:
    admin, alice = _client_properties(tmp_path, "admin"), _client_properties(tmp_path, "alice")
    topic = unique("tools")

    def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        code, out = _tool(TOPICS, target, admin, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
        seen["create"] = (code, f"Created topic {topic}." in out)
        target.wait_for_partitions(topic, 1)
        code, out = _tool(
            TOPICS, target, alice, "--create", "--topic", unique("tools-alice"), "--partitions", "1", "--replication-factor", "1"
        )
        seen["alice create"] = (code, "TopicAuthorizationException" in out)
        code, out = _tool(TOPICS, target, admin, "--alter", "--topic", topic, "--partitions", "3")
        seen["alter partitions"] = code
        target.wait_for_partitions(topic, 3)
        code, out = _tool(TOPICS, target, admin, "--describe", "--topic", topic)
        seen["describe"] = (code, "PartitionCount: 3" in out)
        code, out = _tool(TOPICS, target, admin, "--list")
        seen["list"] = (code, topic in out.split())
        code, out = _tool(TOPICS, target, alice, "--list")
        seen["alice list"] = (code, topic in out.split())

        entity = ["--entity-type", "topics", "--entity-name", topic]
        code, out = _tool(CONFIGS, target, admin, "--alter", *entity, "--add-config", "retention.ms=3600000")
        seen["configs alter"] = (code, "Completed updating config" in out)
        target.wait_for_configs(topic, {"retention.ms": "3600000"})
        code, out = _tool(CONFIGS, target, admin, "--describe", *entity)
        seen["configs describe"] = (code, "retention.ms=3600000" in out)
        code, out = _tool(CONFIGS, target, alice, "--alter", *entity, "--add-config", "retention.ms=1")
        seen["alice configs alter"] = (code != 0, "Authorization" in out)

        acl = ["--allow-principal", "User:bob", "--operation", "Read", "--topic", topic]
        code, out = _tool(ACLS, target, admin, "--add", *acl)
        seen["acl add"] = (code, "User:bob" in out)
        code, out = _tool(ACLS, target, admin, "--list", "--topic", topic)
        seen["acl list"] = (code, "operation=READ" in out and "User:bob" in out)
        code, out = _tool(ACLS, target, alice, "--add", "--allow-principal", "User:alice", "--operation", "All", "--topic", topic)
        seen["alice acl add"] = (code != 0, "ClusterAuthorizationException" in out)
        code, out = _tool(ACLS, target, admin, "--remove", "--force", *acl)
        seen["acl remove"] = code

        code, out = _tool(TOPICS, target, admin, "--delete", "--topic", topic)
        seen["delete"] = code
        seen["gone"] = target.wait_for_partitions(topic, None)
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "create": (0, True),
        "alice create": (1, True),
        "alter partitions": 0,
        "describe": (0, True),
        "list": (0, True),
        "alice list": (0, False),
        "configs alter": (0, True),
        "configs describe": (0, True),
        "alice configs alter": (True, True),
        "acl add": (0, True),
        "acl list": (0, True),
        "alice acl add": (True, True),
        "acl remove": 0,
        "delete": 0,
        "gone": None,
    }


async def test_a_compiled_java_admin_client(target: Target, tmp_path: Path) -> None:
    if shutil.which("javac") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("javac not installed (required when CI=true)")
        pytest.skip("javac not installed: the Java AdminClient program cannot be compiled")
    classes = tmp_path / "classes"

    def work() -> tuple[str, str]:
        compiled = _run(["javac", "-cp", _classpath(), "-d", str(classes), str(JAVA_SOURCE)], tmp_path)
        assert compiled.returncode == 0, compiled.stderr
        runs = []
        for user in ("admin", "alice"):
            done = _run(
                [
                    *java_command(f"{_classpath()}:{classes}"),
                    "AdminProbe",
                    target.address,
                    user,
                    DEFAULT_USERS[user],
                    unique("java"),
                ],
                tmp_path,
            )
            assert done.returncode == 0, done.stderr[-2000:]
            runs.append(done.stdout)
        return runs[0], runs[1]

    admin_run, alice_run = await trio.to_thread.run_sync(work)
    assert admin_run.split("\n")[:6] == ["create OK", "partitions OK", "alter OK", "acl OK", "unacl OK", "delete OK"]
    assert alice_run.split("\n")[:6] == [
        "create TopicAuthorizationException",
        "partitions TopicAuthorizationException",
        "alter TopicAuthorizationException",
        "acl ClusterAuthorizationException",
        "unacl ClusterAuthorizationException",
        "delete TopicAuthorizationException",
    ]


async def test_kafka_python_and_confluent_kafka(target: Target) -> None:
    from kafka.admin import ConfigResource as KpConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    from kafka.errors import TopicAuthorizationFailedError

    topic, alice_topic = unique("kpy"), unique("kpy-alice")

    def kafka_python(user: str) -> KafkaAdminClient:
        return KafkaAdminClient(
            bootstrap_servers=target.address,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=user,
            sasl_plain_password=DEFAULT_USERS[user],
            request_timeout_ms=int(TIMEOUT * 1000),
        )

    def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        admin = kafka_python("admin")
        try:
            # kafka-python raises on any error (raise_errors=True), so reaching the next line is success
            admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
            seen["kafka-python create"] = target.wait_for_partitions(topic, 1)
            admin.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "5000"})])
            seen["kafka-python after alter"] = target.wait_for_configs(topic, {"retention.ms": "5000"})
            admin.delete_topics([topic])
            seen["kafka-python delete"] = target.wait_for_partitions(topic, None)
        finally:
            admin.close()
        alice = kafka_python("alice")
        try:
            alice.create_topics({alice_topic: {"num_partitions": 1, "replication_factor": 1}})
            seen["kafka-python alice"] = "created"
        except TopicAuthorizationFailedError:
            seen["kafka-python alice"] = "denied"
        finally:
            alice.close()
        from confluent_kafka.admin import NewTopic

        confluent = admin_for(target, "admin")
        seen["confluent create"] = outcomes(confluent.create_topics([NewTopic(topic, 1, 1)]))
        seen["confluent delete"] = outcomes(confluent.delete_topics([topic]))
        alice_client = admin_for(target, "alice")  # keep the handle alive until its futures resolve
        seen["confluent alice"] = outcomes(alice_client.create_topics([NewTopic(alice_topic, 1, 1)]))
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "kafka-python create": 1,
        "kafka-python after alter": {"retention.ms": "5000"},
        "kafka-python delete": None,
        "kafka-python alice": "denied",
        "confluent create": ["OK"],
        "confluent delete": ["OK"],
        "confluent alice": ["TOPIC_AUTHORIZATION_FAILED"],
    }


async def test_read_tools_work_with_describe_rights_and_are_denied_without(target: Target, tmp_path: Path) -> None:
    """kafka-topics --list/--describe, kafka-configs --describe, kafka-acls --list and the users' describe, for bob
    (granted DESCRIBE rights only, through the proxy) and for alice (no rights)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    alice, bob = (_client_properties(tmp_path, user) for user in ("alice", "bob"))
    topic = unique("tools-read")
    grants = [
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.ALLOW),
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        AclBinding(
            ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.ALLOW
        ),
    ]

    def work() -> dict[str, Any]:
        proxy_admin: Any = AdminClient(client_config(target.address, "admin"))
        for future in proxy_admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result(timeout=TOOL_TIMEOUT)
        for future in proxy_admin.create_acls(grants).values():
            future.result(timeout=TOOL_TIMEOUT)
        bob_client: Any = AdminClient(client_config(target.address, "bob"))
        poll(lambda: topic in bob_client.list_topics(timeout=30).topics, bool, ACL_PROPAGATION + 30)
        seen: dict[str, Any] = {}
        for user, config in (("bob", bob), ("alice", alice)):
            code, out = _tool(TOPICS, target, config, "--list")
            seen[f"{user} topics --list"] = (code, topic in out.split())
            code, out = _tool(TOPICS, target, config, "--describe", "--topic", topic)
            seen[f"{user} topics --describe"] = (code, "PartitionCount: 1" in out)
            code, out = _tool(CONFIGS, target, config, "--describe", "--entity-type", "topics", "--entity-name", topic)
            # The tool lists topics first; one the user may not DESCRIBE looks absent, as on a real broker.
            seen[f"{user} configs --describe"] = (code, f"Dynamic configs for topic {topic}" in out, "doesn't exist" in out)
            code, out = _tool(ACLS, target, config, "--list", "--topic", topic)
            seen[f"{user} acls --list"] = (code, "User:bob" in out, "ClusterAuthorizationException" in out)
            code, out = _tool(CONFIGS, target, config, "--describe", "--entity-type", "users")
            seen[f"{user} configs --describe users"] = (code, "Authorization" in out)
        filters = [
            AclBindingFilter(g.restype, g.name, g.resource_pattern_type, g.principal, g.host, g.operation, g.permission_type) for g in grants
        ]
        for future in proxy_admin.delete_acls(filters).values():
            future.result(timeout=TOOL_TIMEOUT)
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "bob topics --list": (0, True),
        "bob topics --describe": (0, True),
        "bob configs --describe": (0, True, False),
        "bob acls --list": (0, True, False),
        "bob configs --describe users": (0, False),
        "alice topics --list": (0, False),
        "alice topics --describe": (1, False),
        "alice configs --describe": (0, False, True),
        "alice acls --list": (1, False, True),
        "alice configs --describe users": (1, True),
    }
