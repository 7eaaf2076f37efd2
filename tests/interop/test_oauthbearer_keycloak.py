"""OAUTHBEARER against a real identity provider (Keycloak, tests/interop/keycloak.py): its tokens validate through
the proxy's validator against the realm's JWKS URL, key rotation is followed without a restart, and the proxy's own
client-credentials login gets its tokens there. Marker `interop`."""

import functools
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import jwt
import pytest
import trio

from devkit.kafka_jars import ensure_kafka_jars, java_command
from devkit.kafka_node import KafkaNode
from devkit.processes import free_port
from envelope_proxy.embedded import proxy_properties, start_stack
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from proxy.net.sasl.mechanisms import AuthenticationFailed
from proxy.net.sasl.oauth.exchange import CONTROL_A, INVALID_TOKEN, build_client_first
from proxy.net.sasl.oauth.jwks import JwksCache
from proxy.net.sasl.oauth.login import OAuthLoginError, OAuthTokenProvider
from proxy.net.sasl.oauth.mechanism import OAuthValidation
from proxy.net.sasl.oauth.settings import ALLOWED_URLS_PROPERTY, parse_oauth_login_settings, parse_validation_settings
from tests.audit_records import records_under
from tests.interop.conftest import _kafka_lib
from tests.interop.keycloak import Keycloak, KeycloakClient

pytestmark = pytest.mark.interop

REALM = "kafka-oauthbearer"  # a realm of its own in the run's Keycloak
AUDIENCE = "kafka-cluster"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
T = TypeVar("T")


@pytest.fixture(scope="module")
def keycloak(keycloak_server: Keycloak) -> Keycloak:
    """The run's Keycloak, with this suite's realm."""
    keycloak_server.create_realm(REALM, access_token_lifespan=300)
    return keycloak_server


@pytest.fixture(scope="module")
def client(keycloak: Keycloak) -> KeycloakClient:
    return keycloak.create_client(REALM, "proxy", "proxy-secret", audience=AUDIENCE)


async def _call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Keycloak's harness is synchronous: off the event loop, so the JWKS task keeps running."""
    return await trio.to_thread.run_sync(functools.partial(function, *args, **kwargs))


def _broker_properties(keycloak: Keycloak) -> dict[str, str]:
    """A broker's listener settings for OAUTHBEARER with this realm, as an operator writes them."""
    return {
        "listener.name.client.oauthbearer.sasl.jaas.config": f"{LOGIN_MODULE} required;",
        "listener.name.client.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "listener.name.client.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": keycloak.jwks_url(REALM),
        "listener.name.client.oauthbearer.sasl.oauthbearer.expected.audience": AUDIENCE,
        "listener.name.client.oauthbearer.sasl.oauthbearer.expected.issuer": keycloak.issuer(REALM),
    }


def _kafka_opts(*urls: str) -> dict[str, str]:
    return {"KAFKA_OPTS": f"-Xmx1g -D{ALLOWED_URLS_PROPERTY}={','.join(urls)}"}


async def _login(validation: OAuthValidation, token: str) -> tuple[bytes, str | None]:
    exchange = validation.exchange()
    challenge = exchange.evaluate(build_client_first(token))
    return challenge, exchange.user


async def test_a_keycloak_token_validates_to_the_service_accounts_principal(keycloak: Keycloak, client: KeycloakClient) -> None:
    settings = parse_validation_settings(_broker_properties(keycloak), "CLIENT", _kafka_opts(keycloak.jwks_url(REALM)))
    validation = OAuthValidation(settings)
    async with trio.open_nursery() as nursery:
        await nursery.start(validation.run)
        assert validation.cache.loaded, validation.cache.last_error
        token = await _call(keycloak.token, REALM, "proxy", "proxy-secret")
        challenge, user = await _login(validation, token)
        assert challenge == b"" and user == client.service_account_user_id  # Keycloak 25's sub: the service account's UUID
        validated = validation.validator.validate(token)
        assert validated.lifetime_ms == jwt.decode(token, options={"verify_signature": False})["exp"] * 1000
        # a token for another audience (the realm's own clients) is invalid_token, then 58 after %x01
        other = await _call(keycloak.create_client, REALM, "other", "other-secret", audience="another-cluster")
        foreign = await _call(keycloak.token, REALM, other.client_id, "other-secret")
        exchange = validation.exchange()
        assert exchange.evaluate(build_client_first(foreign)) == INVALID_TOKEN and "Audience" in (exchange.failure_reason or "")
        with pytest.raises(AuthenticationFailed, match="invalid_token"):
            exchange.evaluate(CONTROL_A)
        nursery.cancel_scope.cancel()


