"""Delegation tokens in the embedded controller: Kafka 4.3's ControllerApis, DelegationTokenControlManager and (for
DescribeDelegationToken) KafkaApis rules, without Kafka (the differential suite checks them against a node)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from authz import AclAuthorizer, AclBinding, Operation, PatternType, PermissionType, RequestContext, ResourceType
from controller.config import parse_controller_config
from controller.delegation_tokens import DEFAULT_EXPIRY_TIME_MS, DEFAULT_MAX_LIFETIME_MS, TokenSettings
from controller.handlers import Handlers
from controller.image import MetadataImage
from controller.leadership import Leadership
from controller.persistence import MetadataStore
from controller.server import EmbeddedController
from devkit import wire
from devkit.processes import free_port
from envelope import kafka_uuid
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_response, request_schema, response_schema
from envelope.principal import ANONYMOUS, Principal
from envelope.wrap import unwrap, wrap
from envelope_proxy.embedded import controller_properties
from proxy.properties import ConfigError

SECRET = "token-secret"
NOW = 1_700_000_000_000
PROXY = Principal("User", "proxy")


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def ctx(user: str, *, token: bool = False, forwarded: bool = True, protocol: str = "SASL_PLAINTEXT", kind: str = "User") -> RequestContext:
    return RequestContext(
        principal=Principal(kind, user, token),
        client_address=ipaddress.ip_address("127.0.0.1"),
        listener="CONTROLLER",
        security_protocol=protocol,
        forwarding_principal=PROXY if forwarded else None,
    )


def grant(principal: str, operation: Operation, resource_type: ResourceType, name: str) -> AclBinding:
    return AclBinding(resource_type, name, PatternType.LITERAL, principal, "*", operation, PermissionType.ALLOW)


class Tokens:
    def __init__(self, *acls: AclBinding, settings: TokenSettings | None = None, metadata_version: int = 30) -> None:
        self.clock = Clock()
        self.image = MetadataImage(finalized_features={"metadata.version": metadata_version})
        self.handlers = Handlers(
            self.image,
            AclAuthorizer(["User:admin"], acls=acls),
            leadership=Leadership(1, active_id=1),
            default_partitions=1,
            default_replication_factor=1,
            broker_count=1,
            tokens=TokenSettings(SECRET) if settings is None else settings,
            clock=self.clock,
        )

    def call(self, api: ApiKey, version: int, values: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        answer = self.handlers.by_key[api](build_entity(request_schema(api, version), values), context)
        encode_response(build_entity(response_schema(api, version), answer), correlation_id=1)  # every answer is one Kafka can send
        return answer

    def create(self, context: RequestContext, *, owner: tuple[str | None, str | None] = (None, None), renewers: tuple[str, ...] = (), lifetime: int = -1, version: int = 3) -> dict[str, Any]:
        values = {
            "owner_principal_type": owner[0],
            "owner_principal_name": owner[1],
            "renewers": [{"principal_type": r.split(":", 1)[0], "principal_name": r.split(":", 1)[1]} for r in renewers],
            "max_lifetime": lifetime,
        }
        return self.call(ApiKey.CREATE_DELEGATION_TOKEN, version, values, context)

    def renew(self, token_hmac: bytes, context: RequestContext, period: int = -1) -> tuple[int, int]:
        answer = self.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": token_hmac, "renew_period": period}, context)
        return int(answer["error_code"]), int(answer["expiry_timestamp"])

    def expire(self, token_hmac: bytes, context: RequestContext, period: int = -1) -> tuple[int, int]:
        answer = self.call(ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": token_hmac, "expiry_time_period": period}, context)
        return int(answer["error_code"]), int(answer["expiry_timestamp"])

    def describe(self, context: RequestContext, owners: list[str] | None = None) -> tuple[int, list[str]]:
        values = {"owners": None if owners is None else [{"principal_type": o.split(":", 1)[0], "principal_name": o.split(":", 1)[1]} for o in owners]}
        answer = self.call(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, values, context)
        return int(answer["error_code"]), sorted(t["token_id"] for t in answer["tokens"])


def _refusal(answer: dict[str, Any]) -> tuple[Any, ...]:
    return (
        answer["error_code"],
        f"{answer['principal_type']}:{answer['principal_name']}",
        f"{answer['token_requester_principal_type']}:{answer['token_requester_principal_name']}",
        answer["issue_timestamp"],
        answer["expiry_timestamp"],
        answer["max_timestamp"],
        answer["token_id"],
        answer["hmac"],
    )


@pytest.mark.parametrize(
    ("context", "owner", "renewers"),
    [
        pytest.param(ctx("n" * 32763), (None, None), (), id="owner-of-32768-bytes"),
        pytest.param(ctx("admin"), ("User", "n" * 32763), (), id="named-owner-of-32768-bytes"),
        pytest.param(ctx("alice"), (None, None), ("User:" + "n" * 32763,), id="renewer-of-32768-bytes"),
    ],
)
def test_a_principal_a_token_record_cannot_hold_is_kafkas_unexpected_error(context: RequestContext, owner: tuple[str | None, str | None], renewers: tuple[str, ...]) -> None:
    """DelegationTokenRecord's strings (`Type:name`) hold at most 32767 bytes: Kafka's controller fails writing it."""
    tokens = Tokens()
    answer = tokens.create(context, owner=owner, renewers=renewers)
    assert _refusal(answer) == (ErrorCode.unknown_server_error, str(ANONYMOUS), str(ANONYMOUS), -1, -1, -1, "", b"")
    assert not tokens.image.delegation_tokens
    assert tokens.create(ctx("n" * 32762))["error_code"] == ErrorCode.none  # User: and 32762 bytes: 32767


def test_a_token_for_oneself_gets_kafkas_lifetimes_and_the_hmac_of_its_id() -> None:
    tokens = Tokens()
    answer = tokens.create(ctx("alice"))
    assert answer["error_code"] == ErrorCode.none
    assert (answer["principal_name"], answer["token_requester_principal_name"]) == ("alice", "alice")
    assert (answer["issue_timestamp"], answer["expiry_timestamp"], answer["max_timestamp"]) == (
        NOW,
        NOW + DEFAULT_EXPIRY_TIME_MS,
        NOW + DEFAULT_MAX_LIFETIME_MS,
    )
    token_id = answer["token_id"]
    assert kafka_uuid.parse_problem(token_id) is None and not token_id.startswith("-")
    assert answer["hmac"] == hmac.new(SECRET.encode(), token_id.encode(), hashlib.sha512).digest()
    assert tokens.image.delegation_tokens[token_id].owner == Principal("User", "alice")


@pytest.mark.parametrize(("asked", "lifetime"), [(3_600_000, 3_600_000), (0, DEFAULT_MAX_LIFETIME_MS), (-5, DEFAULT_MAX_LIFETIME_MS), (2**62, DEFAULT_MAX_LIFETIME_MS)])
def test_the_max_lifetime_asked_is_capped_by_the_configured_one(asked: int, lifetime: int) -> None:
    answer = Tokens().create(ctx("alice"), lifetime=asked)
    assert answer["max_timestamp"] == NOW + lifetime
    assert answer["expiry_timestamp"] == NOW + min(lifetime, DEFAULT_EXPIRY_TIME_MS)


def test_a_token_for_another_owner_needs_create_tokens_on_that_user() -> None:
    tokens = Tokens(grant("User:alice", Operation.CREATE_TOKENS, ResourceType.USER, "User:bob"))
    refused = tokens.create(ctx("carol"), owner=("User", "bob"))
    assert _refusal(refused) == (ErrorCode.delegation_token_authorization_failed, "User:bob", "User:carol", -1, -1, -1, "", b"")
    # a super user is allowed everything an ACL could grant
    assert tokens.create(ctx("admin"), owner=("User", "bob"))["error_code"] == ErrorCode.none
    made = tokens.create(ctx("alice"), owner=("User", "bob"))
    assert (made["error_code"], made["principal_name"], made["token_requester_principal_name"]) == (ErrorCode.none, "bob", "alice")
    # naming oneself as owner asks no ACL; an empty name means oneself
    assert tokens.create(ctx("carol"), owner=("User", "carol"))["error_code"] == ErrorCode.none
    assert tokens.create(ctx("carol"), owner=("Group", ""))["principal_type"] == "User"


def test_an_owner_name_without_a_type_is_kafkas_unexpected_error() -> None:
    answer = Tokens().create(ctx("alice"), owner=(None, "bob"))
    assert _refusal(answer) == (ErrorCode.unknown_server_error, str(ANONYMOUS), str(ANONYMOUS), -1, -1, -1, "", b"")


@pytest.mark.parametrize(
    "context",
    [
        pytest.param(ctx("alice", token=True), id="token-authenticated-forwarded"),
        pytest.param(ctx("alice", token=True, forwarded=False), id="token-authenticated-direct"),
        pytest.param(ctx("alice", forwarded=False, protocol="PLAINTEXT"), id="direct-plaintext"),
        pytest.param(ctx("ANONYMOUS", forwarded=False, protocol="SSL"), id="direct-one-way-ssl"),
    ],
)
def test_token_requests_are_not_allowed_from_a_token_login_or_an_unauthenticated_channel(context: RequestContext) -> None:
    tokens = Tokens()
    made = tokens.create(ctx("alice"))
    refused = tokens.create(context)
    assert _refusal(refused)[0] == ErrorCode.delegation_token_request_not_allowed and refused["issue_timestamp"] == -1
    assert tokens.renew(made["hmac"], context) == (ErrorCode.delegation_token_request_not_allowed, -1)
    assert tokens.expire(made["hmac"], context) == (ErrorCode.delegation_token_request_not_allowed, -1)
    assert tokens.describe(context)[0] == ErrorCode.delegation_token_request_not_allowed
    assert len(tokens.image.delegation_tokens) == 1


def test_a_forwarded_request_is_judged_by_its_principal_not_by_the_controller_channel() -> None:
    """ControllerApis allows forwarded requests whatever the forwarder's channel; only a token login is refused."""
    assert Tokens().create(ctx("alice", protocol="PLAINTEXT"))["error_code"] == ErrorCode.none
    # a broker (DescribeDelegationToken) refuses a PLAINTEXT channel always
    assert Tokens().describe(ctx("alice", protocol="PLAINTEXT", forwarded=False))[0] == ErrorCode.delegation_token_request_not_allowed


