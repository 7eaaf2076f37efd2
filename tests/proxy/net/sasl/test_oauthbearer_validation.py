"""OAUTHBEARER token validation and the JWKS cache: keys made with cryptography, tokens signed with PyJWT, the JWKS
served by a loopback HTTP server on trio's sockets (or a file), hostile tokens and JWKS answers, a hung endpoint."""

import json
import time
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from proxy.net.sasl.oauth.exchange import INVALID_TOKEN, build_client_first
from proxy.net.sasl.oauth.jwks import JwksCache, JwksError, StaticKeys, parse_jwks
from proxy.net.sasl.oauth.mechanism import OAuthValidation
from proxy.net.sasl.oauth.settings import (
    ALLOWED_URLS_PROPERTY,
    AllowedUrls,
    OAuthValidationSettings,
    allowed_urls,
    check_url,
    oauth_value,
    parse_validation_settings,
)
from proxy.net.sasl.oauth.validator import InvalidToken, TokenValidator
from proxy.properties import ConfigError, Properties
from tests.proxy.net.sasl.oauth_fixtures import (
    AUDIENCE,
    ISSUER,
    Answer,
    Request,
    SigningKey,
    claims,
    ec_key,
    fresh_rsa_key,
    hmac_with_public_key,
    jwks,
    rsa_key,
    start_http,
    unsigned,
)

SETTINGS = OAuthValidationSettings("http://127.0.0.1/jwks", expected_audience=(AUDIENCE,), expected_issuer=ISSUER)


def _validator(*keys: SigningKey, settings: OAuthValidationSettings = SETTINGS, clock: Any = time.time) -> tuple[TokenValidator, StaticKeys]:
    source = StaticKeys(parse_jwks(jwks(*keys)))
    return TokenValidator(settings, source, clock=clock), source


# --------------------------------------------------------------------------- good tokens


@pytest.mark.parametrize("algorithm", ["RS256", "RS384", "RS512", "PS256", "PS512", "ES256", "ES384", "ES512"])
def test_good_tokens_give_the_subject_as_principal(algorithm: str) -> None:
    key = rsa_key("k", algorithm) if algorithm[0] in "RP" else ec_key("k", algorithm)
    validator, _ = _validator(key)
    now = int(time.time())
    token = validator.validate(key.sign(claims("4f0c1c7e-5b7a-4a57-9d4e-0c1f4f8b7b11", now=now, lifetime=120)))
    assert token.principal_name == "4f0c1c7e-5b7a-4a57-9d4e-0c1f4f8b7b11"
    assert (token.lifetime_ms, token.start_time_ms, token.scopes) == ((now + 120) * 1000, now * 1000, frozenset({"profile email"}))


def test_sub_claim_name_scope_claim_name_and_trimming() -> None:
    key = rsa_key()
    settings = OAuthValidationSettings("http://x/jwks", expected_audience=(AUDIENCE,), sub_claim_name="preferred_username", scope_claim_name="scp")
    validator, _ = _validator(key, settings=settings)
    token = validator.validate(key.sign(claims("uuid", preferred_username="  service-account-proxy ", scp=["kafka", " admin "], iss=None)))
    assert token.principal_name == "service-account-proxy" and token.scopes == frozenset({"kafka", "admin"})
    hostile: list[dict[str, Any]] = [{"preferred_username": None}, {"preferred_username": "  "}, {"preferred_username": 7}, {"scp": ["a", "a "]}, {"scp": [""]}, {"scp": [1]}]
    for bad in hostile:
        with pytest.raises(InvalidToken):
            validator.validate(key.sign(claims("uuid", **{"preferred_username": "p", **bad})))
    # a scope string is one scope, as Kafka reads it; an empty one is refused
    assert validator.validate(key.sign(claims(preferred_username="p", scp="a b"))).scopes == frozenset({"a b"})


def test_audience_lists_and_multiple_expected_audiences() -> None:
    key = rsa_key()
    settings = OAuthValidationSettings("http://x/jwks", expected_audience=("one", "two"))
    validator, _ = _validator(key, settings=settings)
    assert validator.validate(key.sign(claims(aud=["account", "two"]))).principal_name == "alice"
    for audience in (["account"], "three", [], [1], {"a": 1}):
        with pytest.raises(InvalidToken):
            validator.validate(key.sign(claims(aud=audience)))
    with pytest.raises(InvalidToken, match="No Audience"):
        validator.validate(key.sign(claims(aud=None)))
    # no expected audience: a token without aud passes, one with aud does not (jose4j's default, kept by Kafka)
    open_validator, _ = _validator(key, settings=OAuthValidationSettings("http://x/jwks"))
    assert open_validator.validate(key.sign(claims(aud=None))).principal_name == "alice"
    with pytest.raises(InvalidToken, match="no expected audience"):
        open_validator.validate(key.sign(claims()))


