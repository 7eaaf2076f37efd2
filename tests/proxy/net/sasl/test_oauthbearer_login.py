"""The proxy's own OAUTHBEARER login (proxy/net/sasl/oauth/login.py): settings as a broker's controller client reads
them, the client-credentials request as Kafka's OAuthBearerLoginCallbackHandler makes it, bounded answers and waits,
and Kafka's refresh schedule; against a loopback token endpoint on trio's sockets."""

import base64
import random
import urllib.parse
from pathlib import Path

import pytest
import trio
import trio.testing

from proxy.net.sasl.oauth.exchange import build_client_first
from proxy.net.sasl.oauth.login import AccessToken, OAuthLoginError, OAuthTokenProvider, next_refresh_ms, parse_access_token, retrieve_token
from proxy.net.sasl.oauth.settings import ALLOWED_URLS_PROPERTY, OAuthLoginSettings, parse_oauth_login_settings
from proxy.properties import ConfigError, Properties
from tests.proxy.net.sasl.oauth_fixtures import Answer, Request, claims, rsa_key, start_http, unsigned

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
TOKEN_URL = "https://idp.example.com/realms/kafka/protocol/openid-connect/token"


def _props(**extra: str) -> dict[str, str]:
    return {
        "sasl.mechanism.controller.protocol": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": TOKEN_URL,
        "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "listener.name.controller.oauthbearer.sasl.jaas.config": f'{MODULE} required clientId="proxy" clientSecret="proxy-secret" scope="kafka admin" extension_traceId="t1";',
        ALLOWED_URLS_PROPERTY: TOKEN_URL,
        **extra,
    }


# --------------------------------------------------------------------------- settings


def test_settings_from_the_jaas_options_and_kafkas_keys() -> None:
    settings = parse_oauth_login_settings(Properties(_props()), "CONTROLLER", {})
    assert (settings.token_endpoint_url, settings.client_id, settings.client_secret, settings.scope) == (TOKEN_URL, "proxy", "proxy-secret", "kafka admin")
    assert dict(settings.extensions) == {"traceId": "t1"} and "proxy-secret" not in repr(settings)
    assert (settings.refresh_window_factor, settings.refresh_window_jitter, settings.refresh_min_period_seconds, settings.refresh_buffer_seconds) == (0.8, 0.05, 60, 300)
    assert (settings.retry_backoff_ms, settings.retry_backoff_max_ms, settings.connect_timeout_ms, settings.read_timeout_ms) == (100, 10000, 10000, 10000)
    # Kafka 4.1's keys win over the JAAS options; listener prefixes as Kafka reads them
    newer = parse_oauth_login_settings(
        _props(
            **{
                "sasl.oauthbearer.client.credentials.client.id": "other",
                "listener.name.controller.sasl.oauthbearer.scope": "only",
                "listener.name.controller.oauthbearer.sasl.login.refresh.window.factor": "0.9",
                "sasl.login.read.timeout.ms": "2500",
            }
        ),
        "CONTROLLER",
    )
    assert (newer.client_id, newer.client_secret, newer.scope, newer.refresh_window_factor, newer.read_timeout_ms) == ("other", "proxy-secret", "only", 0.9, 2500)


def test_settings_from_a_jaas_file_entry(tmp_path: Path) -> None:
    from proxy.net.sasl.jaas_parser import load_jaas_file

    path = tmp_path / "jaas.conf"
    path.write_text(f'controller.KafkaServer {{\n  {MODULE} required clientId="from-file" clientSecret="s";\n}};\n')
    props = {key: value for key, value in _props().items() if not key.endswith("jaas.config")}
    settings = parse_oauth_login_settings(props, "CONTROLLER", {}, jaas_file=load_jaas_file(str(path)), file_key="jaas.config.file")
    assert (settings.client_id, settings.client_secret, settings.scope) == ("from-file", "s", None)