def test_without_a_secret_key_tokens_are_disabled() -> None:
    tokens = Tokens(settings=TokenSettings())
    answer = tokens.create(ctx("alice"))
    assert _refusal(answer) == (ErrorCode.delegation_token_auth_disabled, "User:alice", "User:alice", 0, 0, 0, "", b"")
    assert tokens.renew(b"\x01" * 64, ctx("alice")) == (ErrorCode.delegation_token_auth_disabled, 0)
    assert tokens.expire(b"\x01" * 64, ctx("alice")) == (ErrorCode.delegation_token_auth_disabled, 0)
    assert tokens.describe(ctx("alice", forwarded=False)) == (ErrorCode.delegation_token_auth_disabled, [])
    # the ControllerApis checks come first
    assert tokens.create(ctx("alice"), owner=("User", "bob"))["error_code"] == ErrorCode.delegation_token_authorization_failed


def test_a_metadata_version_before_3_6_iv2_does_not_support_tokens() -> None:
    tokens = Tokens(metadata_version=13)
    assert tokens.create(ctx("alice"))["error_code"] == ErrorCode.unsupported_version
    assert tokens.renew(b"x", ctx("alice")) == (ErrorCode.unsupported_version, 0)


def test_renewers_must_be_users() -> None:
    tokens = Tokens()
    answer = tokens.create(ctx("alice"), renewers=("User:bob", "Group:ops"))
    assert _refusal(answer) == (ErrorCode.invalid_principal_type, "User:alice", "User:alice", 0, 0, 0, "", b"")
    assert tokens.create(ctx("alice"), renewers=("user:bob",))["error_code"] == ErrorCode.invalid_principal_type  # the type is case-sensitive
    assert not tokens.image.delegation_tokens