# --------------------------------------------------------------------------- tokens that must fail


def test_alg_none_and_hmac_with_the_public_key_are_refused() -> None:
    key = rsa_key()
    validator, source = _validator(key)
    payload = claims()
    for header in ({"alg": "none", "kid": key.kid}, {"alg": "None"}, {"alg": "NONE"}, {"kid": key.kid}, {"alg": "EdDSA", "kid": key.kid}):
        with pytest.raises(InvalidToken, match="not allowed"):
            validator.validate(unsigned(header, payload, b"x"))
    with pytest.raises(InvalidToken, match="three sections"):
        validator.validate(unsigned({"alg": "none"}, payload))  # alg none with an empty signature
    with pytest.raises(InvalidToken, match="'HS256' is not allowed"):
        validator.validate(hmac_with_public_key(key, payload))
    assert source.requested == []  # refused before any key was looked for


def test_a_jwks_with_an_hmac_key_never_makes_hs256_acceptable() -> None:
    key = rsa_key()
    data = json.dumps({"keys": [key.jwk(), {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac", "alg": "HS256"}]}).encode()
    assert [k.kid for k in parse_jwks(data)] == [key.kid]


def test_time_claims_with_kafkas_skew() -> None:
    key = rsa_key()
    now = 1_800_000_000
    validator, _ = _validator(key, clock=lambda: now + 0.9)
    assert validator.validate(key.sign(claims(now=now - 300, lifetime=300 + 29))).principal_name == "alice"  # exp 29 s ago: within the 30 s skew
    with pytest.raises(InvalidToken, match="no longer valid"):
        validator.validate(key.sign(claims(now=now - 300, lifetime=300 - 30)))  # now - 30 >= exp
    assert validator.validate(key.sign(claims(now=now, nbf=now + 30))).principal_name == "alice"
    with pytest.raises(InvalidToken, match="not yet valid"):
        validator.validate(key.sign(claims(now=now, nbf=now + 31)))
    # iat in the future is no reason to refuse (jose4j does not check it), but exp and iat are required numbers
    assert validator.validate(key.sign(claims(now=now + 3600, lifetime=60))).principal_name == "alice"
    hostile: list[dict[str, Any]] = [{"exp": None}, {"iat": None}, {"exp": "soon"}, {"iat": True}, {"nbf": "x"}, {"exp": 1e300}, {"exp": -5}]
    for bad in hostile:
        payload = {name: value for name, value in {**claims(now=now), **bad}.items() if value is not None}  # None: the claim left out
        with pytest.raises(InvalidToken):
            validator.validate(key.sign(payload))


def test_real_clock_expired_and_not_yet_valid() -> None:
    key = rsa_key()
    validator, _ = _validator(key)
    with pytest.raises(InvalidToken, match="no longer valid"):
        validator.validate(key.sign(claims(now=time.time() - 3600, lifetime=60)))
    with pytest.raises(InvalidToken, match="not yet valid"):
        validator.validate(key.sign(claims(nbf=int(time.time()) + 600)))


def test_wrong_audience_and_issuer() -> None:
    key = rsa_key()
    validator, _ = _validator(key)
    with pytest.raises(InvalidToken, match="Audience"):
        validator.validate(key.sign(claims(aud="another-cluster")))
    with pytest.raises(InvalidToken, match="Issuer"):
        validator.validate(key.sign(claims(iss="https://idp.example.com/realms/master")))
    with pytest.raises(InvalidToken, match="No Issuer"):
        validator.validate(key.sign(claims(iss=None)))
    for claim in ("sub", "iss", "jti"):  # jose4j reads these as strings whenever they are there
        with pytest.raises(InvalidToken):
            validator.validate(key.sign({**claims(), claim: 12}))


def test_signatures_and_keys() -> None:
    key, other = rsa_key("a"), fresh_rsa_key("a")
    validator, _ = _validator(key)
    with pytest.raises(InvalidToken, match="does not verify"):
        validator.validate(other.sign(claims()))  # same kid, another key
    token = key.sign(claims())
    header, payload, signature = token.split(".")
    with pytest.raises(InvalidToken):
        validator.validate(f"{header}.{payload[:-2]}AA.{signature}")  # tampered payload
    with pytest.raises(InvalidToken):
        validator.validate(key.sign(claims(), headers={"crit": ["exp"]}))
    # an EC token never verifies with an RSA key of the same kid, nor an ES256 token with a P-384 key
    validator_ec, source = _validator(ec_key("e", "ES384"))
    with pytest.raises(InvalidToken, match="suitable verification key"):
        validator_ec.validate(ec_key("e", "ES256").sign(claims()))
    assert source.requested == ["e"]


def test_undecodable_and_oversized_tokens() -> None:
    key = rsa_key()
    validator, _ = _validator(key)
    for token in ("", "a", "a.b", "a.b.c", "a..c", "a.b.c.d.e", "!!!.!!!.!!!", "e30.e30.e30", "W10.e30.c2ln", key.sign(claims())[::-1]):
        with pytest.raises(InvalidToken):
            validator.validate(token)
    deep = unsigned({"alg": "RS256", "kid": key.kid}, {}).split(".")
    nested = "[" * 50_000 + "]" * 50_000
    with pytest.raises(InvalidToken):
        validator.validate(f"{deep[0]}.{json.dumps(nested)}.c2ln")
    big = key.sign(claims(padding="x" * 70_000))
    with pytest.raises(InvalidToken, match="more than the 65536 allowed"):
        validator.validate(big)
    roomy = TokenValidator(OAuthValidationSettings("http://x", expected_audience=(AUDIENCE,), max_token_bytes=200_000), StaticKeys(parse_jwks(jwks(key))))
    assert roomy.validate(big).principal_name == "alice"


def test_unknown_kid_asks_for_a_refresh_and_no_kid_tries_every_fitting_key() -> None:
    key, second = rsa_key("one"), fresh_rsa_key("two")
    validator, source = _validator(key, second)
    with pytest.raises(InvalidToken, match="suitable verification key"):
        validator.validate(fresh_rsa_key("three").sign(claims()))
    assert source.requested == ["three"]
    token = second.sign(claims())
    header = {"alg": "RS256"}  # no kid: every RSA key is tried
    no_kid = second.private
    import jwt

    assert validator.validate(jwt.encode(claims(), no_kid, algorithm="RS256", headers=header)).principal_name == "alice"
    assert validator.validate(token).principal_name == "alice"


# --------------------------------------------------------------------------- the JWKS document


def test_parse_jwks_keeps_usable_signature_keys_only() -> None:
    rsa_ok, ec_ok = rsa_key("r"), ec_key("e")
    entries = [
        rsa_ok.jwk(),
        ec_ok.jwk(),
        {**fresh_rsa_key("enc").jwk(), "use": "enc", "alg": "RSA-OAEP"},
        rsa_key("small", bits=1024).jwk(),  # below jose4j's 2048 bits
        {"kty": "RSA", "kid": "broken", "n": 5, "e": "AQAB"},
        {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "ed"},
        {"kty": "EC", "crv": "secp256k1", "kid": "k1", "x": "AA", "y": "AA"},
        "not an object",
        {**rsa_key("priv").jwk(), "d": "AQAB"},  # private members are dropped, the public key kept
    ]
    keys = parse_jwks(json.dumps({"keys": entries}).encode())
    assert [key.kid for key in keys] == ["r", "e", "priv"]
    for garbage in (b"", b"<html>", b"[]", b'{"keys": {}}', b'{"keys": []}', b'{"keys": [{"kty": "oct", "k": "AA"}]}', b"NaN", b"\xff\xfe"):
        with pytest.raises(JwksError):
            parse_jwks(garbage)


# --------------------------------------------------------------------------- the cache, over HTTP


class Jwks:
    """A mutable JWKS endpoint."""

    def __init__(self, *keys: SigningKey) -> None:
        self.body = jwks(*keys)
        self.status = 200
        self.hang = False

    def __call__(self, request: Request) -> Answer:
        return Answer(self.status, self.body, hang=self.hang)


async def test_cache_loads_serves_and_refreshes_on_an_unknown_kid() -> None:
    first, rotated = rsa_key("first"), fresh_rsa_key("rotated")
    endpoint = Jwks(first)
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, endpoint)
        cache = JwksCache(f"{server.url}/realms/kafka/protocol/openid-connect/certs")
        validation = OAuthValidation(OAuthValidationSettings(cache.url, expected_audience=(AUDIENCE,), expected_issuer=ISSUER), cache=cache)
        await nursery.start(validation.run)
        assert cache.loaded and [key.kid for key in cache.keys] == ["first"]
        assert server.requests[0].method == "GET" and server.requests[0].target == "/realms/kafka/protocol/openid-connect/certs"
        exchange = validation.exchange()
        assert exchange.evaluate(build_client_first(first.sign(claims()))) == b"" and exchange.user == "alice"

        endpoint.body = jwks(first, rotated)  # the provider rotates its keys
        token = rotated.sign(claims("bob"))
        refused = validation.exchange()
        assert refused.evaluate(build_client_first(token)) == INVALID_TOKEN  # refused at once...
        assert "refresh of the JWKS was started" in (refused.failure_reason or "")
        with trio.fail_after(5):
            while [key.kid for key in cache.keys] != ["first", "rotated"]:  # ...and the refresh runs in the background
                await trio.sleep(0.01)
        accepted = validation.exchange()
        assert accepted.evaluate(build_client_first(token)) == b"" and accepted.user == "bob"
        nursery.cancel_scope.cancel()


async def test_unknown_kids_are_rate_limited_as_kafka_does(autojump_clock: trio.testing.MockClock) -> None:
    endpoint = Jwks(rsa_key("first"))
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, endpoint)
        cache = JwksCache(f"{server.url}/certs")
        await nursery.start(cache.run)
        assert len(server.requests) == 1
        assert cache.request_refresh("new") is True
        assert cache.request_refresh("new") is False  # once a minute per kid
        await trio.sleep(5)
        assert len(server.requests) == 2
        assert cache.request_refresh("new") is False
        assert cache.request_refresh("x" * 1001) is False  # too long to look up
        for number in range(40):  # many new kids: still about one refresh a second
            assert cache.request_refresh(f"kid-{number}")
            await trio.sleep(0.1)
        await trio.sleep(2)
        assert 2 + 3 <= len(server.requests) <= 2 + 6
        await trio.sleep(61)
        assert cache.request_refresh("new") is True  # a minute later, again
        nursery.cancel_scope.cancel()


async def test_scheduled_refresh_follows_rotation_without_a_restart(autojump_clock: trio.testing.MockClock) -> None:
    first, second = rsa_key("first"), fresh_rsa_key("second")
    endpoint = Jwks(first)
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, endpoint)
        cache = JwksCache(f"{server.url}/certs", refresh_interval=3600)
        await nursery.start(cache.run)
        endpoint.body = jwks(second)
        await trio.sleep(3599)
        assert [key.kid for key in cache.keys] == ["first"]
        await trio.sleep(2)
        assert [key.kid for key in cache.keys] == ["second"] and len(server.requests) == 2
        await trio.sleep(3600)
        assert len(server.requests) == 3
        nursery.cancel_scope.cancel()


async def test_garbage_oversized_and_failing_answers_keep_the_old_keys(autojump_clock: trio.testing.MockClock) -> None:
    key = rsa_key("kept")
    endpoint = Jwks(key)
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, endpoint)
        cache = JwksCache(f"{server.url}/certs", retry_backoff=0.1, retry_backoff_max=2.0, max_bytes=4096)
        await nursery.start(cache.run)
        validator = TokenValidator(SETTINGS, cache)
        for body, status in ((b"<html>oops</html>", 200), (b'{"keys": []}', 200), (b'{"keys": "x"}', 200), (b"x" * 10_000, 200), (jwks(key), 503)):
            endpoint.body, endpoint.status = body, status
            before = len(server.requests)
            assert await cache.refresh() is False
            assert len(server.requests) - before == 6  # after 0, 0.1, 0.3, 0.7, 1.5 and 2.0 s (the wait cut to what is left): Kafka's Retry
            assert [k.kid for k in cache.keys] == ["kept"] and cache.last_error
            assert validator.validate(key.sign(claims())).principal_name == "alice"
        assert cache.failed_refreshes == 5
        nursery.cancel_scope.cancel()