@pytest.mark.parametrize(
    ("change", "key", "reason"),
    [
        ({"sasl.oauthbearer.token.endpoint.url": ""}, "sasl.oauthbearer.token.endpoint.url", "needs a token endpoint"),
        ({ALLOWED_URLS_PROPERTY: "https://idp.example.com"}, "sasl.oauthbearer.token.endpoint.url", "is not allowed"),
        ({"sasl.login.callback.handler.class": "com.example.Login"}, "sasl.login.callback.handler.class", "only as"),
        ({"sasl.login.refresh.window.factor": "0.3"}, "sasl.login.refresh.window.factor", "between 0.5 and 1"),
        ({"sasl.login.refresh.window.jitter": "x"}, "sasl.login.refresh.window.jitter", "expected a number"),
        ({"sasl.login.refresh.buffer.seconds": "3601"}, "sasl.login.refresh.buffer.seconds", "between 0 and 3600"),
        ({"sasl.login.retry.backoff.max.ms": "10"}, "sasl.login.retry.backoff.max.ms", "not be less than"),
        ({"sasl.oauthbearer.header.urlencode": "yes"}, "sasl.oauthbearer.header.urlencode", "true or false"),
        (
            {"listener.name.controller.oauthbearer.sasl.jaas.config": f'{MODULE} required clientSecret="s";'},
            "sasl.oauthbearer.client.credentials.client.id",
            "JAAS option clientId",
        ),
    ],
)
def test_bad_settings_name_the_key(change: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as failed:
        parse_oauth_login_settings(_props(**change), "CONTROLLER", {})
    assert failed.value.key == key and reason in failed.value.reason


def test_the_jaas_part_is_checked_as_kafka_checks_it() -> None:
    props = _props(**{"listener.name.controller.oauthbearer.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="x";'})
    with pytest.raises(ConfigError, match="OAuthBearerLoginModule"):
        parse_oauth_login_settings(props, "CONTROLLER", {})
    bad_extension = _props(**{"listener.name.controller.oauthbearer.sasl.jaas.config": f'{MODULE} required clientId="a" clientSecret="b" extension_auth="x";'})
    with pytest.raises(ConfigError, match="Extension name auth is invalid"):
        parse_oauth_login_settings(bad_extension, "CONTROLLER", {})


# --------------------------------------------------------------------------- tokens


def test_parse_access_token_as_kafkas_client_does() -> None:
    token = unsigned({"alg": "RS256"}, claims("svc", now=1_700_000_000, lifetime=300), b"sig")
    parsed = parse_access_token(token)
    assert (parsed.principal_name, parsed.expiry_ms, parsed.start_ms, parsed.scopes) == ("svc", 1_700_000_300_000, 1_700_000_000_000, frozenset({"profile email"}))
    assert parse_access_token(unsigned({"alg": "RS256"}, {"exp": 5, "sub": "x"}, b"s")).start_ms is None
    for bad in ({"sub": "x"}, {"exp": 5}, {"exp": 5, "sub": " "}, {"exp": -1, "sub": "x"}, {"exp": "5", "sub": "x"}, {"exp": 5, "sub": "x", "scope": ["a", "a"]}):
        with pytest.raises(OAuthLoginError):
            parse_access_token(unsigned({"alg": "RS256"}, bad, b"s"))
    for garbage in ("", "a.b", "a.!!!.c", "a.W10.c"):
        with pytest.raises(OAuthLoginError):
            parse_access_token(garbage)


def _endpoint(token: str, status: int = 200) -> tuple[list[Request], object]:
    seen: list[Request] = []

    def respond(request: Request) -> Answer:
        seen.append(request)
        return Answer(status, f'{{"access_token":"{token}","expires_in":300,"token_type":"Bearer"}}'.encode())

    return seen, respond


def _settings(url: str, **changes: object) -> OAuthLoginSettings:
    values: dict[str, object] = {"token_endpoint_url": url, "client_id": "proxy", "client_secret": "s3cr:t é", "scope": "kafka admin"}
    values.update(changes)
    return OAuthLoginSettings(**values)  # type: ignore[arg-type]


async def test_the_client_credentials_request_kafka_sends() -> None:
    token = rsa_key().sign(claims("service-account"))
    seen, respond = _endpoint(token)
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, respond)  # type: ignore[arg-type]
        got = await retrieve_token(_settings(f"{server.url}/realms/kafka/protocol/openid-connect/token"))
        assert got.value == token and got.principal_name == "service-account"
        (request,) = seen
        assert (request.method, request.target) == ("POST", "/realms/kafka/protocol/openid-connect/token")
        assert request.headers["authorization"] == "Basic " + base64.b64encode("proxy:s3cr:t é".encode()).decode()
        assert request.headers["content-type"] == "application/x-www-form-urlencoded"
        assert urllib.parse.parse_qs(request.body.decode()) == {"grant_type": ["client_credentials"], "scope": ["kafka admin"]}
        encoded = await retrieve_token(_settings(server.url, header_urlencode=True, scope=None))
        assert encoded.value == token
        assert base64.b64decode(seen[1].headers["authorization"][6:]) == b"proxy:s3cr%3At+%C3%A9" and seen[1].body == b"grant_type=client_credentials"
        nursery.cancel_scope.cancel()


async def test_final_statuses_are_not_retried_and_others_are(autojump_clock: trio.testing.MockClock) -> None:
    for status, attempts in ((401, 1), (400, 1), (503, 6), (500, 6)):
        seen: list[Request] = []

        def respond(request: Request, status: int = status, seen: list[Request] = seen) -> Answer:
            seen.append(request)
            return Answer(status, b'{"error":"invalid_client","error_description":"Invalid client or Invalid client credentials"}')

        async with trio.open_nursery() as nursery:
            server = await start_http(nursery, respond)
            with pytest.raises(OAuthLoginError) as failed:
                await retrieve_token(_settings(server.url, retry_backoff_max_ms=2000))
            assert len(seen) == attempts and f"HTTP {status}" in str(failed.value) and "invalid_client" in str(failed.value)
            nursery.cancel_scope.cancel()


async def test_bad_answers_and_a_hung_endpoint_are_bounded(autojump_clock: trio.testing.MockClock) -> None:
    answers = [
        Answer(200, b"not json"),
        Answer(200, b'{"token_type":"Bearer"}'),
        Answer(200, b'{"access_token":"  "}'),
        Answer(200, b'{"access_token":"not-a-jwt"}'),
        Answer(200, b"x" * 300_000),
        Answer(200, b""),
        Answer(200, b"{}", content_length=50_000_000),
        Answer(hang=True),
    ]
    for answer in answers:

        def respond(request: Request, answer: Answer = answer) -> Answer:
            return answer

        async with trio.open_nursery() as nursery:
            server = await start_http(nursery, respond)
            started = trio.current_time()
            with pytest.raises(OAuthLoginError):
                await retrieve_token(_settings(server.url, retry_backoff_max_ms=0, read_timeout_ms=5000))
            assert trio.current_time() - started <= 5.0 + 0.001
            nursery.cancel_scope.cancel()


async def test_a_file_token_endpoint(tmp_path: Path) -> None:
    token = rsa_key().sign(claims("from-file"))
    path = tmp_path / "token.jwt"
    path.write_text(token + "\n")
    got = await retrieve_token(OAuthLoginSettings(path.as_uri()))
    assert got.value == token and got.principal_name == "from-file"
    settings = parse_oauth_login_settings(
        _props(
            **{
                "sasl.oauthbearer.token.endpoint.url": path.as_uri(),
                ALLOWED_URLS_PROPERTY: path.as_uri(),
                "listener.name.controller.oauthbearer.sasl.jaas.config": f"{MODULE} required;",
            }
        ),
        "CONTROLLER",
    )
    assert settings.client_id is None


# --------------------------------------------------------------------------- the refresh schedule


def test_next_refresh_as_kafkas_refreshing_login() -> None:
    settings = OAuthLoginSettings("https://x", refresh_window_jitter=0.0)
    hour = 3_600_000
    token = AccessToken("t", "p", expiry_ms=hour, start_ms=0)
    assert next_refresh_ms(0, token, settings) == int(hour * 0.8)
    # not inside the 300 s buffer before expiry
    assert next_refresh_ms(0, AccessToken("t", "p", 600_000, 0), settings) == 300_000
    assert next_refresh_ms(1_000_000, AccessToken("t", "p", 2_000_000, 0), settings) == 1_600_000
    # not sooner than the 60 s minimum period from now
    assert next_refresh_ms(7_990_000, AccessToken("t", "p", 10_000_000, 0), settings) == 8_050_000
    # the buffer is checked first, so it wins over the minimum period, as in Kafka
    assert next_refresh_ms(1_100_000, AccessToken("t", "p", 1_500_000, 800_000), settings) == 1_200_000
    # too short-lived for both buffers: 80% of what is left
    assert next_refresh_ms(0, AccessToken("t", "p", 120_000, 0), settings) == 96_000
    # jitter: up to 5% more of the life
    jittered = {next_refresh_ms(0, token, OAuthLoginSettings("https://x"), random.Random(seed)) for seed in range(50)}
    assert all(int(hour * 0.8) <= value <= int(hour * 0.85) for value in jittered) and len(jittered) > 10


async def test_provider_refreshes_before_expiry_and_keeps_the_old_token_on_failure(autojump_clock: trio.testing.MockClock) -> None:
    key = rsa_key()
    epoch = 1_800_000_000.0

    def wall() -> float:
        return epoch + trio.current_time()

    state = {"status": 200, "count": 0}

    def respond(request: Request) -> Answer:
        state["count"] += 1
        token = key.sign(claims(f"svc-{state['count']}", now=wall(), lifetime=1000))
        return Answer(state["status"], f'{{"access_token":"{token}"}}'.encode())

    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, respond)
        provider = OAuthTokenProvider(_settings(server.url, refresh_window_jitter=0.0, retry_backoff_max_ms=0), wall_clock=wall)
        await nursery.start(provider.run)
        first = provider.current
        assert first is not None and first.principal_name == "svc-1" and provider.generation == 1
        assert (await provider.token()) is first
        exchange = await provider.client_exchange()
        assert exchange.initial() == build_client_first(first.value)
        # life 1000 s: refresh at 800 s (buffer 300 s and minimum 60 s fit)
        await trio.sleep(699)
        assert provider.generation == 1
        second = await provider.wait_for_refresh(1)
        assert second.principal_name == "svc-2" and 700 <= trio.current_time() <= 701
        # the endpoint fails: the current token stays, a new try every 10 s
        state["status"] = 503
        await trio.sleep(700 + 5)
        assert provider.current is second and provider.last_error and "HTTP 503" in provider.last_error
        tries = state["count"]
        await trio.sleep(20)
        assert state["count"] == tries + 2
        state["status"] = 200
        third = await provider.wait_for_refresh(2)
        assert third.principal_name.startswith("svc-") and provider.last_error is None
        nursery.cancel_scope.cancel()


async def test_concurrent_callers_share_one_fetch(autojump_clock: trio.testing.MockClock) -> None:
    key = rsa_key()
    count = 0

    def respond(request: Request) -> Answer:
        nonlocal count
        count += 1
        return Answer(200, f'{{"access_token":"{key.sign(claims())}"}}'.encode())

    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, respond)
        provider = OAuthTokenProvider(_settings(server.url))
        tokens: list[AccessToken] = []

        async def ask() -> None:
            tokens.append(await provider.token())

        async with trio.open_nursery() as askers:
            for _ in range(10):
                askers.start_soon(ask)
        assert count == 1 and len({token.value for token in tokens}) == 1
        nursery.cancel_scope.cancel()


