"""A delegation token made with Kafka's `kafka-delegation-tokens` tool logs in to the proxy with Kafka's own client
(ScramLoginModule with tokenauth="true"), in front of a Kafka 4.3.1 node and of the embedded controller:

- its request reaches the controller as the token's owner (the topic is made, the audit names the owner);
- its attempt to create another token is refused as a broker refuses it (UnsupportedByAuthenticationException);
- DescribeDelegationToken shows each caller what a Kafka broker shows it (compared with the node's broker);
- a token renewed directly on the node (not through the proxy) logs in past its old expiry, and one expired there
  stops logging in within `edge.token.refresh.ms` of its expiry.
"""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit import wire
from devkit.kafka_jars import java_command
from devkit.kafka_node import KafkaNode
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS
from proxy.net.sasl.credentials import add_user
from proxy.net.sasl.jaas import SCRAM_LOGIN_MODULE
from tests.integration.conftest import audit_records
from tests.interop.differential import EMBEDDED_CONTROLLER_OVERRIDES
from tests.interop.test_conformance import unique
from tests.interop.test_kafka_tools import _classpath, _client_properties, _run
from tests.interop.upstreams import Target, embedded_target, kafka_target

pytestmark = pytest.mark.interop
TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"
REFRESH_MS = 500
SHORTENED_MS = 5_000
LOGIN_WAIT = 60.0
CALLERS = ("admin", "alice", "bob")
"""Users both the proxy and the node know: the owner, a renewer, a stranger."""
_TOKEN = re.compile(r"^(\S{22})\s+(\S+)\s+User:admin\s+User:admin\s+\[User:bob\]", re.MULTILINE)
_DESCRIBED = re.compile(r"^(\S{22})\s+\S+\s+(User:\S+)\s+User:\S+\s+\[", re.MULTILINE)


def _overrides(tmp_path: Path) -> dict[str, str]:
    credentials = tmp_path / "scram.json"
    add_user(credentials, "nobody", "nobody-secret", ["SCRAM-SHA-256"])
    return {
        "listeners": "CLIENT://127.0.0.1:0,TOKENS://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,TOKENS:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "listener.name.tokens.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.tokens.sasl.scram.credentials.file": str(credentials),
        "edge.token.refresh.ms": str(REFRESH_MS),
    }


@pytest.fixture(params=["embedded", "kafka"])
async def target(request: pytest.FixtureRequest, nursery: Any, tmp_path: Path) -> Target:
    overrides = _overrides(tmp_path)
    if request.param == "embedded":
        return await embedded_target(nursery, tmp_path / "audit", overrides, controller_overrides=EMBEDDED_CONTROLLER_OVERRIDES)
    node: KafkaNode = request.getfixturevalue("kafka_node")
    return await kafka_target(nursery, node, tmp_path / "audit", overrides)


def _java(main_class: str, bootstrap: str, config: Path, *args: str) -> tuple[int, str]:
    done = _run([*java_command(_classpath()), main_class, "--bootstrap-server", bootstrap, "--command-config", str(config), *args], config.parent)
    return done.returncode, done.stdout + done.stderr


def _token_properties(directory: Path, token_id: str, hmac: str) -> Path:
    path = directory / f"token-{token_id}.properties"
    jaas = f'{SCRAM_LOGIN_MODULE} required username="{token_id}" password="{hmac}" tokenauth="true";'
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config={jaas}\n")
    return path


def _until(run: Any, done: Any, timeout: float) -> tuple[int, str]:
    """Run a tool again until `done(result)` or `timeout` (the proxy learns tokens from the node's broker, which
    learns them from the controller a moment after it commits them)."""
    deadline = time.monotonic() + timeout
    result = run()
    while not done(result) and time.monotonic() < deadline:
        time.sleep(0.5)
        result = run()
    return result  # type: ignore[no-any-return]


