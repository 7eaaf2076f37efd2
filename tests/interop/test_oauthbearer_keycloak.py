"""OAUTHBEARER against a real identity provider (Keycloak, tests/interop/keycloak.py): its tokens validate through
the proxy's validator against the realm's JWKS URL, key rotation is followed without a restart, and the proxy's own
client-credentials login gets its tokens there. Marker `interop`."""

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import jwt
import pytest
import trio

from envelope_proxy.embedded import start_stack
from proxy.net.sasl.mechanisms import AuthenticationFailed
from proxy.net.sasl.oauth_login import OAuthLoginError, OAuthTokenProvider, parse_oauth_login_settings
from proxy.net.sasl.oauth_validation import ALLOWED_URLS_PROPERTY, JwksCache, OAuthValidation, parse_validation_settings
from proxy.net.sasl.oauthbearer import CONTROL_A, INVALID_TOKEN, build_client_first
from tests.audit_records import records_under
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
        assert token.principal_name == client.service_account_user_id and token.scopes == frozenset({"profile email"})
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


REAUTH_REALM = "kafka-reauth"  # tokens that live 8 s: the sessions they open must be renewed
REAUTH_TOKEN_LIFESPAN = 8


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
        deadline = time.monotonic() + 3 * REAUTH_TOKEN_LIFESPAN
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
    assert created >= 2 * REAUTH_TOKEN_LIFESPAN
    assert len(renewed) >= 2 and {r["authenticationInfo"]["principal"] for r in renewed} == {principal}
    assert not [r for r in records if r["stage"] == "disconnected" and r["connection"]["cause"] == "session-expired"]