async def test_key_rotation_is_followed_without_a_restart(keycloak: Keycloak, client: KeycloakClient) -> None:
    settings = parse_validation_settings(_broker_properties(keycloak), "CLIENT", _kafka_opts(keycloak.jwks_url(REALM)))
    cache = JwksCache.from_settings(settings)
    validation = OAuthValidation(settings, cache=cache)
    async with trio.open_nursery() as nursery:
        await nursery.start(validation.run)
        old_token = await _call(keycloak.token, REALM, "proxy", "proxy-secret")
        assert (await _login(validation, old_token))[0] == b""

        new_kid = await _call(keycloak.rotate_keys, REALM)  # the old key turns passive, a new one signs
        new_token = await _call(keycloak.token, REALM, "proxy", "proxy-secret")
        assert jwt.get_unverified_header(new_token)["kid"] == new_kid
        assert (await _login(validation, new_token))[0] == INVALID_TOKEN  # unknown kid: refused at once, refresh started
        with trio.fail_after(15):
            while (await _login(validation, new_token))[0] != b"":
                await trio.sleep(0.2)
        assert (await _login(validation, new_token))[1] == client.service_account_user_id
        assert (await _login(validation, old_token))[0] == b""  # passive keys stay in the JWKS

        newest_kid = await _call(keycloak.rotate_keys, REALM, old="disabled")  # the older keys leave the JWKS
        newest_token = await _call(keycloak.token, REALM, "proxy", "proxy-secret")
        assert jwt.get_unverified_header(newest_token)["kid"] == newest_kid
        with trio.fail_after(15):
            while (await _login(validation, newest_token))[0] != b"":
                await trio.sleep(0.2)
        assert (await _login(validation, old_token))[0] == INVALID_TOKEN  # its key is gone after the refresh
        assert cache.refreshes >= 3
        nursery.cancel_scope.cancel()


async def test_the_proxys_client_credentials_login_gets_its_token_from_keycloak(keycloak: Keycloak, client: KeycloakClient) -> None:
    token_url = keycloak.token_url(REALM)
    props = {
        "sasl.mechanism.controller.protocol": "OAUTHBEARER",
        "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "listener.name.controller.oauthbearer.sasl.oauthbearer.token.endpoint.url": token_url,
        "listener.name.controller.oauthbearer.sasl.jaas.config": f'{LOGIN_MODULE} required clientId="proxy" clientSecret="proxy-secret" scope="profile";',
    }
    settings = parse_oauth_login_settings(props, "CONTROLLER", _kafka_opts(token_url))
    provider = OAuthTokenProvider(settings)
    validation = OAuthValidation(parse_validation_settings(_broker_properties(keycloak), "CLIENT", _kafka_opts(keycloak.jwks_url(REALM))))
    async with trio.open_nursery() as nursery:
        await nursery.start(validation.run)
        await nursery.start(provider.run)
        token = provider.current
        assert token is not None, provider.last_error
        # Keycloak's scope claim is one space-separated string, which Kafka keeps as a single scope
        assert token.principal_name == client.service_account_user_id and len(token.scopes) == 1 and set(next(iter(token.scopes)).split()) == {"profile", "email"}
        assert token.expiry_ms - (token.start_ms or 0) == 300_000
        # the exchange a controller link would run, checked by the proxy's own server side
        exchange = await provider.client_exchange()
        server = validation.exchange()
        assert exchange.respond(server.evaluate(exchange.initial())) is None and server.user == client.service_account_user_id
        # a forced refresh gives a new token
        refreshed = await provider.refresh()
        assert refreshed.value != token.value and provider.generation == 2
        nursery.cancel_scope.cancel()

    wrong = parse_oauth_login_settings(
        {**props, "listener.name.controller.oauthbearer.sasl.jaas.config": f'{LOGIN_MODULE} required clientId="proxy" clientSecret="wrong";'},
        "CONTROLLER",
        _kafka_opts(token_url),
    )
    with pytest.raises(OAuthLoginError, match=r"HTTP 401.*will not attempt further retries"):
        await OAuthTokenProvider(wrong).refresh()



