"""Delegation tokens at the proxy's edge, in front of the embedded controller: SCRAM logins with `tokenauth=true`
(the token's owner, marked token-authenticated), the checks a Kafka broker makes itself before forwarding a token
request, and DescribeDelegationToken filtered per caller as KafkaApis filters it."""

import base64
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope.apis import ApiKey
from envelope.principal import serialize_principal
from envelope_proxy.embedded import DEFAULT_USERS, EmbeddedStack, start_stack
from proxy.net.sasl.credentials import add_user
from proxy.net.sasl.scram_client import ScramClient
from tests.integration.conftest import audit_records

SHA256 = "SCRAM-SHA-256"
REFRESH_MS = 300


async def _stack(nursery: Any, tmp_path: Path) -> EmbeddedStack:
    credentials = tmp_path / "scram.json"
    add_user(credentials, "someone", "someone-secret", [SHA256])
    overrides = {
        "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0,TOKENS://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,TOKENS:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "listener.name.tokens.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.tokens.sasl.scram.credentials.file": str(credentials),
        "edge.token.refresh.ms": str(REFRESH_MS),
    }
    return await start_stack(
        nursery, tmp_path / "audit", proxy_overrides=overrides, controller_overrides={"delegation.token.secret.key": "integration-secret"}
    )



def _plain_call(address: str, user: str, api: int, version: int, values: dict[str, Any]) -> Any:
    with wire.connect(address, timeout=30) as sock:
        assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
        return wire.call(sock, api, version, values, correlation_id=7)


def _anonymous_call(address: str, api: int, version: int, values: dict[str, Any]) -> Any:
    with wire.connect(address, timeout=30) as sock:
        return wire.call(sock, api, version, values, correlation_id=7)



def _create(owner: str | None = None, renewers: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "owner_principal_type": "User" if owner else None,
        "owner_principal_name": owner,
        "renewers": [{"principal_type": "User", "principal_name": r} for r in renewers],
        "max_lifetime": -1,
    }