async def test_a_token_made_by_the_tool_logs_in_through_the_proxy(target: Target, tmp_path: Path) -> None:
    client = target.address
    tokens = f"127.0.0.1:{target.proxy.listener('TOKENS').port}"
    users = {user: _client_properties(tmp_path, user) for user in CALLERS}
    topic = unique("token-topic")

    def described(bootstrap: str, user: str) -> set[tuple[str, str]]:
        # the tool sends an empty owner list without --owner-principal, which a broker answers with no token at all
        code, out = _java(TOKENS, bootstrap, users[user], "--describe", "--owner-principal", "User:admin")
        assert code == 0, out
        return set(_DESCRIBED.findall(out))

    def elsewhere(command: str, hmac: str, period_ms: int, user: str) -> int:
        """Renew or expire a token where the proxy does not see it: at the node's broker, or straight at the embedded
        controller (which lists no broker); the error code, 0 if done. A raw request, not the tool: a JVM's start
        would eat into the short expiries below."""
        api, field = (ApiKey.RENEW_DELEGATION_TOKEN, "renew_period") if command == "renew" else (ApiKey.EXPIRE_DELEGATION_TOKEN, "expiry_time_period")
        with wire.connect(target.read_address, timeout=30) as sock:
            assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
            return int(wire.call(sock, api, 2, {"hmac": base64.b64decode(hmac), field: period_ms}).error_code)

    def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        code, out = _java(TOKENS, client, users["admin"], "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
        found = _TOKEN.search(out)
        assert code == 0 and found is not None, out
        token_id, hmac = found.group(1), found.group(2)
        token = _token_properties(tmp_path, token_id, hmac)
        code, out = _until(lambda: _java(TOPICS, tokens, token, "--create", "--topic", topic, "--partitions", "2"), lambda r: r[0] == 0, LOGIN_WAIT)
        seen["create a topic with the token"] = (code, out if code else "")
        seen["partitions"] = target.wait_for_partitions(topic, 2)
        code, out = _java(TOKENS, tokens, token, "--create", "--max-life-time-period", "-1")
        seen["create a token with the token"] = (code != 0, "UnsupportedByAuthenticationException" in out)
        seen["describe"] = {user: described(client, user) for user in CALLERS}
        if target.kind == "kafka":
            seen["describe at the broker"] = {user: described(target.read_address, user) for user in CALLERS}
        # renewed elsewhere: the expiry brought forward to SHORTENED_MS from now, then (after the proxy's refresh has
        # seen it) pushed back by the renewer, both where the proxy does not see it; past the shortened expiry the
        # token still logs in (the proxy saw the renewal)
        shortened_at = time.monotonic()
        seen["shorten elsewhere"] = elsewhere("expire", hmac, SHORTENED_MS, "admin")
        time.sleep(3 * REFRESH_MS / 1000)
        seen["renew elsewhere"] = elsewhere("renew", hmac, 600_000, "bob")
        time.sleep(max(0.0, shortened_at + SHORTENED_MS / 1000 + 1 - time.monotonic()))
        code, out = _java(TOPICS, tokens, token, "--list")
        seen["login past the old expiry"] = (code, out if code else "")
        # expired elsewhere, 2 s from now: refused once that time has passed
        seen["expire elsewhere"] = elsewhere("expire", hmac, 2_000, "admin")
        started = time.monotonic()
        code, out = _until(lambda: _java(TOPICS, tokens, token, "--list"), lambda r: r[0] != 0, LOGIN_WAIT)
        seen["login after the expiry"] = (code != 0, "SaslAuthenticationException" in out)
        seen["expiry seen within"] = time.monotonic() - started
        seen["token"] = (token_id, hmac)
        return seen

    seen = await trio.to_thread.run_sync(work)
    token_id, hmac = seen.pop("token")
    assert seen.pop("expiry seen within") < LOGIN_WAIT
    visible = {(token_id, "User:admin")}
    at_the_broker = seen.pop("describe at the broker", None)
    assert seen == {
        "create a topic with the token": (0, ""),
        "partitions": 2,
        "create a token with the token": (True, True),
        # the owner and the renewer see it; alice does not (she may see tokens of her own, made by other tests)
        "describe": {
            "admin": seen["describe"]["admin"] | visible,
            "alice": seen["describe"]["alice"] - visible,
            "bob": seen["describe"]["bob"] | visible,
        },
        "shorten elsewhere": 0,
        "renew elsewhere": 0,
        "login past the old expiry": (0, ""),
        "expire elsewhere": 0,
        "login after the expiry": (True, True),
    }
    assert visible <= seen["describe"]["admin"] and visible <= seen["describe"]["bob"]
    if at_the_broker is not None:
        assert seen["describe"] == at_the_broker  # each caller sees through the proxy what the broker shows it

    records = [r["data"] for r in audit_records(tmp_path / "audit")]
    creates = [d for d in records if d["methodName"] == "kafka.CreateTopics" and d["authenticationInfo"]["listener"] == "TOKENS"]
    assert {(d["stage"], d["authenticationInfo"]["principal"]) for d in creates} >= {("intent", "User:admin"), ("outcome", "User:admin")}
    refused = [d for d in records if d["methodName"] == "kafka.CreateDelegationToken" and d["stage"] == "refused"]
    assert [(d["authenticationInfo"]["principal"], d["result"]["errorCode"]) for d in refused] == [("User:admin", 64)]
    assert hmac not in str(records)
    # the token id (not a secret: describe shows it) is the user name a failed login tried, as for any user
    named = [(d["stage"], d["authenticationInfo"]["principal"]) for d in records if token_id in str(d)]
    assert named and set(named) == {("authentication-failed", f"User:{token_id}")}, named
