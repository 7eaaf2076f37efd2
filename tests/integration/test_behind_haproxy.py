"""The proxy behind a real HAProxy (TCP mode, `send-proxy` and `send-proxy-v2`), with real Kafka clients.

Every client enters through a door that makes HAProxy see it at 127.0.0.2 (alice, admin), 127.0.0.3 (mallory) or
127.0.0.4; HAProxy itself connects to the proxy from 127.0.0.1. An ACL lets alice create `lb-*` topics only from
127.0.0.2: the controller grants it through the load balancer only if the Envelope carries the client's address.
"""

from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from devkit.haproxy import Backend, Door, haproxy_binary, start_haproxy, stop_process
from devkit.processes import free_port, skip_or_fail
from envelope.apis import ApiKey
from envelope_proxy.dev_pki import generate_dev_pki
from envelope_proxy.embedded import DEFAULT_USERS, start_stack
from proxy.net.sasl.login_modules import plain_jaas
from tests.integration.conftest import audit_records

TIMEOUT = 30
ALICE, MALLORY, ELSEWHERE, LOAD_BALANCER = "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.1"
PKI_PASSWORD = "pki-secret"


def _admin(address: str, user: str, tls_ca: str | None = None) -> Any:
    from confluent_kafka.admin import AdminClient

    config = {
        "bootstrap.servers": address,
        "security.protocol": "SASL_SSL" if tls_ca else "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": DEFAULT_USERS[user],
    }
    if tls_ca:
        config["ssl.ca.location"] = tls_ca
    return AdminClient(config)


def _create(admin: Any, topic: str) -> str:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    try:
        for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT).values():
            future.result(timeout=TIMEOUT)
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "OK"


def _create_raw(address: str, topic: str) -> int:
    """CreateTopics v5 as alice on one connection (no metadata detour through the advertised door)."""
    with wire.connect(address, timeout=10) as sock:
        assert wire.sasl_plain_login(sock, "alice", DEFAULT_USERS["alice"]) == 0
        body = {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}]}
        return int(wire.call(sock, ApiKey.CREATE_TOPICS, 5, {**body, "timeout": 5000, "validate_only": False}, 3).topics[0].error_code)


