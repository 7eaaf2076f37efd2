"""OAUTHBEARER without IO: the client-first message in Kafka's grammar, the server's RFC 7628 answers (also as
SaslAuthenticate frames through the SASL machine), the client side, and KIP-368's session lifetimes."""

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from devkit import wire
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from proxy.net.refusals import CAUSE_AUTHENTICATION_FAILED
from proxy.net.sasl import machine as machine_module
from proxy.net.sasl.client import LoginFailed as ClientLoginFailed
from proxy.net.sasl.machine import Close, LoggedIn, LoginFailed, Reply, SaslMachine, reauthentication_delay
from proxy.net.sasl.mechanisms import AuthenticationFailed
from proxy.net.sasl.oauth.exchange import (
    CONTROL_A,
    INVALID_TOKEN,
    MALFORMED_MESSAGE,
    ClientFirstMessage,
    MalformedMessage,
    OAuthBearerClientExchange,
    OAuthBearerServerExchange,
    ValidatedToken,
    attempted_user,
    build_client_first,
    error_response,
    parse_client_first,
)
from proxy.net.sasl.oauth.jwks import JwksCache, StaticKeys, parse_jwks
from proxy.net.sasl.oauth.mechanism import OAuthValidation
from proxy.net.sasl.oauth.settings import OAuthValidationSettings
from proxy.net.sasl.oauth.validator import TokenValidator
from tests.proxy.net.sasl.oauth_fixtures import AUDIENCE, ISSUER, SigningKey, claims, jwks, rsa_key

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"


# --------------------------------------------------------------------------- the client-first message


def test_kafka_clients_first_message_parses() -> None:
    # what Kafka's OAuthBearerClientInitialResponse.toBytes and librdkafka send
    assert parse_client_first(b"n,,\x01auth=Bearer " + JWT.encode() + b"\x01\x01") == ClientFirstMessage(JWT, "", {})
    message = parse_client_first(b"n,a=alice,\x01auth=bearer " + JWT.encode() + b"\x01traceId=abc 1\x01logicalCluster=lkc-1\x01\x01")
    assert (message.token, message.authorization_id, dict(message.extensions)) == (JWT, "alice", {"traceId": "abc 1", "logicalCluster": "lkc-1"})


def test_build_client_first_is_what_kafka_sends_and_parses_back() -> None:
    assert build_client_first(JWT) == b"n,,\x01auth=Bearer " + JWT.encode() + b"\x01\x01"
    data = build_client_first(JWT, "alice", {"traceId": "x"})
    assert data == b"n,a=alice,\x01auth=Bearer " + JWT.encode() + b"\x01traceId=x\x01\x01"
    assert parse_client_first(data) == ClientFirstMessage(JWT, "alice", {"traceId": "x"})
    for name, value in (("auth", "x"), ("bad name", "x"), ("ok", "")):
        with pytest.raises(ValueError):
            build_client_first(JWT, "", {name: value})


def test_token_grammar_is_rfc_6750_b64token() -> None:
    for token in ("abc", "a-b_c.d~e+f/g", "abc==", "A1."):
        assert parse_client_first(b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01").token == token
    # the auth scheme is case-insensitive, separated from the token by spaces only
    assert parse_client_first(b"n,,\x01auth=BEARER   abc\x01\x01").token == "abc"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"n,,\x01auth=Bearer \x01\x01",  # an empty token
        b"n,,\x01auth=Bearer a b\x01\x01",  # a space in the token
        b"n,,\x01auth=Bearer a=b\x01\x01",  # '=' inside the token
        b"n,,\x01auth=Bearer abc!\x01\x01",  # outside the token grammar
        b"n,,\x01auth=Bearer \xc3\xa9t\xc3\xa9\x01\x01",  # non-ASCII
        b"n,,\x01auth=Bearer\tabc\x01\x01",  # a tab between scheme and token
        b"n,,\x01auth=Basic abc\x01\x01",  # another scheme
        b"n,,\x01auth=Bearer abc\x01",  # no final %x01
        b"n,,\x01auth=Bearer abc\x01\x01\x01",
        b"y,,\x01auth=Bearer abc\x01\x01",  # channel binding flag other than n
        b"n,a=al,ice,\x01auth=Bearer abc\x01\x01",  # ',' in the authzid
        b"n,,auth=Bearer abc\x01\x01",  # no %x01 after the GS2 header
        b"n,,\x01\x01",  # no auth
        b"n,,\x01scope=x\x01\x01",  # no auth, but another key
        b"n,,\x01au th=Bearer abc\x01\x01",  # a key that is not letters
        b"n,,\x01auth=Bearer abc\x01k=\x01\x01",  # an empty value
        b"n,,\x01auth=Bearer abc\x01k=\x00\x01\x01",  # a control character in a value
        b"\x01",
        b"n,,\x01auth=Bearer " + b"a" * 70000 + b"\x01\x01\xff",
    ],
)
def test_malformed_client_first_messages(data: bytes) -> None:
    with pytest.raises(MalformedMessage):
        parse_client_first(data)