def _described(address: str, user: str) -> set[tuple[str, str, bool]]:
    body = _plain_call(address, user, ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": None})
    assert body.error_code == ErrorCode.none
    return {(str(t.token_id), str(t.principal_name), len(t.hmac) == 64) for t in body.tokens}


async def test_a_token_logs_in_as_its_owner_and_may_not_ask_for_tokens(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path)
    client, tokens = stack.proxy.address("CLIENT"), stack.proxy.address("TOKENS")
    made = await trio.to_thread.run_sync(_plain_call, client, "alice", ApiKey.CREATE_DELEGATION_TOKEN, 3, _create(renewers=("bob",)))
    assert made.error_code == ErrorCode.none
    hmac = bytes(made.hmac)

    def log_in_and_work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        with wire.connect(tokens, timeout=30) as sock:
            seen["login"] = wire.scram_token_login(sock, made.token_id, hmac)
            topic = {"name": "made-with-a-token", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            created = wire.call(sock, ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout": 30000, "validate_only": False}, correlation_id=4)
            seen["create topic"] = int(created.topics[0].error_code)
            # the session's principal, which every Envelope of this connection carries (serialized with the flag)
            sessions = [s for s in stack.proxy.service.sessions if s.listener.name == "TOKENS"]
            seen["principal"] = [(str(s.principal), s.principal.token_authenticated, serialize_principal(s.principal)[-2]) for s in sessions]
            again = wire.call(sock, ApiKey.CREATE_DELEGATION_TOKEN, 3, _create(), correlation_id=5)
            seen["create token"] = (int(again.error_code), str(again.principal_name), int(again.issue_timestamp))
            renew = wire.call(sock, ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": hmac, "renew_period": 1000}, correlation_id=6)
            seen["renew token"] = (int(renew.error_code), int(renew.expiry_timestamp))
            describe = wire.call(sock, ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": None}, correlation_id=7)
            seen["describe"] = (int(describe.error_code), len(describe.tokens))
        with wire.connect(tokens, timeout=30) as sock:
            seen["wrong hmac"] = wire.scram_token_login(sock, made.token_id, b"\x00" * 64)
        with wire.connect(tokens, timeout=30) as sock:
            seen["unknown token"] = wire.scram_token_login(sock, "no-such-token", hmac)
        return seen

    seen = await trio.to_thread.run_sync(log_in_and_work)
    not_allowed = ErrorCode.delegation_token_request_not_allowed
    assert seen == {
        "login": ErrorCode.none,
        "principal": [("User:alice", True, 1)],
        "create topic": ErrorCode.topic_authorization_failed,  # decided on alice, who may not create topics
        "create token": (not_allowed, "alice", -1),
        "renew token": (not_allowed, -1),
        "describe": (not_allowed, 0),
        "wrong hmac": ErrorCode.sasl_authentication_failed,
        "unknown token": ErrorCode.sasl_authentication_failed,
    }
    forwarded = [d for d in audit_records(tmp_path / "audit") if d["data"]["methodName"] == "kafka.CreateTopics"]
    assert [(d["data"]["stage"], d["data"]["authenticationInfo"]["principal"]) for d in forwarded] == [("intent", "User:alice"), ("outcome", "User:alice")]

    records = [r["data"] for r in audit_records(tmp_path / "audit")]
    refused = [d for d in records if d["stage"] == "refused" and d["methodName"] in ("kafka.CreateDelegationToken", "kafka.RenewDelegationToken")]
    assert [(d["methodName"], d["authenticationInfo"]["principal"], d["result"]["errorCode"]) for d in refused] == [
        ("kafka.CreateDelegationToken", "User:alice", not_allowed),
        ("kafka.RenewDelegationToken", "User:alice", not_allowed),
    ]
    assert all(d["forwardingPrincipal"] is None for d in refused)
    logins = [d for d in records if d["methodName"] == "kafka.Connection" and d["stage"] == "authenticated" and d["authenticationInfo"]["listener"] == "TOKENS"]
    assert [d["authenticationInfo"]["principal"] for d in logins] == ["User:alice"]
    assert hmac.hex() not in str(records) and base64.b64encode(hmac).decode() not in str(records)

    # Expired through the proxy: seen at once. Removed elsewhere (as by another broker): within edge.token.refresh.ms.
    expired = await trio.to_thread.run_sync(_plain_call, client, "alice", ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": hmac, "expiry_time_period": -1})
    assert expired.error_code == ErrorCode.none

    def login_code(token_id: str, token_hmac: bytes) -> int:
        with wire.connect(tokens, timeout=30) as sock:
            return wire.scram_token_login(sock, token_id, token_hmac)

    assert await trio.to_thread.run_sync(login_code, made.token_id, hmac) == ErrorCode.sasl_authentication_failed
    other = await trio.to_thread.run_sync(_plain_call, client, "bob", ApiKey.CREATE_DELEGATION_TOKEN, 3, _create())
    assert await trio.to_thread.run_sync(login_code, other.token_id, bytes(other.hmac)) == ErrorCode.none
    del stack.controller.image.delegation_tokens[other.token_id]
    await trio.sleep(REFRESH_MS / 1000 * 3)
    assert await trio.to_thread.run_sync(login_code, other.token_id, bytes(other.hmac)) == ErrorCode.sasl_authentication_failed


async def test_a_broker_refuses_token_requests_on_plaintext_and_filters_what_each_caller_sees(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path)
    client, plain = stack.proxy.address("CLIENT"), stack.proxy.address("PLAIN")
    not_allowed = ErrorCode.delegation_token_request_not_allowed
    anonymous = await trio.to_thread.run_sync(_anonymous_call, plain, ApiKey.CREATE_DELEGATION_TOKEN, 3, _create())
    assert (anonymous.error_code, anonymous.principal_name, anonymous.max_timestamp) == (not_allowed, "ANONYMOUS", -1)
    described = await trio.to_thread.run_sync(_anonymous_call, plain, ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": None})
    assert (described.error_code, described.tokens) == (not_allowed, ())
    # KafkaApis' order: a renewer that is not a User is refused before the controller (which would say 61 or 35 first)
    principal_type = await trio.to_thread.run_sync(
        _plain_call, client, "alice", ApiKey.CREATE_DELEGATION_TOKEN, 3, {**_create(), "renewers": [{"principal_type": "Group", "principal_name": "g"}]}
    )
    assert principal_type.error_code == ErrorCode.invalid_principal_type
    # CREATE_TOKENS on another owner, decided at the edge on the mirrored ACLs (alice has none; admin is a super user)
    for_carol = await trio.to_thread.run_sync(_plain_call, client, "alice", ApiKey.CREATE_DELEGATION_TOKEN, 3, _create(owner="carol"))
    assert (for_carol.error_code, for_carol.principal_name, for_carol.token_requester_principal_name) == (
        ErrorCode.delegation_token_authorization_failed,
        "carol",
        "alice",
    )

    alices = await trio.to_thread.run_sync(_plain_call, client, "alice", ApiKey.CREATE_DELEGATION_TOKEN, 3, _create(renewers=("bob",)))
    mallorys = await trio.to_thread.run_sync(_plain_call, client, "mallory", ApiKey.CREATE_DELEGATION_TOKEN, 3, _create())
    carols = await trio.to_thread.run_sync(_plain_call, client, "admin", ApiKey.CREATE_DELEGATION_TOKEN, 3, _create(owner="carol"))
    assert {alices.error_code, mallorys.error_code, carols.error_code} == {ErrorCode.none}
    a, m, c = (str(alices.token_id), "alice", True), (str(mallorys.token_id), "mallory", True), (str(carols.token_id), "carol", True)
    seen = {user: await trio.to_thread.run_sync(_described, client, user) for user in ("alice", "bob", "mallory", "admin")}
    # owner, renewer, owner, and a super user (the requester of carol's token, and allowed everything)
    assert seen == {"alice": {a}, "bob": {a}, "mallory": {m}, "admin": {a, m, c}}
    # owners named: only tokens whose owner or renewer is among them, still only those the caller may see
    only = await trio.to_thread.run_sync(
        _plain_call, client, "bob", ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": [{"principal_type": "User", "principal_name": "mallory"}]}
    )
    assert (only.error_code, only.tokens) == (ErrorCode.none, ())

    records = [r["data"] for r in audit_records(tmp_path / "audit")]
    refusals = [(d["methodName"], d["result"]["errorCode"], d["resources"]) for d in records if d["stage"] == "refused"]
    described_refusal = next(d for d in records if d["stage"] == "refused" and d["methodName"] == "kafka.DescribeDelegationToken")
    assert (described_refusal["result"]["status"], described_refusal["authorizationInfo"]["decision"]) == ("REFUSED", "DENIED")
    assert refusals == [
        ("kafka.CreateDelegationToken", not_allowed, []),
        # refused as the token changes are (an outside check found it audited as a read, ERROR and ALLOWED)
        ("kafka.DescribeDelegationToken", not_allowed, []),
        ("kafka.CreateDelegationToken", ErrorCode.invalid_principal_type, []),
        (
            "kafka.CreateDelegationToken",
            ErrorCode.delegation_token_authorization_failed,
            [{"type": "USER", "name": "User:carol", "patternType": "LITERAL", "operation": "CREATE_TOKENS"}],
        ),
    ]
    described_records = [d for d in records if d["methodName"] == "kafka.DescribeDelegationToken"]
    assert [d["stage"] for d in described_records] == ["refused"] + ["read"] * 5
    assert not any(alices.hmac.hex() in str(d) for d in records)


async def test_a_token_logins_session_ends_with_the_token(nursery: Any, tmp_path: Path) -> None:
    """KIP-368: a token login's session lasts no longer than its token (ScramSaslServer's credential lifetime)."""
    stack = await _stack(nursery, tmp_path)
    client, tokens = stack.proxy.address("CLIENT"), stack.proxy.address("TOKENS")
    made = await trio.to_thread.run_sync(_plain_call, client, "alice", ApiKey.CREATE_DELEGATION_TOKEN, 3, {**_create(), "max_lifetime": 5000})
    assert made.error_code == ErrorCode.none

    def lifetime() -> float:
        with wire.connect(tokens, timeout=30) as sock:
            assert wire.sasl_handshake(sock, SHA256, 1) == 0
            scram = ScramClient(SHA256, made.token_id, base64.b64encode(bytes(made.hmac)).decode(), extensions={"tokenauth": "true"})
            first = wire.call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()}, correlation_id=2)
            final = wire.call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(bytes(first.auth_bytes))}, correlation_id=3)
            assert int(final.error_code) == 0
            return float(final.session_lifetime.total_seconds())

    seconds = await trio.to_thread.run_sync(lifetime)
    assert 0 < seconds <= 5.0
