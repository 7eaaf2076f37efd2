"""The delegation-token and membership APIs through the proxy to the embedded controller: advertised, forwarded in
Envelopes as the client (owner and requester are the client, never the proxy), audited with their resources."""

from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, EmbeddedStack, start_stack
from tests.integration.conftest import audit_records

SERVED = (38, 39, 40, 64, 80, 81)


def _call(address: str, user: str, api: int, version: int, values: dict[str, Any]) -> Any:
    with wire.connect(address, timeout=30) as sock:
        assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
        return wire.call(sock, api, version, values, correlation_id=7)


def _advertised(address: str) -> dict[int, tuple[int, int]]:
    with wire.connect(address, timeout=30) as sock:
        body = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"})
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}


async def _stack(nursery: Any, tmp_path: Path) -> EmbeddedStack:
    return await start_stack(nursery, tmp_path / "audit", controller_overrides={"delegation.token.secret.key": "integration-secret"})


async def test_tokens_are_made_for_the_client_and_audited(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path)
    advertised = await trio.to_thread.run_sync(_advertised, stack.sasl_address)
    assert {k: advertised[k] for k in SERVED} == {38: (1, 3), 39: (1, 2), 40: (1, 2), 64: (0, 0), 80: (0, 1), 81: (0, 0)}
    assert advertised[41] == (1, 3)  # DescribeDelegationToken: a read the proxy answers as a Kafka 4 broker (v0 is gone)

    create = {"owner_principal_type": None, "owner_principal_name": None, "renewers": [{"principal_type": "User", "principal_name": "bob"}], "max_lifetime": -1}
    made = await trio.to_thread.run_sync(_call, stack.sasl_address, "alice", ApiKey.CREATE_DELEGATION_TOKEN, 3, create)
    assert (made.error_code, made.principal_name, made.token_requester_principal_name, len(made.hmac)) == (ErrorCode.none, "alice", "alice", 64)
    renewed = await trio.to_thread.run_sync(_call, stack.sasl_address, "bob", ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": made.hmac, "renew_period": 60000})
    assert renewed.error_code == ErrorCode.none and renewed.expiry_timestamp > made.issue_timestamp
    mallory = await trio.to_thread.run_sync(_call, stack.sasl_address, "mallory", ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": made.hmac, "expiry_time_period": -1})
    assert mallory.error_code == ErrorCode.delegation_token_owner_mismatch
    other = {**create, "renewers": [], "owner_principal_type": "User", "owner_principal_name": "carol"}
    refused = await trio.to_thread.run_sync(_call, stack.sasl_address, "alice", ApiKey.CREATE_DELEGATION_TOKEN, 3, other)
    assert (refused.error_code, refused.principal_name, refused.issue_timestamp) == (ErrorCode.delegation_token_authorization_failed, "carol", -1)
    token = stack.controller.image.delegation_tokens[made.token_id]
    assert (str(token.owner), str(token.requester), [str(r) for r in token.renewers]) == ("User:alice", "User:alice", ["User:bob"])

    records = audit_records(tmp_path / "audit")
    creates = [r["data"] for r in records if r["data"]["methodName"] == "kafka.CreateDelegationToken"]
    assert [(d["stage"], d["authenticationInfo"]["principal"], d["resources"]) for d in creates] == [
        ("intent", "User:alice", []),
        ("outcome", "User:alice", []),
        # refused at the edge as a broker refuses it (CREATE_TOKENS on the mirrored ACLs): never forwarded
        ("refused", "User:alice", [{"type": "USER", "name": "User:carol", "patternType": "LITERAL", "operation": "CREATE_TOKENS"}]),
    ]
    assert creates[2]["result"] == {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": ErrorCode.delegation_token_authorization_failed, "errors": []}
    assert made.hmac.hex() not in str(records)  # no record carries an HMAC


async def test_membership_changes_are_forwarded_and_refused_as_kafka_refuses_them(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path)
    unknown = await trio.to_thread.run_sync(_call, stack.sasl_address, "admin", ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 99})
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.broker_id_not_registered, "Broker ID 99 is not currently registered")
    denied = await trio.to_thread.run_sync(_call, stack.sasl_address, "alice", ApiKey.REMOVE_RAFT_VOTER, 0, {"cluster_id": None, "voter_id": 1, "voter_directory_id": None})
    assert (denied.error_code, denied.error_message) == (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    records = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["methodName"] in ("kafka.UnregisterBroker", "kafka.RemoveRaftVoter")]
    assert {(d["methodName"], d["stage"]) for d in records} == {(m, s) for m in ("kafka.UnregisterBroker", "kafka.RemoveRaftVoter") for s in ("intent", "outcome")}
    assert all(d["resources"] == [{"type": "CLUSTER", "name": "kafka-cluster", "patternType": "LITERAL", "operation": "ALTER"}] for d in records)
