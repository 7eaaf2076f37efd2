"""DescribeConfigs through the proxy keeps what the controller answered: synonyms, documentation, types, flags.

The proxy asks its read upstream (here the embedded controller) under its own identity and
encodes the answer again at the client's version; nothing of a described config may be lost
on the way. What the client may not describe is answered by the proxy, after the rest, as a
broker's ConfigHelper orders it; an unknown resource type fails the whole request there.
"""

import uuid
from typing import Any

import trio

from authz import AclBinding, AclStore, Operation, PatternType, PermissionType, ResourceType
from controller.image import Topic
from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, PROXY_PASSWORD, PROXY_USER, EmbeddedStack

INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or the message was sent to an "
    "incompatible broker. See the broker logs for more details."
)


def _describe(address: str, user: str, password: str, version: int, resources: list[tuple[int, str]]) -> list[dict[str, Any]]:
    values = {
        "resources": [{"resource_type": t, "resource_name": n, "configuration_keys": None} for t, n in resources],
        "include_synonyms": True,
        "include_documentation": True,
    }
    with wire.connect(address, timeout=30) as sock:
        assert wire.sasl_plain_login(sock, user, password) == 0
        answer = wire.call(sock, ApiKey.DESCRIBE_CONFIGS, version, values, 5)
    return [wire.plain(result) for result in answer.results]



async def test_every_described_field_survives_the_proxy_at_every_version(stack: EmbeddedStack) -> None:
    image = stack.controller.image
    image.topics["t1"] = Topic("t1", uuid.uuid4(), 1, 1, {"retention.ms": "3600000", "cleanup.policy": "compact"})
    resources = [(2, "t1"), (4, ""), (4, "1"), (16, "cm"), (32, "g"), (2, "nope"), (4, "2")]
    controller = f"127.0.0.1:{stack.controller_port}"
    for version in (1, 2, 3, 4):
        direct = await trio.to_thread.run_sync(_describe, controller, PROXY_USER, PROXY_PASSWORD, version, resources)
        proxied = await trio.to_thread.run_sync(_describe, stack.sasl_address, "admin", DEFAULT_USERS["admin"], version, resources)
        assert proxied == direct, f"v{version}"
    topic = {entry["name"]: entry for entry in direct[0]["configs"]}
    retention = topic["retention.ms"]
    assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]] == [("retention.ms", "3600000", 1)]
    assert (retention["config_type"], retention["documentation"] is not None) == (5, True)
    assert [(s["name"], s["source"]) for s in topic["min.insync.replicas"]["synonyms"]] == [("min.insync.replicas", 3), ("min.insync.replicas", 5)]
    broker = {entry["name"]: entry for entry in direct[2]["configs"]}
    jaas = broker["listener.name.controller.plain.sasl.jaas.config"]
    assert (jaas["value"], jaas["is_sensitive"], jaas["read_only"], jaas["config_type"]) == (None, True, True, 9)


async def test_denied_resources_come_last_and_an_unknown_type_fails_all(stack: EmbeddedStack) -> None:
    stack.controller.image.topics["t1"] = Topic("t1", uuid.uuid4(), 1, 1, {})
    authorizer = stack.controller.authorizer
    assert isinstance(authorizer, AclStore)
    grant = AclBinding(ResourceType.TOPIC, "t1", PatternType.LITERAL, "User:alice", "*", Operation.DESCRIBE_CONFIGS, PermissionType.ALLOW)
    assert authorizer.create_acls([grant]) == [None]
    alice = DEFAULT_USERS["alice"]
    results = await trio.to_thread.run_sync(_describe, stack.sasl_address, "alice", alice, 4, [(4, ""), (2, "t1"), (2, "t2")])
    assert [(r["resource_type"], r["resource_name"], r["error_code"], r["error_message"]) for r in results] == [
        (2, "t1", 0, ""),
        (4, "", 31, "Cluster authorization failed."),
        (2, "t2", 29, "Topic authorization failed."),
    ]
    results = await trio.to_thread.run_sync(_describe, stack.sasl_address, "alice", alice, 4, [(2, "t1"), (99, "x")])
    assert [(r["resource_type"], r["error_code"], r["error_message"], r["configs"]) for r in results] == [
        (2, 42, INVALID_REQUEST_MESSAGE, []),
        (99, 42, INVALID_REQUEST_MESSAGE, []),
    ]