def test_escaped_authzid_and_repeated_keys_as_kafka_reads_them() -> None:
    message = parse_client_first(b"n,a=a=2Cb=3Dc,\x01auth=Bearer first\x01x=1\x01auth=Bearer second\x01x=2\x01\x01")
    # Kafka keeps the authzid as sent (no unescaping) and the last value of a repeated key
    assert (message.authorization_id, message.token, dict(message.extensions)) == ("a=2Cb=3Dc", "second", {"x": "2"})


def test_error_response_is_kafkas_json() -> None:
    assert error_response("invalid_token") == INVALID_TOKEN == b'{"status":"invalid_token"}'
    assert error_response("invalid_token", "a b", "https://x") == b'{"status":"invalid_token", "scope":"a b", "openid-configuration":"https://x"}'


# --------------------------------------------------------------------------- the server's answers


class FixedValidator:
    def __init__(self, principal: str | None, expiry_ms: int = 2_000_000_000_000) -> None:
        self.principal = principal
        self.expiry_ms = expiry_ms
        self.tokens: list[str] = []

    def validate(self, token: str) -> ValidatedToken:
        self.tokens.append(token)
        if self.principal is None:
            raise ValueError("expired")
        return ValidatedToken(self.principal, self.expiry_ms, frozenset({"kafka"}), None)


def test_a_valid_token_completes_the_exchange_with_its_principal_and_expiry() -> None:
    exchange = OAuthBearerServerExchange(FixedValidator("alice", 1_800_000_000_000))
    assert not exchange.complete and exchange.user is None
    assert exchange.evaluate(build_client_first(JWT, extensions={"traceId": "t"})) == b""
    assert exchange.complete and exchange.user == "alice" and exchange.credential_expiry_ms == 1_800_000_000_000
    assert dict(exchange.extensions) == {"traceId": "t"}


def test_an_invalid_token_gets_the_json_error_then_the_failure_after_control_a() -> None:
    exchange = OAuthBearerServerExchange(FixedValidator(None))
    assert exchange.evaluate(build_client_first(JWT)) == INVALID_TOKEN
    assert not exchange.complete and exchange.failure_reason == "expired" and exchange.attempted_user == "alice"
    with pytest.raises(AuthenticationFailed) as failed:
        exchange.evaluate(CONTROL_A)
    assert str(failed.value) == '{"status":"invalid_token"}' and failed.value.reason == "expired"


def test_another_message_instead_of_control_a_is_a_new_client_first_message() -> None:
    validator = FixedValidator(None)
    exchange = OAuthBearerServerExchange(validator)
    assert exchange.evaluate(build_client_first("first")) == INVALID_TOKEN
    validator.principal = "bob"
    assert exchange.evaluate(build_client_first("second")) == b"" and exchange.user == "bob"
    assert validator.tokens == ["first", "second"]


def test_control_a_without_an_error_and_malformed_messages_fail_at_once_with_kafkas_message() -> None:
    for data in (CONTROL_A, b"n,,\x01auth=Bearer \x01\x01", b"garbage"):
        validator = FixedValidator("alice")
        with pytest.raises(AuthenticationFailed) as failed:
            OAuthBearerServerExchange(validator).evaluate(data)
        assert str(failed.value) == MALFORMED_MESSAGE == "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
        assert validator.tokens == []  # the validator never saw it
    with pytest.raises(AuthenticationFailed) as failed:
        OAuthBearerServerExchange(FixedValidator("alice"), reauthentication=True).evaluate(b"garbage")
    assert "during re-authentication" in str(failed.value)


def test_an_authzid_other_than_the_principal_fails_at_once() -> None:
    exchange = OAuthBearerServerExchange(FixedValidator("alice"))
    with pytest.raises(AuthenticationFailed, match=r"authorization id \(mallory\) that is different from the token's principal name \(alice\)"):
        exchange.evaluate(build_client_first(JWT, "mallory"))
    assert OAuthBearerServerExchange(FixedValidator("alice")).evaluate(build_client_first(JWT, "alice")) == b""


def test_attempted_user_for_the_audit() -> None:
    assert attempted_user(build_client_first(JWT)) == "alice"  # the token's unverified sub
    assert attempted_user(build_client_first("not.a.jwt")) is None
    assert attempted_user(build_client_first(JWT, "carol")) == "carol"
    assert attempted_user(b"garbage") is None and attempted_user(None) is None


# --------------------------------------------------------------------------- on the wire, through the SASL machine