async def test_kafka_clients_behind_haproxy_are_seen_at_their_own_address(nursery: Any, tmp_path: Path) -> None:
    if haproxy_binary() is None:
        skip_or_fail("haproxy is not installed (Debian package haproxy; `make tools` installs it)")
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    pki = generate_dev_pki(tmp_path / "pki", hosts=["localhost", "127.0.0.1"], clients=["alice"], password=PKI_PASSWORD)
    v1, v2, tls = (Backend("v1", free_port(), "send-proxy"), Backend("v2", free_port(), "send-proxy-v2", health_check=True), Backend("tls", free_port(), "send-proxy-v2"))
    doors = {
        "v1": Door("v1", "v1", ALICE),
        "v2": Door("v2", "v2", ALICE),
        "tls": Door("tls", "tls", ALICE),
        "mallory": Door("mallory", "v2", MALLORY),
        "elsewhere": Door("elsewhere", "v2", ELSEWHERE),
    }
    users = plain_jaas(**{f"user_{name}": password for name, password in DEFAULT_USERS.items()})
    overrides = {
        "listeners": f"V1://127.0.0.1:{v1.proxy_port},V2://127.0.0.1:{v2.proxy_port},TLS://127.0.0.1:{tls.proxy_port},PLAIN://127.0.0.1:0",
        # each listener is advertised as its door: metadata sends the client back through HAProxy
        "advertised.listeners": f"V1://127.0.0.1:{doors['v1'].port},V2://127.0.0.1:{doors['v2'].port},TLS://127.0.0.1:{doors['tls'].port}",
        "listener.security.protocol.map": "V1:SASL_PLAINTEXT,V2:SASL_PLAINTEXT,TLS:SASL_SSL,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        **{f"listener.name.{name}.plain.sasl.jaas.config": users for name in ("v1", "v2", "tls")},
        "listener.name.v1.proxy.protocol.mode": "v1",
        "listener.name.v2.proxy.protocol.mode": "v2",
        "listener.name.tls.proxy.protocol.mode": "v2",
        "listener.name.plain.proxy.protocol.mode": "off",
        "proxy.protocol.trusted.cidrs": f"{LOAD_BALANCER}/32",
        "security.ip.filter.rule.type": "deny",
        "security.ip.filter.list": MALLORY,
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.server_p12),
        "ssl.keystore.password": PKI_PASSWORD,
        "ssl.key.password": PKI_PASSWORD,
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=overrides)
    haproxy = start_haproxy(tmp_path, [v1, v2, tls], list(doors.values()))
    try:

        def workflow() -> dict[str, object]:
            admin = _admin(doors["v1"].address, "admin")
            grant = AclBinding(ResourceType.TOPIC, "lb-", ResourcePatternType.PREFIXED, "User:alice", ALICE, AclOperation.ALL, AclPermissionType.ALLOW)
            [future.result(timeout=TIMEOUT) for future in admin.create_acls([grant]).values()]
            seen: dict[str, object] = {
                "alice via v1": _create(_admin(doors["v1"].address, "alice"), "lb-v1"),
                "alice via v2": _create(_admin(doors["v2"].address, "alice"), "lb-v2"),
                "alice via tls": _create(_admin(doors["tls"].address, "alice", str(pki.truststore_pem)), "lb-tls"),
                "alice from elsewhere": _create_raw(doors["elsewhere"].address, "lb-elsewhere"),
            }
            with wire.connect(doors["mallory"].address) as sock:
                seen["mallory closed"] = wire.is_closed(sock)
            seen["deleted"] = [f.result(timeout=TIMEOUT) for f in admin.delete_topics(["lb-v1", "lb-v2", "lb-tls"], operation_timeout=TIMEOUT).values()]
            return seen

        seen = await trio.to_thread.run_sync(workflow)
        with trio.move_on_after(5):
            while not any(_local(r) for r in audit_records(tmp_path / "audit")):
                await trio.sleep(0.2)
    finally:
        stop_process(haproxy)
    assert seen == {
        "alice via v1": "OK",
        "alice via v2": "OK",
        "alice via tls": "OK",
        "alice from elsewhere": ErrorCode.topic_authorization_failed,
        "mallory closed": True,
        "deleted": [None, None, None],
    }
    records = audit_records(tmp_path / "audit")
    intents = {r["subject"]: r["data"] for r in records if r["data"]["stage"] == "intent" and r["data"]["methodName"] == "kafka.CreateTopics"}
    for topic, listener, version in (("lb-v1", "V1", 1), ("lb-v2", "V2", 2), ("lb-tls", "TLS", 2)):
        data = intents[f"topic:{topic}"]
        assert data["requestMetadata"]["clientAddress"] == ALICE and data["authenticationInfo"]["listener"] == listener
        assert data["requestMetadata"]["proxiedBy"]["address"] == LOAD_BALANCER and data["requestMetadata"]["proxiedBy"]["version"] == version
    assert intents["topic:lb-elsewhere"]["requestMetadata"]["clientAddress"] == ELSEWHERE
    refused = [r["data"] for r in records if r["data"]["stage"] == "refused"]
    # (HAProxy may try the refused connection again: one record per attempt, all naming mallory, not the load balancer)
    assert {(r["requestMetadata"]["clientAddress"], r["authorizationInfo"]["reason"], r["requestMetadata"]["proxiedBy"]["address"]) for r in refused} == {
        (MALLORY, "ip-filter", LOAD_BALANCER)
    }
    # HAProxy's v2 health checks (LOCAL) are served as the load balancer itself
    assert any(_local(r) for r in records)
    assert stack.proxy.service.metrics.connections_refused.labels("V2", "ip_filter")._value.get() == len(refused)


def _local(record: dict[str, Any]) -> bool:
    metadata = record["data"]["requestMetadata"]
    proxied = metadata.get("proxiedBy")
    return proxied is not None and proxied["command"] == "LOCAL" and metadata["clientAddress"] == LOAD_BALANCER


