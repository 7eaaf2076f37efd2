"""The client address inside the Envelope is what host-based ACLs see, on both upstreams.

The clients bind their sockets to chosen loopback sources (127.0.0.7, 127.0.0.1,
::1); the proxy forwards each one's address, and an ACL limited to one host
lets exactly that host through.
"""

import socket
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS
from proxy.net.sasl.login_modules import plain_jaas
from tests.interop.test_conformance import TIMEOUT, admin_for, outcome, unique
from tests.interop.upstreams import ACL_PROPAGATION, Target, embedded_target, kafka_target, poll

# A second client listener on ::1 so IPv6 clients exist at all.
IPV6_LISTENER = {
    "listeners": "CLIENT://127.0.0.1:0,CLIENT6://[::1]:0,PLAIN://127.0.0.1:0",
    "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CLIENT6:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
    "listener.name.client6.plain.sasl.jaas.config": plain_jaas(**{f"user_{name}": password for name, password in DEFAULT_USERS.items()}),
}
# Kafka compares an ACL's host with Java's InetAddress.getHostAddress(), which spells ::1 in full.
JAVA_IPV6_LOOPBACK = "0:0:0:0:0:0:0:1"


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.interop)])
async def target(request: pytest.FixtureRequest, nursery: Any, tmp_path: Path) -> Target:
    if not _ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    if request.param == "embedded":
        return await embedded_target(nursery, tmp_path / "audit", IPV6_LISTENER)
    return await kafka_target(nursery, request.getfixturevalue("kafka_node"), tmp_path / "audit", IPV6_LISTENER)


def create_as_alice(address: str, source: str, topic: str) -> int:
    """CreateTopics v5 as alice from the given source address; the topic's error code."""
    with wire.connect(address, source=source) as sock:
        assert wire.sasl_plain_login(sock, "alice", DEFAULT_USERS["alice"]) == 0
        body = {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}]}
        created = wire.call(sock, ApiKey.CREATE_TOPICS, 5, {**body, "timeout": 5000, "validate_only": False}, 3)
        return int(created.topics[0].error_code)


async def test_a_host_acl_admits_only_that_host(target: Target) -> None:
    from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    v4_prefix, v6_prefix = unique("host-v4"), unique("host-v6")
    ipv4 = target.address
    ipv6 = target.proxy.address("CLIENT6")  # [::1]:port

    def grant(prefix: str, host: str) -> AclBinding:
        return AclBinding(
            ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:alice", host, AclOperation.CREATE, AclPermissionType.ALLOW
        )

    def work() -> dict[str, int | list[str]]:
        admin = admin_for(target, "admin")
        bindings = [grant(v4_prefix, "127.0.0.7"), grant(v6_prefix, JAVA_IPV6_LOOPBACK)]
        seen: dict[str, int | list[str]] = {"grants": [outcome(f) for f in admin.create_acls(bindings).values()]}
        seen["alice from 127.0.0.7"] = poll(
            lambda: create_as_alice(ipv4, "127.0.0.7", f"{v4_prefix}-a"),
            lambda code: code != ErrorCode.topic_authorization_failed,
            ACL_PROPAGATION,
            0.25,
        )
        seen["alice from 127.0.0.1"] = create_as_alice(ipv4, "127.0.0.1", f"{v4_prefix}-b")
        seen["alice from ::1, v4 grant"] = create_as_alice(ipv6, "::1", f"{v4_prefix}-c")
        seen["alice from ::1"] = poll(
            lambda: create_as_alice(ipv6, "::1", f"{v6_prefix}-a"), lambda code: code != ErrorCode.topic_authorization_failed, ACL_PROPAGATION, 0.25
        )
        seen["alice from 127.0.0.7, v6 grant"] = create_as_alice(ipv4, "127.0.0.7", f"{v6_prefix}-b")
        for prefix in (v4_prefix, v6_prefix):
            wildcard = AclBindingFilter(
                ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, None, None, AclOperation.ANY, AclPermissionType.ANY
            )
            admin.delete_acls([wildcard])[wildcard].result(timeout=TIMEOUT)
        seen["cleanup"] = [outcome(f) for f in admin.delete_topics([f"{v4_prefix}-a", f"{v6_prefix}-a"]).values()]
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "grants": ["OK", "OK"],
        "alice from 127.0.0.7": 0,
        "alice from 127.0.0.1": ErrorCode.topic_authorization_failed,
        "alice from ::1, v4 grant": ErrorCode.topic_authorization_failed,
        "alice from ::1": 0,
        "alice from 127.0.0.7, v6 grant": ErrorCode.topic_authorization_failed,
        "cleanup": ["OK", "OK"],
    }
