"""KIP-368 on the server side, fed bytes: the session's lifetime, and a re-authentication's rules (Kafka's
SaslServerAuthenticator and KafkaChannel), without sockets or clocks."""

import dataclasses
from typing import Any

import pytest

from devkit import wire
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from envelope.header import peek_request_header
from envelope.principal import Principal
from proxy.net.login import MIN_REAUTH_INTERVAL, SessionExpiry, SessionStep
from proxy.net.refusals import CAUSE_AUTHENTICATION_FAILED
from proxy.net.sasl.machine import (
    Close,
    LoggedIn,
    LoginFailed,
    Refused,
    Reply,
    SaslMachine,
    SessionLogin,
    illegal_sasl_state,
    session_lifetime_ms,
)
from proxy.net.sasl.scram_client import ScramClient
from proxy.net.settings import ListenerConfig, parse_listeners
from proxy.properties import Properties
from tests.proxy.net.sasl.test_machine import _PROPERTIES, _answer, _authenticate, _handshake
from tests.proxy.net.sasl.test_machine import _listener as _machine_listener

ALICE = Principal("User", "alice")
NOW_MS = 1_800_000_000_000


def _listener(tmp_path: Any, **max_reauth_ms: int) -> ListenerConfig:
    return dataclasses.replace(_machine_listener(tmp_path), max_reauth_ms=max_reauth_ms)


def _clock() -> int:
    return NOW_MS


@pytest.mark.parametrize(
    ("max_reauth_ms", "expiry_ms", "lifetime"),
    [
        (0, None, None),  # neither set: the session never expires, and 0 goes to the client
        (5000, None, 5000),
        (0, NOW_MS + 7000, 7000),  # a token's expiry alone sets it, as for OAUTHBEARER in Kafka
        (5000, NOW_MS + 7000, 5000),
        (9000, NOW_MS + 7000, 7000),
        (5000, NOW_MS - 1, 0),  # already expired: never negative
    ],
)
def test_the_session_lifetime_is_kafkas(max_reauth_ms: int, expiry_ms: int | None, lifetime: int | None) -> None:
    assert session_lifetime_ms(max_reauth_ms, expiry_ms, NOW_MS) == lifetime


_PLAIN_ONLY = {**_PROPERTIES, "sasl.enabled.mechanisms": "PLAIN"}


def test_connections_max_reauth_ms_is_looked_up_as_kafka_does() -> None:
    props = {
        **_PLAIN_ONLY,
        "connections.max.reauth.ms": "1000",
        "listener.name.client.connections.max.reauth.ms": "2000",
        "listener.name.client.plain.connections.max.reauth.ms": "3000",
    }
    (listener,) = parse_listeners(Properties(props))
    assert listener.max_reauth_ms == {"PLAIN": 3000}
    props.pop("listener.name.client.plain.connections.max.reauth.ms")
    (listener,) = parse_listeners(Properties(props))
    assert listener.max_reauth_ms == {"PLAIN": 2000}
    props.pop("listener.name.client.connections.max.reauth.ms")
    (listener,) = parse_listeners(Properties(props))
    assert listener.max_reauth_ms == {"PLAIN": 1000}
    (listener,) = parse_listeners(Properties(_PLAIN_ONLY))
    assert listener.max_reauth_ms == {"PLAIN": 0}


def test_a_negative_connections_max_reauth_ms_is_a_configuration_error_naming_the_key() -> None:
    with pytest.raises(Exception, match=r"-5.*listener\.name\.client\.plain\.connections\.max\.reauth\.ms: must be at least 0"):
        parse_listeners(Properties({**_PLAIN_ONLY, "listener.name.client.plain.connections.max.reauth.ms": "-5"}))


def test_a_login_tells_the_client_its_session_lifetime(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path, PLAIN=5000), wall_clock_ms=_clock)
    machine.receive(_handshake())
    events = machine.receive(_authenticate(b"\x00alice\x00alice-secret"))
    assert _answer(events, 36, 2).session_lifetime.total_seconds() == 5.0
    assert events[-1] == LoggedIn(ALICE, "PLAIN", 5000)


def test_without_a_lifetime_the_client_is_told_zero_and_the_session_does_not_expire(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path), wall_clock_ms=_clock)
    machine.receive(_handshake())
    events = machine.receive(_authenticate(b"\x00alice\x00alice-secret"))
    assert _answer(events, 36, 2).session_lifetime.total_seconds() == 0
    assert events[-1] == LoggedIn(ALICE, "PLAIN", None)


def test_a_reauthentication_with_the_same_principal_succeeds_with_a_new_lifetime(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path, PLAIN=5000), reauthenticating=SessionLogin("PLAIN", ALICE), wall_clock_ms=_clock)
    assert int(_answer(machine.receive(_handshake()), 17, 1).error_code) == 0
    events = machine.receive(_authenticate(b"\x00alice\x00alice-secret"))
    assert int(_answer(events, 36, 2).error_code) == 0
    assert events[-1] == LoggedIn(ALICE, "PLAIN", 5000)


