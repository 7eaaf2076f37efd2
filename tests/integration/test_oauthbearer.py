"""SASL/OAUTHBEARER end to end on loopback (no identity provider): a JWKS served by a loopback trio HTTP server, tokens
signed with cryptography and PyJWT, confluent-kafka logging in with its `oauth_cb`, and the proxy's own OAUTHBEARER login
to an embedded controller that validates it the same way."""

import json
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import EmbeddedStack, controller_properties, start_stack
from proxy.config import parse_proxy_config
from proxy.net.addresses import ControllerAddress
from proxy.net.sasl.jaas import OAUTHBEARER_LOGIN_MODULE
from proxy.net.sasl.oauth.exchange import build_client_first
from proxy.net.sasl.oauth.login import OAuthTokenProvider
from proxy.net.sasl.oauth.mechanism import OAuthBearerServer
from proxy.net.sasl.oauth.settings import ALLOWED_URLS_PROPERTY
from proxy.properties import ConfigError
from proxy.upstream.pool import ControllerPool
from proxy.upstream.settings import UpstreamSettings
from tests.integration.conftest import audit_records
from tests.proxy.net.sasl.oauth_fixtures import (
    AUDIENCE,
    ISSUER,
    Answer,
    LoopbackHttp,
    Request,
    SigningKey,
    claims,
    jwks,
    rsa_key,
    start_http,
)

TIMEOUT = 30
MECHANISM = "OAUTHBEARER"
JAAS = f"{OAUTHBEARER_LOGIN_MODULE} required;"


class Jwks:
    def __init__(self, *keys: SigningKey) -> None:
        self.body = jwks(*keys)

    def __call__(self, request: Request) -> Answer:
        return Answer(200, self.body)


def _validation(url: str, listener: str = "client") -> dict[str, str]:
    prefix = f"listener.name.{listener}.oauthbearer."
    return {
        f"{prefix}sasl.jaas.config": JAAS,
        f"{prefix}sasl.oauthbearer.jwks.endpoint.url": url,
        f"{prefix}sasl.oauthbearer.expected.audience": AUDIENCE,
        f"{prefix}sasl.oauthbearer.expected.issuer": ISSUER,
    }


def _proxy_overrides(url: str) -> dict[str, str]:
    return {
        "listener.name.client.sasl.enabled.mechanisms": MECHANISM,
        **_validation(url),
        ALLOWED_URLS_PROPERTY: url,
    }


@pytest.fixture
async def idp(nursery: Any) -> tuple[LoopbackHttp, SigningKey]:
    key = rsa_key("proxy-test")
    return await start_http(nursery, Jwks(key)), key


@pytest.fixture
async def oauth_stack(nursery: Any, tmp_path: Path, idp: tuple[LoopbackHttp, SigningKey]) -> EmbeddedStack:
    server, _ = idp
    return await start_stack(nursery, tmp_path / "audit", proxy_overrides=_proxy_overrides(f"{server.url}/certs"))


def _oauth_config(stack: EmbeddedStack, token: str) -> dict[str, Any]:
    def oauth_cb(_config: str) -> tuple[str, float]:
        return token, time.time() + 300

    return {
        "bootstrap.servers": stack.sasl_address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": MECHANISM,
        "oauth_cb": oauth_cb,
    }


def _admin_config(stack: EmbeddedStack) -> dict[str, str]:
    return {"bootstrap.servers": stack.proxy.address("PLAIN")}


async def test_confluent_kafka_creates_a_topic_with_a_token(oauth_stack: EmbeddedStack, idp: tuple[LoopbackHttp, SigningKey], tmp_path: Path) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType

    _, key = idp
    token = key.sign(claims("svc-orders"))

    def work() -> None:
        grant = AclBinding(
            ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:svc-orders", "*", AclOperation.CREATE, AclPermissionType.ALLOW
        )
        admin = AdminClient({**_oauth_config(oauth_stack, key.sign(claims("admin")))})
        for future in admin.create_acls([grant]).values():
            future.result(timeout=TIMEOUT)
        client = AdminClient(_oauth_config(oauth_stack, token))
        for future in client.create_topics([NewTopic("oauth-topic", 1, 1)]).values():
            future.result(timeout=TIMEOUT)

    await trio.to_thread.run_sync(work)
    seen = [(c.api, c.principal, c.forwarded_by, c.resource, c.error_code) for c in oauth_stack.controller.image.changes]
    assert ("CreateTopics", "User:svc-orders", "User:proxy", "topic:oauth-topic", 0) in seen
    intent = next(r for r in audit_records(tmp_path / "audit") if r["subject"] == "topic:oauth-topic" and r["data"]["stage"] == "intent")
    assert intent["data"]["authenticationInfo"]["principal"] == "User:svc-orders"
    assert intent["data"]["authenticationInfo"]["mechanism"] == MECHANISM