async def test_an_answer_that_announces_more_than_the_bound_is_not_read(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, lambda request: Answer(200, b"{}", content_length=10_000_000))
        cache = JwksCache(f"{server.url}/certs", retry_backoff_max=0, max_bytes=1 << 20)
        assert await cache.refresh() is False
        assert "more than the 1048576 allowed" in (cache.last_error or "")
        nursery.cancel_scope.cancel()


async def test_a_hung_endpoint_never_delays_an_answer(autojump_clock: trio.testing.MockClock) -> None:
    key, rotated = rsa_key("key"), fresh_rsa_key("rotated")
    endpoint = Jwks(key)
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, endpoint)
        cache = JwksCache(f"{server.url}/certs", fetch_timeout=10, retry_backoff=0.1, retry_backoff_max=1.0)
        validation = OAuthValidation(SETTINGS, cache=cache)
        await nursery.start(validation.run)
        endpoint.hang = True
        started = trio.current_time()
        exchange = validation.exchange()
        assert exchange.evaluate(build_client_first(rotated.sign(claims()))) == INVALID_TOKEN  # unknown kid: refresh asked
        for _ in range(100):  # checkpoints, no time: the refresh task starts and hangs on the endpoint
            if cache.refreshing and len(server.requests) == 2:
                break
            await trio.sleep(0)
        assert cache.refreshing
        for _ in range(3):
            assert validation.exchange().evaluate(build_client_first(key.sign(claims()))) == b""
            assert validation.exchange().evaluate(build_client_first(rotated.sign(claims()))) == INVALID_TOKEN
        assert trio.current_time() == started  # no answer waited for the endpoint
        await trio.sleep(30)  # the hung attempts time out (10 s each), the refresh gives up, the old keys stay
        assert not cache.refreshing and cache.failed_refreshes == 1 and "no whole answer within 10 s" in (cache.last_error or "")
        assert [k.kid for k in cache.keys] == ["key"]
        nursery.cancel_scope.cancel()