def test_only_the_owner_or_a_renewer_renews_and_never_past_the_max_time() -> None:
    tokens = Tokens()
    made = tokens.create(ctx("alice"), renewers=("User:bob",), lifetime=10_000)
    token = made["hmac"]
    tokens.clock.now += 1000
    assert tokens.renew(token, ctx("bob"), period=2000) == (ErrorCode.none, NOW + 3000)
    assert tokens.renew(token, ctx("alice"), period=60_000) == (ErrorCode.none, NOW + 10_000)  # capped by the max time
    assert tokens.renew(token, ctx("carol")) == (ErrorCode.delegation_token_owner_mismatch, 0)
    assert tokens.renew(token, ctx("admin")) == (ErrorCode.delegation_token_owner_mismatch, 0)  # a super user is no owner
    assert tokens.renew(token, ctx("alice", kind="Group")) == (ErrorCode.delegation_token_owner_mismatch, 0)
    assert tokens.renew(b"\x00" * 64, ctx("alice")) == (ErrorCode.delegation_token_not_found, 0)
    assert tokens.renew(b"", ctx("alice")) == (ErrorCode.delegation_token_not_found, 0)
    assert tokens.image.delegation_tokens[made["token_id"]].expiry_ms == NOW + 10_000


def test_an_expired_token_cannot_be_renewed_and_the_check_comes_before_the_owner() -> None:
    tokens = Tokens()
    token = tokens.create(ctx("alice"), lifetime=5000)["hmac"]
    tokens.clock.now += 5001
    assert tokens.renew(token, ctx("alice")) == (ErrorCode.delegation_token_expired, 0)
    assert tokens.renew(token, ctx("carol")) == (ErrorCode.delegation_token_expired, 0)
    assert tokens.expire(token, ctx("carol")) == (ErrorCode.delegation_token_owner_mismatch, 0)  # expire asks the owner first
    assert tokens.expire(token, ctx("alice"), period=10) == (ErrorCode.delegation_token_expired, 0)
    assert tokens.expire(token, ctx("alice")) == (ErrorCode.none, tokens.clock.now)  # a negative period removes it anyway
    assert not tokens.image.delegation_tokens