async def test_without_run_a_login_after_the_refresh_time_gets_a_new_token(autojump_clock: trio.testing.MockClock) -> None:
    """The registry's client side is used without `run` in a nursery: `token()` follows Kafka's refresh schedule
    itself, and keeps the valid token when that refresh fails."""
    key = rsa_key()
    epoch = 1_800_000_000.0

    def wall() -> float:
        return epoch + trio.current_time()

    state = {"status": 200, "count": 0}

    def respond(request: Request) -> Answer:
        state["count"] += 1
        token = key.sign(claims(f"svc-{state['count']}", now=wall(), lifetime=1000))
        return Answer(state["status"], f'{{"access_token":"{token}"}}'.encode())

    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, respond)
        provider = OAuthTokenProvider(_settings(server.url, refresh_window_jitter=0.0, retry_backoff_max_ms=0), wall_clock=wall)
        first = await provider.token()
        await trio.sleep(650)
        assert await provider.token() is first  # life 1000 s, buffer 300 s: refreshed from 700 s on
        await trio.sleep(51)
        second = await provider.token()
        assert second.principal_name == "svc-2"
        state["status"] = 503
        await trio.sleep(801)
        assert await provider.token() is second and state["count"] > 2  # tried, failed, kept the valid one
        nursery.cancel_scope.cancel()