async def test_before_the_first_load_every_token_is_refused_and_a_refresh_asked(autojump_clock: trio.testing.MockClock) -> None:
    key = rsa_key("late")
    endpoint = Jwks(key)
    endpoint.status = 500
    async with trio.open_nursery() as nursery:
        server = await start_http(nursery, endpoint)
        cache = JwksCache(f"{server.url}/certs", retry_backoff_max=0.5)
        validation = OAuthValidation(SETTINGS, cache=cache)
        await nursery.start(validation.run)  # started, although the endpoint failed
        assert not cache.loaded
        endpoint.status = 200
        assert validation.exchange().evaluate(build_client_first(key.sign(claims()))) == INVALID_TOKEN
        await trio.sleep(2)
        assert cache.loaded and validation.exchange().evaluate(build_client_first(key.sign(claims()))) == b""
        nursery.cancel_scope.cancel()


async def test_a_file_jwks(tmp_path: Path) -> None:
    key = ec_key("file-key")
    path = tmp_path / "jwks.json"
    path.write_bytes(jwks(key))
    cache = JwksCache(path.as_uri())
    assert await cache.refresh() and [k.kid for k in cache.keys] == ["file-key"]
    path.write_bytes(b"broken")
    cache.retry_backoff_max = 0
    assert not await cache.refresh() and [k.kid for k in cache.keys] == ["file-key"]
    path.unlink()
    assert not await cache.refresh() and "No such file" in (cache.last_error or "")