def test_expire_with_a_period_moves_the_expiry_and_a_negative_one_removes_the_token() -> None:
    tokens = Tokens()
    made = tokens.create(ctx("alice"), renewers=("User:bob",), lifetime=100_000)
    assert tokens.expire(made["hmac"], ctx("bob"), period=500) == (ErrorCode.none, NOW + 500)
    assert tokens.expire(made["hmac"], ctx("alice"), period=2**63 - 1) == (ErrorCode.none, NOW + 100_000)  # saturates, then the max time
    assert tokens.expire(made["hmac"], ctx("alice"), period=0) == (ErrorCode.none, NOW)
    assert tokens.expire(made["hmac"], ctx("carol")) == (ErrorCode.delegation_token_owner_mismatch, 0)
    assert tokens.expire(made["hmac"], ctx("bob"), period=-1) == (ErrorCode.none, NOW)
    assert tokens.renew(made["hmac"], ctx("alice")) == (ErrorCode.delegation_token_not_found, 0)


def test_the_sweep_removes_only_tokens_past_their_expiry_or_max_time() -> None:
    tokens = Tokens()
    short = tokens.create(ctx("alice"), lifetime=1000)["token_id"]
    long = tokens.create(ctx("alice"))["token_id"]
    assert tokens.handlers.tokens.sweep() == 0
    tokens.clock.now += 1000
    assert tokens.handlers.tokens.sweep() == 0  # at its max time, not past it
    tokens.clock.now += 1
    assert tokens.handlers.tokens.sweep() == 1
    assert list(tokens.image.delegation_tokens) == [long] and short not in tokens.image.delegation_tokens
    assert tokens.image.changes[-1].api == "SweepExpiredDelegationTokens"


def test_describe_shows_a_caller_its_own_renewable_and_permitted_tokens() -> None:
    tokens = Tokens(
        grant("User:dave", Operation.DESCRIBE_TOKENS, ResourceType.USER, "User:alice"),
        grant("User:erin", Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "*"),
    )
    alices = tokens.create(ctx("alice"), renewers=("User:bob",))["token_id"]
    for_bob = tokens.create(ctx("admin"), owner=("User", "bob"))["token_id"]
    assert tokens.describe(ctx("alice", forwarded=False)) == (ErrorCode.none, [alices])
    assert tokens.describe(ctx("bob", forwarded=False)) == (ErrorCode.none, sorted([alices, for_bob]))  # renewer, owner
    assert tokens.describe(ctx("admin", forwarded=False)) == (ErrorCode.none, sorted([alices, for_bob]))  # the requester (KIP-373); a super user
    assert tokens.describe(ctx("carol", forwarded=False)) == (ErrorCode.none, [])
    assert tokens.describe(ctx("dave", forwarded=False)) == (ErrorCode.none, [alices])
    assert tokens.describe(ctx("erin", forwarded=False)) == (ErrorCode.none, sorted([alices, for_bob]))
    # owners filter by owner, requester or renewer; an empty list asks for nothing
    assert tokens.describe(ctx("admin", forwarded=False), owners=["User:alice"]) == (ErrorCode.none, [alices])
    assert tokens.describe(ctx("admin", forwarded=False), owners=["User:bob"]) == (ErrorCode.none, sorted([alices, for_bob]))
    assert tokens.describe(ctx("admin", forwarded=False), owners=[]) == (ErrorCode.none, [])