async def test_confluent_kafka_logs_in_to_the_proxy_with_a_keycloak_token(
    keycloak: Keycloak, client: KeycloakClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """confluent-kafka's own OIDC login (`sasl.oauthbearer.method=oidc`, client credentials at the realm's token
    endpoint) logs in to a proxy whose listener validates against the realm's JWKS, and creates a topic on the
    embedded controller as User:<service account id>; a token for another audience is refused."""
    from confluent_kafka.admin import AdminClient, NewTopic

    monkeypatch.setenv("KAFKA_OPTS", _kafka_opts(keycloak.jwks_url(REALM))["KAFKA_OPTS"])
    principal = f"User:{client.service_account_user_id}"
    outsider = await _call(keycloak.create_client, REALM, "outsider", "outsider-secret", audience="somewhere-else")

    def oidc(address: str, client_id: str, secret: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": client_id,
            "sasl.oauthbearer.client.secret": secret,
            "sasl.oauthbearer.token.endpoint.url": keycloak.token_url(REALM),
            "socket.timeout.ms": 10000,
        }

    def work(address: str) -> list[str]:
        outcomes = []
        created = AdminClient(oidc(address, client.client_id, client.secret))
        for future in created.create_topics([NewTopic("keycloak-topic", 1, 1)]).values():
            future.result(timeout=30)
            outcomes.append("created")
        refused = AdminClient(oidc(address, outsider.client_id, outsider.secret))
        try:
            refused.list_topics(timeout=5)
            outcomes.append("outsider listed")
        except Exception as exc:
            outcomes.append(f"outsider refused: {type(exc).__name__}")
        return outcomes

    async with trio.open_nursery() as nursery:
        stack = await start_stack(
            nursery,
            tmp_path / "audit",
            proxy_overrides={"listener.name.client.sasl.enabled.mechanisms": "OAUTHBEARER", **_broker_properties(keycloak)},
            controller_overrides={"super.users": f"User:proxy;User:admin;{principal}"},
        )
        outcomes = await trio.to_thread.run_sync(work, stack.sasl_address)
        seen = [(c.api, c.principal, c.resource, c.error_code) for c in stack.controller.image.changes]
        nursery.cancel_scope.cancel()
    assert outcomes[0] == "created" and outcomes[1].startswith("outsider refused"), outcomes
    assert ("CreateTopics", principal, "topic:keycloak-topic", 0) in seen


REAUTH_REALM = "kafka-reauth"  # tokens that live 15 s: the sessions they open must be renewed
# librdkafka refreshes its token at 80% of its life and re-authenticates at 90% of the session's, so the new token
# is ready 10% of a lifetime (1.5 s here) before it is needed; with 8 s tokens that margin was 0.8 s, less than a
# Keycloak token request took on a loaded 2-core machine, and a session expired as it would on Kafka.
REAUTH_TOKEN_LIFESPAN = 15


async def test_token_expiry_forces_re_authentication_of_a_long_lived_connection(keycloak: Keycloak, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy caps each OAUTHBEARER session at its token's expiry (KIP-368, as Kafka does); confluent-kafka's OIDC
    login fetches a fresh token from Keycloak and re-authenticates its connection in time, so admin work goes on
    across several token lifetimes without a refused request or an expired session."""
    from confluent_kafka.admin import AdminClient, NewTopic

    await _call(keycloak.create_realm, REAUTH_REALM, access_token_lifespan=REAUTH_TOKEN_LIFESPAN)
    worker = await _call(keycloak.create_client, REAUTH_REALM, "worker", "worker-secret", audience=AUDIENCE)
    monkeypatch.setenv("KAFKA_OPTS", _kafka_opts(keycloak.jwks_url(REAUTH_REALM))["KAFKA_OPTS"])
    principal = f"User:{worker.service_account_user_id}"
    listener = {
        "listener.name.client.oauthbearer.sasl.jaas.config": f"{LOGIN_MODULE} required;",
        "listener.name.client.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": keycloak.jwks_url(REAUTH_REALM),
        "listener.name.client.oauthbearer.sasl.oauthbearer.expected.audience": AUDIENCE,
        "listener.name.client.oauthbearer.sasl.oauthbearer.expected.issuer": keycloak.issuer(REAUTH_REALM),
    }
    config = {
        "sasl.mechanism": "OAUTHBEARER",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": worker.client_id,
        "sasl.oauthbearer.client.secret": worker.secret,
        "sasl.oauthbearer.token.endpoint.url": keycloak.token_url(REAUTH_REALM),
    }

    def work(address: str) -> int:
        admin = AdminClient({**config, "bootstrap.servers": address})
        created = 0
        deadline = time.monotonic() + 2.3 * REAUTH_TOKEN_LIFESPAN  # two renewals, at about 0.9 and 1.8 lifetimes
        while time.monotonic() < deadline:
            name = f"long-lived-{created}"
            admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10)[name].result(timeout=20)
            created += 1
            time.sleep(1.0)
        return created

    audit = tmp_path / "audit"
    async with trio.open_nursery() as nursery:
        stack = await start_stack(
            nursery,
            audit,
            proxy_overrides={"listener.name.client.sasl.enabled.mechanisms": "OAUTHBEARER", **listener},
            controller_overrides={"super.users": f"User:proxy;User:admin;{principal}"},
        )
        created = await trio.to_thread.run_sync(work, stack.sasl_address)
        nursery.cancel_scope.cancel()
    records = [r["data"] for r in records_under(audit) if r["data"]["methodName"] == "kafka.Connection"]
    renewed = [r for r in records if r["stage"] == "reauthenticated"]
    assert created >= REAUTH_TOKEN_LIFESPAN  # one request a second or so, none refused (result() would raise)
    assert len(renewed) >= 2 and {r["authenticationInfo"]["principal"] for r in renewed} == {principal}
    assert not [r for r in records if r["stage"] == "disconnected" and r["connection"]["cause"] == "session-expired"]


# ------------------------------------------------ a Kafka 4.3.1 node validating the same realm, side by side


@pytest.fixture(scope="module")
def oauth_node(keycloak: Keycloak, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaNode, str]]:
    """A Kafka node with an OAUTH listener that validates this realm's tokens as a broker operator configures it
    (and its PLAIN listeners for the proxy and for admin); yields the node and the OAUTH listener's address."""
    broker, controller, oauth = (free_port() for _ in range(3))
    endpoints = f"BROKER://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller},OAUTH://127.0.0.1:{oauth}"
    extra = {
        "listeners": endpoints,
        "advertised.listeners": endpoints,
        "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,OAUTH:SASL_PLAINTEXT",
        "listener.name.oauth.sasl.enabled.mechanisms": "OAUTHBEARER",
        **{key.replace("listener.name.client.", "listener.name.oauth."): value for key, value in _broker_properties(keycloak).items()},
    }
    allowed = f"-D{ALLOWED_URLS_PROPERTY}={keycloak.jwks_url(REALM)},{keycloak.token_url(REALM)}"
    workdir = tmp_path_factory.mktemp("kafka-oauth")
    with KafkaNode(workdir=workdir, lib_dir=_kafka_lib("a Kafka node"), ports=(broker, controller), extra_properties=extra, jvm_options=(allowed,)) as node:
        yield node, f"127.0.0.1:{oauth}"


def _acl(principal: str, prefix: str, host: str) -> Any:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    return AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, principal, host, AclOperation.CREATE, AclPermissionType.ALLOW)


async def test_kafka_and_the_proxy_derive_the_same_principal_and_apply_the_same_host_and_user_acls(
    oauth_node: tuple[KafkaNode, str], keycloak: Keycloak, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Keycloak client logs in with OIDC to the node's OAUTH listener and to the proxy (validating the same realm)
    in front of that node. Kafka's authorizer sees the forwarded principal and address as it sees the direct client:
    a topic the User:<service account> ACL allows from 127.0.0.1 is created both ways, one allowed only from another
    host and one no ACL allows are refused both ways."""
    from confluent_kafka.admin import AdminClient, NewTopic

    node, oauth_address = oauth_node
    member = await _call(keycloak.create_client, REALM, "acl-member", "acl-member-secret", audience=AUDIENCE)
    principal = f"User:{member.service_account_user_id}"
    admin = AdminClient(node.client_config("admin"))
    bindings = [_acl(principal, "kc-", "127.0.0.1"), _acl(principal, "far-", "127.0.0.9")]

    def grant() -> None:
        for future in admin.create_acls(bindings, request_timeout=30).values():
            future.result()

    await trio.to_thread.run_sync(grant)
    monkeypatch.setenv("KAFKA_OPTS", _kafka_opts(keycloak.jwks_url(REALM))["KAFKA_OPTS"])
    config = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": member.client_id,
        "sasl.oauthbearer.client.secret": member.secret,
        "sasl.oauthbearer.token.endpoint.url": keycloak.token_url(REALM),
    }

    def outcomes(address: str, suffix: str) -> dict[str, str]:
        client = AdminClient({**config, "bootstrap.servers": address})
        seen = {}
        for prefix in ("kc-", "far-", "other-"):
            name = f"{prefix}{suffix}"
            try:
                client.create_topics([NewTopic(name, 1, 1)], request_timeout=15)[name].result(timeout=30)
                seen[prefix] = "created"
            except Exception as exc:
                seen[prefix] = exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else type(exc).__name__
        return seen

    audit = tmp_path / "audit"
    props = proxy_properties(int(node.controller_address.rsplit(":", 1)[1]), audit)
    props.update(node.proxy_upstream_properties())
    props.update({"read.bootstrap.servers": node.broker_address, "listener.name.client.sasl.enabled.mechanisms": "OAUTHBEARER", **_broker_properties(keycloak)})
    direct = await trio.to_thread.run_sync(outcomes, oauth_address, "direct")
    async with trio.open_nursery() as nursery:
        running = await nursery.start(run_proxy, parse_proxy_config(props))
        proxied = await trio.to_thread.run_sync(outcomes, running.address("CLIENT"), "proxied")
        nursery.cancel_scope.cancel()
    assert direct == {"kc-": "created", "far-": "TOPIC_AUTHORIZATION_FAILED", "other-": "TOPIC_AUTHORIZATION_FAILED"}
    assert proxied == direct
    intents = [r["data"] for r in records_under(audit) if r["data"]["stage"] == "intent"]
    assert {r["authenticationInfo"]["principal"] for r in intents} == {principal}


async def test_kafkas_own_tools_log_in_to_the_proxy_with_keycloak_tokens(keycloak: Keycloak, client: KeycloakClient, tmp_path: Path) -> None:
    """The Java AdminClient inside Kafka's kafka-topics (TopicCommand), with Kafka's OAuthBearerLoginCallbackHandler
    doing the client-credentials grant at Keycloak, creates a topic through the proxy as User:<service account>."""
    principal = f"User:{client.service_account_user_id}"
    allowed = f"{keycloak.jwks_url(REALM)},{keycloak.token_url(REALM)}"
    command_config = tmp_path / "oauth-client.properties"
    command_config.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=OAUTHBEARER\n"
        "sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n"
        f"sasl.oauthbearer.token.endpoint.url={keycloak.token_url(REALM)}\n"
        f'sasl.jaas.config={LOGIN_MODULE} required clientId="{client.client_id}" clientSecret="{client.secret}";\n'
    )

    def kafka_topics(address: str) -> subprocess.CompletedProcess[str]:
        command = [
            *java_command(f"{ensure_kafka_jars()}/*", options=(f"-D{ALLOWED_URLS_PROPERTY}={allowed}",)),
            "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", address, "--command-config", str(command_config),
            "--create", "--topic", "java-keycloak-topic", "--partitions", "1", "--replication-factor", "1",
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)

    async with trio.open_nursery() as nursery:
        stack = await start_stack(
            nursery,
            tmp_path / "audit",
            proxy_overrides={"listener.name.client.sasl.enabled.mechanisms": "OAUTHBEARER", **_broker_properties(keycloak), ALLOWED_URLS_PROPERTY: allowed},
            controller_overrides={"super.users": f"User:proxy;User:admin;{principal}"},
        )
        done = await trio.to_thread.run_sync(kafka_topics, stack.sasl_address)
        seen = [(c.api, c.principal, c.resource, c.error_code) for c in stack.controller.image.changes]
        nursery.cancel_scope.cancel()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Created topic java-keycloak-topic." in done.stdout
    assert ("CreateTopics", principal, "topic:java-keycloak-topic", 0) in seen