async def test_an_unreachable_endpoint_is_a_failed_refresh() -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cache = JwksCache(f"http://127.0.0.1:{port}/certs", retry_backoff_max=0)
    assert await cache.refresh() is False and cache.last_error


# --------------------------------------------------------------------------- settings


def test_settings_with_kafkas_keys_defaults_and_listener_prefixes() -> None:
    url = "https://idp.example.com/realms/kafka/protocol/openid-connect/certs"
    props = Properties(
        {
            "sasl.oauthbearer.jwks.endpoint.url": "https://elsewhere.example.com/jwks",
            "listener.name.client.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": url,
            "listener.name.client.sasl.oauthbearer.expected.audience": "kafka, account ,",
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "oauthbearer.sasl.oauthbearer.sub.claim.name": "ignored",  # Kafka ignores the mechanism prefix without a listener
            ALLOWED_URLS_PROPERTY: f"{url}, https://other",
        }
    )
    settings = parse_validation_settings(props, "CLIENT", {})
    assert settings == OAuthValidationSettings(url, ("kafka", "account"), ISSUER)
    assert settings.jwks_url_key == "listener.name.client.oauthbearer.sasl.oauthbearer.jwks.endpoint.url"
    assert (settings.clock_skew_seconds, settings.jwks_refresh_ms, settings.jwks_retry_backoff_ms, settings.jwks_retry_backoff_max_ms) == (30, 3600000, 100, 10000)
    assert oauth_value(props, "OTHER", "sasl.oauthbearer.jwks.endpoint.url") == ("sasl.oauthbearer.jwks.endpoint.url", "https://elsewhere.example.com/jwks")