@dataclass(frozen=True)
class _OAuthListener:
    """What the SASL machine asks of a listener, with OAUTHBEARER's server side in `sasl_servers` (the registry's shape)."""

    sasl_servers: Mapping[str, OAuthValidation]
    name: str = "CLIENT"
    sasl_mechanisms: tuple[str, ...] = ("OAUTHBEARER",)
    privileged_principals: frozenset[str] = frozenset()
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)


def _answer(events: list[Any]) -> Any:
    (reply,) = [event for event in events if isinstance(event, Reply)]
    return decode_response_body(36, 2, reply.data)[1]


@pytest.fixture
def oauth_machine(monkeypatch: pytest.MonkeyPatch) -> tuple[SaslMachine, SigningKey]:
    """The SASL machine with OAUTHBEARER's server side plugged in where the mechanism registry plugs it."""
    key = rsa_key("wire")
    settings = OAuthValidationSettings("http://127.0.0.1/jwks", expected_audience=(AUDIENCE,), expected_issuer=ISSUER)
    validation = OAuthValidation(settings, cache=JwksCache(settings.jwks_endpoint_url))
    validation.validator = TokenValidator(settings, StaticKeys(parse_jwks(jwks(key))))
    if hasattr(machine_module, "server_exchange"):  # the machine before the registry: one function picked the exchange
        monkeypatch.setattr(machine_module, "server_exchange", lambda mechanism, listener: validation.exchange(mechanism))
    listener: Any = _OAuthListener({"OAUTHBEARER": validation})
    machine = SaslMachine(listener)
    (handshake,) = machine.receive(wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}))
    assert isinstance(handshake, Reply) and int(decode_response_body(17, 1, handshake.data)[1].error_code) == 0
    return machine, key


def test_rfc_7628_failure_sequence_on_the_wire(oauth_machine: tuple[SaslMachine, SigningKey]) -> None:
    machine, key = oauth_machine
    expired = key.sign(claims(lifetime=-120))
    first = machine.receive(wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": build_client_first(expired)}))
    answer = _answer(first)
    assert (int(answer.error_code), bytes(answer.auth_bytes)) == (0, b'{"status":"invalid_token"}') and not machine.done
    events = machine.receive(wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"}, correlation_id=2))
    assert [type(event) for event in events] == [LoginFailed, Reply, Close]
    final = _answer(events)
    assert (int(final.error_code), final.error_message) == (58, '{"status":"invalid_token"}')
    assert isinstance(events[0], LoginFailed) and (events[0].failure.mechanism, events[0].failure.error_code) == ("OAUTHBEARER", 58)
    assert events[-1] == Close(CAUSE_AUTHENTICATION_FAILED, delayed=True) and machine.done


def test_malformed_message_fails_at_once_on_the_wire(oauth_machine: tuple[SaslMachine, SigningKey]) -> None:
    machine, _ = oauth_machine
    events = machine.receive(wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"n,,\x01auth=Bearer \x01\x01"}))
    assert [type(event) for event in events] == [LoginFailed, Reply, Close]
    assert (int(_answer(events).error_code), _answer(events).error_message) == (58, MALFORMED_MESSAGE)


def test_good_token_logs_in_on_the_wire(oauth_machine: tuple[SaslMachine, SigningKey]) -> None:
    machine, key = oauth_machine
    token = key.sign(claims("4f0c1c7e-5b7a-4a57-9d4e-0c1f4f8b7b11"))
    events = machine.receive(wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": build_client_first(token)}))
    assert int(_answer(events).error_code) == 0 and bytes(_answer(events).auth_bytes) == b""
    assert isinstance(events[-1], LoggedIn) and str(events[-1].principal) == "User:4f0c1c7e-5b7a-4a57-9d4e-0c1f4f8b7b11"


# --------------------------------------------------------------------------- the client side


def test_client_exchange_logs_in_or_acknowledges_the_error() -> None:
    client = OAuthBearerClientExchange(JWT, extensions={"traceId": "t"})
    assert client.initial() == build_client_first(JWT, "", {"traceId": "t"})
    assert client.respond(b"") is None
    failing = OAuthBearerClientExchange(JWT)
    assert failing.respond(INVALID_TOKEN) == CONTROL_A and failing.server_error == '{"status":"invalid_token"}'
    with pytest.raises(ClientLoginFailed):
        failing.respond(b"")


def test_client_and_server_exchanges_agree() -> None:
    client = OAuthBearerClientExchange(JWT)
    server = OAuthBearerServerExchange(FixedValidator(None))
    assert client.respond(server.evaluate(client.initial())) == CONTROL_A
    with pytest.raises(AuthenticationFailed):
        server.evaluate(CONTROL_A)


# --------------------------------------------------------------------------- KIP-368


def test_reauthentication_delay_is_85_to_95_percent() -> None:
    rng = random.Random(7)
    delays = [reauthentication_delay(100_000, rng.uniform) for _ in range(200)]
    assert all(delay is not None and 85_000 <= delay <= 95_000 for delay in delays)
    assert reauthentication_delay(0) is None