@pytest.mark.parametrize(
    "bad",
    ["expired", "wrong audience", "unknown key", "garbage"],
)
async def test_a_bad_token_is_invalid_token_then_sasl_authentication_failed(
    oauth_stack: EmbeddedStack, idp: tuple[LoopbackHttp, SigningKey], bad: str
) -> None:
    _, key = idp
    token = {
        "expired": key.sign(claims("alice", now=time.time() - 3600)),
        "wrong audience": key.sign(claims("alice", aud="someone-else")),
        "unknown key": rsa_key("stranger").sign(claims("alice")),
        "garbage": "not.a.token",
    }[bad]

    def work() -> tuple[int, bytes, int]:
        sock = wire.connect(oauth_stack.sasl_address)
        try:
            assert wire.sasl_handshake(sock, MECHANISM) == 0
            first = wire.sasl_authenticate(sock, build_client_first(token), 2)
            second = wire.sasl_authenticate(sock, b"\x01", 3)
            return int(first.error_code), bytes(first.auth_bytes), int(second.error_code)
        finally:
            sock.close()

    first_code, challenge, final_code = await trio.to_thread.run_sync(work)
    assert first_code == 0 and json.loads(challenge)["status"] == "invalid_token"
    assert final_code == ErrorCode.sasl_authentication_failed