def test_a_reauthentication_may_not_change_the_principal(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path, PLAIN=5000), reauthenticating=SessionLogin("PLAIN", Principal("User", "bob")))
    machine.receive(_handshake())
    events = machine.receive(_authenticate(b"\x00alice\x00alice-secret"))
    assert [type(e) for e in events] == [LoginFailed, Reply, Close]
    answer = _answer(events, 36, 2)
    message = "Cannot change principals during re-authentication from User.bob: User.alice"
    assert (int(answer.error_code), answer.error_message) == (58, message)
    assert events[2] == Close(CAUSE_AUTHENTICATION_FAILED, delayed=True)
    assert machine.done


def test_a_reauthentication_may_not_change_the_mechanism(tmp_path: Any) -> None:
    # Kafka answers the SaslHandshake with success, then fails the next frame without an answer.
    machine = SaslMachine(_listener(tmp_path), reauthenticating=SessionLogin("PLAIN", ALICE))
    assert int(_answer(machine.receive(_handshake("SCRAM-SHA-256")), 17, 1).error_code) == 0
    client = ScramClient("SCRAM-SHA-256", "carol", "carol-secret")
    events = machine.receive(_authenticate(client.first()))
    assert [type(e) for e in events] == [LoginFailed, Close]
    assert isinstance(events[0], LoginFailed)
    assert events[0].failure.message == "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for re-authentication of mechanism 'PLAIN'"


def test_a_failed_reauthentication_says_so_in_kafkas_words(tmp_path: Any) -> None:
    carol = Principal("User", "carol")
    machine = SaslMachine(_listener(tmp_path), reauthenticating=SessionLogin("SCRAM-SHA-256", carol))
    machine.receive(_handshake("SCRAM-SHA-256"))
    client = ScramClient("SCRAM-SHA-256", "carol", "wrong")
    server_first = _answer(machine.receive(_authenticate(client.first())), 36, 2)
    events = machine.receive(_authenticate(client.final(bytes(server_first.auth_bytes))))
    answer = _answer(events, 36, 2)
    assert answer.error_message == "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"


@pytest.mark.parametrize(("api_key", "version"), [(ApiKey.SASL_HANDSHAKE, 1), (ApiKey.SASL_HANDSHAKE, 0), (ApiKey.SASL_AUTHENTICATE, 2), (ApiKey.SASL_AUTHENTICATE, 0)])
def test_sasl_frames_that_begin_no_reauthentication_get_illegal_sasl_state(api_key: int, version: int) -> None:
    values: dict[str, object] = {"mechanism": "PLAIN"} if api_key == ApiKey.SASL_HANDSHAKE else {"auth_bytes": b"x"}
    header = wire.request(api_key, version, values, correlation_id=7)
    correlation_id, body = decode_response_body(api_key, version, illegal_sasl_state(peek_request_header(header)))
    assert (correlation_id, int(body.error_code)) == (7, 34)
    if api_key == ApiKey.SASL_AUTHENTICATE:
        assert body.error_message == "SaslAuthenticate request received after successful authentication"
    else:
        assert list(body.mechanisms) == []


def test_a_session_without_a_lifetime_serves_everything_and_never_reauthenticates() -> None:
    expiry = SessionExpiry()
    expiry.logged_in(None, now=100.0)
    assert expiry.step(ApiKey.SASL_HANDSHAKE, 10_000.0) is SessionStep.SERVE
    assert expiry.step(ApiKey.CREATE_TOPICS, 10_000.0) is SessionStep.SERVE


def test_a_request_after_the_expiry_closes_and_a_handshake_still_reauthenticates() -> None:
    expiry = SessionExpiry()
    expiry.logged_in(2000, now=100.0)
    assert expiry.step(ApiKey.CREATE_TOPICS, 101.9) is SessionStep.SERVE
    assert expiry.step(ApiKey.CREATE_TOPICS, 102.1) is SessionStep.EXPIRED
    assert expiry.step(ApiKey.SASL_HANDSHAKE, 102.1) is SessionStep.REAUTHENTICATE  # Kafka checks this first


def test_reauthentications_begin_at_most_once_a_second() -> None:
    expiry = SessionExpiry()
    expiry.logged_in(60_000, now=0.0)
    assert expiry.step(ApiKey.SASL_HANDSHAKE, 10.0) is SessionStep.REAUTHENTICATE
    expiry.logged_in(60_000, now=10.0)
    # Within the second: not a re-authentication, so KafkaApis answers it ILLEGAL_SASL_STATE.
    assert expiry.step(ApiKey.SASL_HANDSHAKE, 10.0 + MIN_REAUTH_INTERVAL / 2) is SessionStep.SERVE
    assert expiry.step(ApiKey.SASL_HANDSHAKE, 10.0 + MIN_REAUTH_INTERVAL) is SessionStep.REAUTHENTICATE


def test_a_protocol_error_during_a_reauthentication_names_the_sessions_principal(tmp_path: Any) -> None:
    """Found by an outside check: the refusal of a connection that had logged in carried no principal."""
    machine = SaslMachine(_listener(tmp_path, PLAIN=5000), reauthenticating=SessionLogin("PLAIN", ALICE))
    assert int(_answer(machine.receive(_handshake()), 17, 1).error_code) == 0
    events = machine.receive(wire.request(ApiKey.API_VERSIONS, 0, {}))  # an ApiVersions where the SaslAuthenticate belongs
    (refused,) = [e for e in events if isinstance(e, Refused)]
    assert (refused.reason, refused.principal, refused.mechanism) == ("protocol-error", ALICE, "PLAIN")