def test_described_tokens_carry_everything_kafka_shows() -> None:
    tokens = Tokens()
    made = tokens.create(ctx("admin"), owner=("User", "bob"), renewers=("User:carol", "User:carol"))
    body = build_entity(request_schema(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3), {"owners": None})
    (token,) = tokens.handlers.by_key[ApiKey.DESCRIBE_DELEGATION_TOKEN](body, ctx("admin", forwarded=False))["tokens"]
    assert token == {
        "principal_type": "User",
        "principal_name": "bob",
        "token_requester_principal_type": "User",
        "token_requester_principal_name": "admin",
        "issue_timestamp": NOW,
        "expiry_timestamp": NOW + DEFAULT_EXPIRY_TIME_MS,
        "max_timestamp": NOW + DEFAULT_MAX_LIFETIME_MS,
        "token_id": made["token_id"],
        "hmac": made["hmac"],
        "renewers": [{"principal_type": "User", "principal_name": "carol"}] * 2,
    }


def test_tokens_survive_a_restart_and_keep_their_hmac(tmp_path: Path) -> None:
    tokens = Tokens()
    made = tokens.create(ctx("alice"), renewers=("User:bob",))
    store = MetadataStore(tmp_path)
    store.save(tokens.image, [])
    assert "hmac" not in json.dumps(json.loads((tmp_path / "metadata.json").read_text())["delegationTokens"]).lower()
    again = MetadataImage()
    MetadataStore(tmp_path).load(again)
    assert again.delegation_tokens == tokens.image.delegation_tokens
    restarted = Tokens()
    restarted.image.delegation_tokens.update(again.delegation_tokens)
    assert restarted.renew(made["hmac"], ctx("bob"), period=1000) == (ErrorCode.none, NOW + 1000)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delegation.token.max.lifetime.ms", "0"),
        ("delegation.token.expiry.time.ms", "-1"),
        ("delegation.token.expiry.check.interval.ms", "soon"),
        ("delegation.token.max.lifetime.ms", str(2**63)),
    ],
)
def test_token_settings_are_checked_as_kafka_checks_them(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_controller_config({**controller_properties(), key: value})
    assert raised.value.key == key


def test_an_empty_secret_key_disables_tokens_and_check_config_hides_the_key() -> None:
    assert parse_controller_config({**controller_properties(), "delegation.token.secret.key": ""}).tokens.enabled is False
    config = parse_controller_config({**controller_properties(), "delegation.token.secret.key": "s3cret", "delegation.token.expiry.time.ms": "5"})
    assert (config.tokens.secret_key, config.tokens.expiry_time_ms, config.tokens.max_lifetime_ms) == ("s3cret", 5, DEFAULT_MAX_LIFETIME_MS)
    assert config.effective()["delegation.token.secret.key"] == "[hidden]" and "s3cret" not in json.dumps(config.effective(), default=str)


def _envelope(port: int, principal: Principal, api: ApiKey, version: int, values: dict[str, Any]) -> Any:
    with wire.connect(f"127.0.0.1:{port}") as sock:
        assert wire.sasl_plain_login(sock, "proxy", "proxy-secret") == 0
        inner = wire.request(api, version, values, correlation_id=41)
        error, data = unwrap(wire.exchange(sock, wrap(inner, principal, "127.0.0.1", correlation_id=6)))
        assert error == ErrorCode.none and data is not None
        return decode_response_body(api, version, data)[1]


async def test_the_controller_sweeps_expired_tokens_durably_and_refuses_a_token_login(nursery: Any, tmp_path: Path) -> None:
    port = free_port()
    props = {
        **controller_properties(port=port),
        "delegation.token.secret.key": SECRET,
        "delegation.token.expiry.check.interval.ms": "50",
        "metadata.log.dir": str(tmp_path),
    }
    controller = EmbeddedController(parse_controller_config(props))
    await nursery.start(controller.run)
    create: dict[str, Any] = {"owner_principal_type": None, "owner_principal_name": None, "renewers": [], "max_lifetime": 1}
    made = await trio.to_thread.run_sync(_envelope, port, Principal("User", "alice"), ApiKey.CREATE_DELEGATION_TOKEN, 3, create)
    assert made.error_code == ErrorCode.none and made.max_timestamp == made.issue_timestamp + 1
    refused = await trio.to_thread.run_sync(_envelope, port, Principal("User", "alice", token_authenticated=True), ApiKey.CREATE_DELEGATION_TOKEN, 3, create)
    assert (refused.error_code, refused.expiry_timestamp) == (ErrorCode.delegation_token_request_not_allowed, -1)
    with trio.fail_after(5):
        while controller.image.delegation_tokens:
            await trio.sleep(0.02)
    with trio.fail_after(5):
        while json.loads((tmp_path / "metadata.json").read_text()).get("delegationTokens"):
            await trio.sleep(0.02)