def test_the_allow_list_from_the_key_or_kafka_opts() -> None:
    url = "http://127.0.0.1:8080/realms/kafka/protocol/openid-connect/certs"
    base = {"sasl.oauthbearer.jwks.endpoint.url": url}
    with pytest.raises(ConfigError) as refused:
        parse_validation_settings(base, "CLIENT", {})
    assert refused.value.key == "sasl.oauthbearer.jwks.endpoint.url" and refused.value.value == url
    assert f"{url} is not allowed. Update system property 'org.apache.kafka.sasl.oauthbearer.allowed.urls' to allow {url}" in refused.value.reason
    opts = {"KAFKA_OPTS": f"-Xmx1g -D{ALLOWED_URLS_PROPERTY}=https://a,{url} -Dx=y"}
    assert parse_validation_settings(base, "CLIENT", opts).jwks_endpoint_url == url
    # the proxy's key wins over KAFKA_OPTS, even empty
    with pytest.raises(ConfigError, match="not allowed"):
        parse_validation_settings({**base, ALLOWED_URLS_PROPERTY: ""}, "CLIENT", opts)
    # exact strings: a trailing slash or another case is another URL, as in Kafka
    with pytest.raises(ConfigError, match="not allowed"):
        parse_validation_settings({**base, ALLOWED_URLS_PROPERTY: url + "/"}, "CLIENT", {})
    assert allowed_urls({}, opts).source.endswith("in KAFKA_OPTS")


@pytest.mark.parametrize(
    ("extra", "key", "reason"),
    [
        ({"sasl.oauthbearer.jwks.endpoint.url": ""}, "sasl.oauthbearer.jwks.endpoint.url", "needs a JWKS"),
        ({"sasl.oauthbearer.jwks.endpoint.url": "ftp://x/jwks"}, "sasl.oauthbearer.jwks.endpoint.url", "invalid protocol"),
        ({"sasl.oauthbearer.jwks.endpoint.url": "jwks.json"}, "sasl.oauthbearer.jwks.endpoint.url", "malformed"),
        ({"sasl.oauthbearer.jwks.endpoint.url": "http://:80/x"}, "sasl.oauthbearer.jwks.endpoint.url", "no host"),
        ({"sasl.oauthbearer.jwks.endpoint.url": "file://otherhost/x"}, "sasl.oauthbearer.jwks.endpoint.url", "another host"),
        ({"sasl.oauthbearer.clock.skew.seconds": "soon"}, "sasl.oauthbearer.clock.skew.seconds", "expected an integer"),
        ({"listener.name.client.sasl.oauthbearer.clock.skew.seconds": "-1"}, "listener.name.client.sasl.oauthbearer.clock.skew.seconds", "at least 0"),
        ({"sasl.oauthbearer.jwks.endpoint.refresh.ms": "0"}, "sasl.oauthbearer.jwks.endpoint.refresh.ms", "at least 1"),
        ({"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "50"}, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "not be less than"),
        ({"sasl.oauthbearer.sub.claim.name": " "}, "sasl.oauthbearer.sub.claim.name", "non-whitespace"),
        (
            {"listener.name.client.oauthbearer.sasl.server.callback.handler.class": "com.example.Handler"},
            "listener.name.client.oauthbearer.sasl.server.callback.handler.class",
            "only as",
        ),
    ],
)
def test_bad_settings_name_key_value_and_reason(extra: dict[str, str], key: str, reason: str) -> None:
    props = {"sasl.oauthbearer.jwks.endpoint.url": "https://idp/jwks", **extra}
    props[ALLOWED_URLS_PROPERTY] = props["sasl.oauthbearer.jwks.endpoint.url"]
    with pytest.raises(ConfigError) as failed:
        parse_validation_settings(props, "CLIENT", {})
    assert failed.value.key == key and reason in failed.value.reason


def test_check_url_accepts_kafkas_url_forms() -> None:
    everything = AllowedUrls(frozenset({"file:/etc/jwks.json", "file:///etc/jwks.json", "HTTPS://idp:8443/x?y=1", "http://[::1]:8080/certs"}), "test")
    for url in everything.urls:
        assert check_url("k", url, everything) == url
    handler = {"listener.name.client.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}
    props = {"sasl.oauthbearer.jwks.endpoint.url": "file:/etc/jwks.json", ALLOWED_URLS_PROPERTY: "file:/etc/jwks.json", **handler}
    assert parse_validation_settings(props, "CLIENT").jwks_endpoint_url == "file:/etc/jwks.json"