async def test_confluent_kafka_with_a_bad_token_gets_an_authentication_error(
    oauth_stack: EmbeddedStack, idp: tuple[LoopbackHttp, SigningKey]
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    _, key = idp
    token = key.sign(claims("alice", aud="someone-else"))

    def work() -> str:
        client = AdminClient({**_oauth_config(oauth_stack, token), "socket.timeout.ms": 5000})
        try:
            client.list_topics(timeout=5)
        except KafkaException as exc:
            return str(exc)
        return "listed"

    outcome = await trio.to_thread.run_sync(work)
    assert outcome != "listed"


def test_check_config_shows_the_effective_oauthbearer_settings(tmp_path: Path) -> None:
    url = "https://idp.example.com/realms/kafka/protocol/openid-connect/certs"
    props = {
        **controller_properties(),
        "node.id": "100",
        "listeners": "CLIENT://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
        "sasl.mechanism.controller.protocol": MECHANISM,
        "listener.name.controller.oauthbearer.sasl.jaas.config": f'{OAUTHBEARER_LOGIN_MODULE} required clientId="proxy" clientSecret="s3cret" scope="kafka";',
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token",
        "audit.log.dir": str(tmp_path),
        **_proxy_overrides(url),
        ALLOWED_URLS_PROPERTY: f"{url},https://idp.example.com/token",
    }
    for key in ("listener.name.controller.plain.sasl.jaas.config", "process.roles", "sasl.enabled.mechanisms"):
        props.pop(key, None)
    props["listener.name.client.sasl.enabled.mechanisms"] = MECHANISM
    config = parse_proxy_config(props)
    (listener,) = config.listeners
    assert isinstance(listener.sasl_servers[MECHANISM], OAuthBearerServer)
    shown = json.dumps(config.effective())
    assert "s3cret" not in shown
    effective = config.effective()
    client = effective["listeners"][0]
    assert client["sasl.oauthbearer.jwks.endpoint.url"] == url
    assert client["sasl.oauthbearer.expected.audience"] == [AUDIENCE]
    assert isinstance(config.upstream.login, OAuthTokenProvider)
    assert "[hidden]" in shown and '"clientId": "proxy"' in shown


def test_an_unlisted_jwks_url_is_a_configuration_error(tmp_path: Path) -> None:
    overrides = _proxy_overrides("https://idp.example.com/certs")
    overrides[ALLOWED_URLS_PROPERTY] = ""
    from envelope_proxy.embedded import proxy_properties

    with pytest.raises(ConfigError, match=r"allowed\.urls"):
        parse_proxy_config({**proxy_properties(9093, tmp_path), **overrides})


async def test_listeners_with_identical_settings_share_one_jwks_cache(tmp_path: Path) -> None:
    from envelope_proxy.embedded import proxy_properties

    url = "https://idp.example.com/certs"
    props = {
        **proxy_properties(9093, tmp_path),
        **_proxy_overrides(url),
        **_validation(url, "other"),
        "listeners": "CLIENT://127.0.0.1:0,OTHER://127.0.0.1:0,PLAIN://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,OTHER:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "listener.name.other.sasl.enabled.mechanisms": MECHANISM,
    }
    config = parse_proxy_config(props)
    servers = [listener.sasl_servers[MECHANISM] for listener in config.listeners if MECHANISM in listener.sasl_servers]
    assert len(servers) == 2
    assert all(isinstance(server, OAuthBearerServer) for server in servers)
    first, second = servers
    assert isinstance(first, OAuthBearerServer) and isinstance(second, OAuthBearerServer)
    assert first is not second and first.cache is second.cache


async def test_the_proxy_logs_in_to_the_controller_with_oauthbearer(nursery: Any, tmp_path: Path, idp: tuple[LoopbackHttp, SigningKey]) -> None:
    """The embedded controller validates OAUTHBEARER with the same module; the proxy's token comes from a `file:`
    token endpoint (Kafka's FileJwtRetriever), fetched on the first login."""
    server, key = idp
    url = f"{server.url}/certs"
    token_file = tmp_path / "proxy.jwt"
    token_file.write_text(key.sign(claims("proxy")))
    controller_props = {
        **controller_properties(),
        "sasl.enabled.mechanisms": MECHANISM,
        **_validation(url, "controller"),
        ALLOWED_URLS_PROPERTY: url,
    }
    controller = EmbeddedController(parse_controller_config(controller_props))
    (bound,) = await nursery.start(controller.run)
    token_url = token_file.resolve().as_uri()
    from proxy.properties import Properties
    from proxy.upstream.login import parse_upstream_login

    login = parse_upstream_login(
        Properties(
            {
                "sasl.mechanism.controller.protocol": MECHANISM,
                "listener.name.controller.oauthbearer.sasl.jaas.config": JAAS,
                "sasl.oauthbearer.token.endpoint.url": token_url,
                ALLOWED_URLS_PROPERTY: token_url,
            }
        ),
        "CONTROLLER",
        "SASL_PLAINTEXT",
    )
    assert isinstance(login, OAuthTokenProvider) and login.user is None
    upstream = ControllerPool(UpstreamSettings((ControllerAddress("127.0.0.1", bound.port),), "SASL_PLAINTEXT", login=login, backoff_initial=0.05))
    await nursery.start(upstream.run)
    with trio.fail_after(10):
        while not upstream.connected:
            await trio.sleep(0.02)
    assert login.user == "proxy"


async def test_a_tokens_expiry_caps_the_session_and_a_fresh_token_re_authenticates(
    nursery: Any, tmp_path: Path, idp: tuple[LoopbackHttp, SigningKey]
) -> None:
    """KIP-368 with OAUTHBEARER: the session lasts until the token expires (connections.max.reauth.ms is larger), a
    request after that closes the connection, and a re-authentication with a fresh token for the same subject renews it."""
    server, key = idp
    overrides = {**_proxy_overrides(f"{server.url}/certs"), "listener.name.client.oauthbearer.connections.max.reauth.ms": "600000"}
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=overrides)

    def sessions() -> tuple[float, float, int, bool]:
        sock = wire.connect(stack.sasl_address)
        assert wire.sasl_handshake(sock, MECHANISM) == 0
        first = wire.sasl_authenticate(sock, build_client_first(key.sign(claims("alice", lifetime=3))), 2)
        time.sleep(1.1)  # re-authentications may begin once a second
        assert wire.sasl_handshake(sock, MECHANISM, 3) == 0
        renewed = wire.sasl_authenticate(sock, build_client_first(key.sign(claims("alice", lifetime=60))), 4)
        assert int(renewed.error_code) == 0
        time.sleep(2.2)  # the first token has expired; the renewed session has not
        served = wire.call(sock, ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}, correlation_id=5)
        other = wire.connect(stack.sasl_address)
        assert wire.sasl_handshake(other, MECHANISM) == 0
        assert int(wire.sasl_authenticate(other, build_client_first(key.sign(claims("alice", lifetime=2))), 2).error_code) == 0
        time.sleep(2.5)
        other.sendall(wire.encode_frame(wire.request(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}, 3)))
        return first.session_lifetime.total_seconds(), renewed.session_lifetime.total_seconds(), int(served.error_code), wire.is_closed(other)

    first, renewed, served, expired_closed = await trio.to_thread.run_sync(sessions)
    assert 1.0 < first <= 3.0  # the token's remaining life, not the listener's 600 s
    assert 50.0 < renewed <= 60.0
    assert served == 0 and expired_closed
    reasons = [r["data"]["connection"]["cause"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "disconnected"]
    assert "session-expired" in reasons


async def test_the_audit_names_the_proxys_oauthbearer_principal(nursery: Any, tmp_path: Path, idp: tuple[LoopbackHttp, SigningKey]) -> None:
    """Forwarded requests name the proxy by its token's subject (it is known only once the proxy logged in), not
    User:ANONYMOUS."""
    server, key = idp
    url = f"{server.url}/certs"
    token_file = tmp_path / "proxy.jwt"
    token_file.write_text(key.sign(claims("proxy")))
    token_url = token_file.resolve().as_uri()
    controller = {"sasl.enabled.mechanisms": MECHANISM, **_validation(url, "controller"), ALLOWED_URLS_PROPERTY: url}
    proxy = {
        "sasl.mechanism.controller.protocol": MECHANISM,
        "listener.name.controller.oauthbearer.sasl.jaas.config": JAAS,
        "sasl.oauthbearer.token.endpoint.url": token_url,
        ALLOWED_URLS_PROPERTY: token_url,
    }
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=proxy, controller_overrides=controller)

    def create() -> int:
        sock = wire.connect(stack.sasl_address)
        assert wire.sasl_plain_login(sock, "admin", "admin-secret") == 0
        values = {"topics": [{"name": "named", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False}
        return int(wire.call(sock, ApiKey.CREATE_TOPICS, 5, values, correlation_id=3).topics[0].error_code)

    assert await trio.to_thread.run_sync(create) == 0
    records = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["methodName"] == "kafka.CreateTopics"]
    assert {r["stage"] for r in records} == {"intent", "outcome"}
    assert {r["forwardingPrincipal"] for r in records} == {"User:proxy"}
