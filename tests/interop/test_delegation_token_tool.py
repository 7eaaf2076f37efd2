"""Kafka's own `kafka-delegation-tokens` tool (DelegationTokenCommand) creates, renews and expires a token through the
proxy, in front of a Kafka 4.3.1 node and in front of the embedded controller: the controller makes the token for the
client (never for the proxy), a renewer renews it, a stranger is refused, the owner expires it.

Describing tokens and logging in with one: tests/interop/test_delegation_token_login.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit.kafka_node import KafkaNode
from tests.interop.differential import EMBEDDED_CONTROLLER_OVERRIDES
from tests.interop.test_kafka_tools import _client_properties, _tool
from tests.interop.upstreams import Target, embedded_target, kafka_target

pytestmark = pytest.mark.interop
TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
_HMAC = re.compile(r"^(\S{22})\s+(\S+)\s+User:alice\s+User:alice\s+\[User:bob\]", re.MULTILINE)


@pytest.fixture(params=["embedded", "kafka"])
async def target(request: pytest.FixtureRequest, nursery: Any, tmp_path: Path) -> Target:
    if request.param == "embedded":
        return await embedded_target(nursery, tmp_path / "audit", controller_overrides=EMBEDDED_CONTROLLER_OVERRIDES)
    node: KafkaNode = request.getfixturevalue("kafka_node")
    return await kafka_target(nursery, node, tmp_path / "audit")


async def test_the_delegation_token_tool_through_the_proxy(target: Target, tmp_path: Path) -> None:
    alice, bob, admin = (_client_properties(tmp_path, user) for user in ("alice", "bob", "admin"))

    def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        code, out = _tool(TOKENS, target, alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
        found = _HMAC.search(out)
        seen["create"] = (code, found is not None)
        assert found is not None, out
        hmac = found.group(2)
        code, out = _tool(TOKENS, target, bob, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
        seen["renew by the renewer"] = (code, "Completed renew operation" in out)
        code, out = _tool(TOKENS, target, admin, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
        seen["renew by a stranger"] = (code != 0, "DelegationTokenOwnerMismatchException" in out)
        code, out = _tool(TOKENS, target, alice, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
        seen["expire by the owner"] = (code, "Completed expire operation" in out)
        code, out = _tool(TOKENS, target, alice, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
        seen["renew an expired token"] = (code != 0, "DelegationTokenNotFoundException" in out)
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "create": (0, True),
        "renew by the renewer": (0, True),
        "renew by a stranger": (True, True),
        "expire by the owner": (0, True),
        "renew an expired token": (True, True),
    }
