"""The SASL state machine, fed bytes: no sockets, no clock, no callbacks."""

import dataclasses
import struct
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope.apis import ApiKey, api_name
from envelope.codec import decode_response_body, request_header_version
from envelope.errors import ProtocolError
from proxy.net.refusals import (
    CAUSE_AUTHENTICATION_FAILED,
    CAUSE_PRIVILEGED_PRINCIPAL,
    CAUSE_PROTOCOL_ERROR,
    PRIVILEGED_PRINCIPAL,
    PROTOCOL_ERROR,
)
from proxy.net.sasl.machine import (
    TRANSITIONS,
    ApiVersionsRequest,
    Close,
    Event,
    LoggedIn,
    LoginFailed,
    LoginState,
    Refused,
    Reply,
    SaslMachine,
    Unread,
)
from proxy.net.sasl.scram_client import ScramClient
from proxy.net.settings import ListenerConfig
from proxy.properties import Properties

_PROPERTIES = {
    "listeners": "CLIENT://127.0.0.1:0",
    "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.client.plain.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_proxy="proxy-secret";',
}


def _listener(tmp_path: Any, *, privileged: frozenset[str] = frozenset()) -> ListenerConfig:
    from proxy.net.sasl.credentials import add_user
    from proxy.net.settings import parse_listeners

    credentials = tmp_path / "scram.json"
    add_user(credentials, "carol", "carol-secret", mechanisms=["SCRAM-SHA-256"])
    props = Properties({**_PROPERTIES, "sasl.scram.credentials.file": str(credentials)})
    (listener,) = parse_listeners(props)
    return dataclasses.replace(listener, privileged_principals=privileged)


def _answer(events: list[Event], api_key: int, version: int) -> Any:
    replies = [e for e in events if isinstance(e, Reply)]
    assert len(replies) == 1
    return decode_response_body(api_key, version, replies[0].data)[1]


def _handshake(mechanism: str = "PLAIN") -> bytes:
    return wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})


def _authenticate(token: bytes) -> bytes:
    return wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


def test_plain_login_in_two_frames(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path))
    assert int(_answer(machine.receive(_handshake()), 17, 1).error_code) == 0
    events = machine.receive(_authenticate(b"\x00alice\x00alice-secret"))
    assert int(_answer(events, ApiKey.SASL_AUTHENTICATE, 2).error_code) == 0
    assert events[-1] == LoggedIn(principal=events[-1].principal, mechanism="PLAIN") and str(events[-1].principal) == "User:alice"
    assert machine.done


def test_scram_login_in_three_frames(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path))
    machine.receive(_handshake("SCRAM-SHA-256"))
    client = ScramClient("SCRAM-SHA-256", "carol", "carol-secret")
    server_first = _answer(machine.receive(_authenticate(client.first())), 36, 2)
    events = machine.receive(_authenticate(client.final(bytes(server_first.auth_bytes))))
    client.verify(bytes(_answer(events, ApiKey.SASL_AUTHENTICATE, 2).auth_bytes))
    assert isinstance(events[-1], LoggedIn) and str(events[-1].principal) == "User:carol"


def test_a_wrong_password_is_audited_before_the_answer_and_closed_after_the_delay(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path))
    machine.receive(_handshake())
    events = machine.receive(_authenticate(b"\x00alice\x00wrong"))
    assert [type(e) for e in events] == [LoginFailed, Reply, Close]
    failed = events[0]
    assert isinstance(failed, LoginFailed) and (failed.failure.user, failed.failure.error_code) == ("alice", ErrorCode.sasl_authentication_failed)
    assert int(_answer(events, ApiKey.SASL_AUTHENTICATE, 2).error_code) == ErrorCode.sasl_authentication_failed
    assert events[-1] == Close(CAUSE_AUTHENTICATION_FAILED, delayed=True)


def test_an_unsupported_mechanism(tmp_path: Any) -> None:
    events = SaslMachine(_listener(tmp_path)).receive(_handshake("GSSAPI"))
    assert [type(e) for e in events] == [LoginFailed, Reply, Close]
    assert int(_answer(events, ApiKey.SASL_HANDSHAKE, 1).error_code) == ErrorCode.unsupported_sasl_mechanism


def test_one_api_versions_before_the_handshake(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path))
    versions = wire.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"})
    (event,) = machine.receive(versions)
    assert isinstance(event, ApiVersionsRequest) and event.frame == versions
    machine.api_versions_answered(False)  # an INVALID_REQUEST answer: the client may ask again
    assert isinstance(machine.receive(versions)[0], ApiVersionsRequest)
    machine.api_versions_answered(True)
    events = machine.receive(versions)  # a second valid one: Kafka closes
    assert isinstance(events[0], Refused) and events[0].reason == PROTOCOL_ERROR
    assert events[-1] == Close(CAUSE_PROTOCOL_ERROR)


def test_a_request_before_the_login_is_illegal(tmp_path: Any) -> None:
    events = SaslMachine(_listener(tmp_path)).receive(wire.request(ApiKey.CREATE_TOPICS, 7, {"topics": [], "timeout": 1, "validate_only": False}))
    assert isinstance(events[0], Refused) and "ILLEGAL_SASL_STATE" in events[0].detail
    assert events[-1] == Close(CAUSE_PROTOCOL_ERROR)


def test_a_privileged_principal_is_refused_after_its_login(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path, privileged=frozenset({"User:proxy"})))
    machine.receive(_handshake())
    events = machine.receive(_authenticate(b"\x00proxy\x00proxy-secret"))
    assert [type(e) for e in events] == [Refused, Reply, Close]
    assert isinstance(events[0], Refused) and events[0].reason == PRIVILEGED_PRINCIPAL
    assert events[-1] == Close(CAUSE_PRIVILEGED_PRINCIPAL, delayed=True)


def test_raw_v0_tokens(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path))
    assert int(_answer(machine.receive(wire.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})), 17, 0).error_code) == 0
    events = machine.receive(b"\x00alice\x00alice-secret")  # a bare token, no Kafka header
    assert events[0] == Reply(b"") and isinstance(events[-1], LoggedIn)


def test_a_malformed_sasl_frame_is_a_protocol_error(tmp_path: Any) -> None:
    machine = SaslMachine(_listener(tmp_path))
    frame = _handshake()
    with pytest.raises(ProtocolError):
        machine.receive(frame[:-7] + b"\x7f\xffPL")  # a mechanism length past the frame


@pytest.mark.parametrize(
    ("token", "message"),
    [
        # Kafka 4.3.1's PlainSaslServer, as tests/interop/test_hostile_sasl_kafka.py sees it answer
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"\x00alic", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\x00alice\x00alice-secret\x00", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"a\x00b\x00c\x00d\x00e", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"n,,n=alice,r=abc", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"\x00\x00alice-secret", "Authentication failed: username not specified"),
        (b"\x00alice\x00", "Authentication failed: password not specified"),
        (b"bob\x00alice\x00wrong", "Authentication failed: Invalid username or password"),  # credentials before the authzid
        (b"\x00alice\x00\xff\xfe", "Authentication failed: Invalid username or password"),  # not UTF-8: replaced, as Java reads it
        (b"bob\x00alice\x00alice-secret", "Authentication failed: Client requested an authorization id that is different from username"),
    ],
)
def test_plain_failures_carry_kafkas_messages(tmp_path: Any, token: bytes, message: str) -> None:
    machine = SaslMachine(_listener(tmp_path))
    machine.receive(_handshake())
    events = machine.receive(_authenticate(token))
    answer = _answer(events, ApiKey.SASL_AUTHENTICATE, 2)
    assert (int(answer.error_code), answer.error_message) == (58, message)
    assert events[-1] == Close(CAUSE_AUTHENTICATION_FAILED, delayed=True)


@pytest.mark.parametrize("proof", ["", "AAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
def test_a_scram_proof_of_the_wrong_length_closes_unanswered_at_once(tmp_path: Any, proof: str) -> None:
    """Kafka's xor of a proof and a signature of different lengths throws an IllegalArgumentException: no answer, and
    the Selector closes the connection at once. The failure is audited all the same."""
    machine = SaslMachine(_listener(tmp_path))
    machine.receive(_handshake("SCRAM-SHA-256"))
    client = ScramClient("SCRAM-SHA-256", "carol", "carol-secret")
    server_first = _answer(machine.receive(_authenticate(client.first())), 36, 2)
    final = client.final(bytes(server_first.auth_bytes))
    events = machine.receive(_authenticate(final[: final.index(b",p=") + 3] + proof.encode()))
    assert [type(e) for e in events] == [LoginFailed, Close]
    failed = events[0]
    assert isinstance(failed, LoginFailed) and (failed.failure.user, failed.failure.error_code) == ("carol", ErrorCode.sasl_authentication_failed)
    assert "proof must be 32 bytes" in (failed.failure.reason or "")
    assert events[-1] == Close(CAUSE_AUTHENTICATION_FAILED, delayed=False)
    assert machine.done


# -- the transition table -------------------------------------------------------------------

_UNKNOWN_API_KEY = 32767  # no Kafka API: no row can name it


def _header_only(api_key: int) -> bytes:
    """A request of `api_key` with a header and no body: the machine reads the header of a frame it refuses, no more."""
    version = 0
    header_version = request_header_version(api_key, version)
    client_id = b"test"
    tagged_fields = b"\x00" if header_version == 2 else b""
    return struct.pack(">hhih", api_key, version, 7, len(client_id)) + client_id + tagged_fields


def _machine_in(tmp_path: Any, state: LoginState) -> SaslMachine:
    machine = SaslMachine(_listener(tmp_path))
    if state is not LoginState.START:
        machine.api_versions_answered(True)
    if state is LoginState.AUTHENTICATE:
        machine.receive(_handshake())
    assert machine.state is state
    return machine


_READ_STATES = (LoginState.START, LoginState.HANDSHAKE, LoginState.AUTHENTICATE)


@pytest.mark.parametrize("state", _READ_STATES, ids=lambda s: s.name)
def test_every_api_a_state_has_no_row_for_is_refused_as_kafka_refuses_it(tmp_path: Any, state: LoginState) -> None:
    """Kafka's SaslServerAuthenticator answers any request it does not expect before the login completes with
    ILLEGAL_SASL_STATE and closes; the table's one refusal path does the same for every API and an unknown one."""
    refused = [key for key in [*ApiKey, _UNKNOWN_API_KEY] if (state, key) not in TRANSITIONS]
    assert ApiKey.PRODUCE in refused
    for api_key in refused:
        machine = _machine_in(tmp_path, state)
        events = machine.receive(_header_only(api_key))
        assert [type(e) for e in events] == [Refused, Close], (state, api_key)
        refusal = events[0]
        assert isinstance(refusal, Refused) and refusal.reason == PROTOCOL_ERROR
        assert refusal.detail == f"{api_name(api_key)} v0 before SASL authentication completed (ILLEGAL_SASL_STATE)"
        assert events[-1] == Close(CAUSE_PROTOCOL_ERROR)
        assert machine.done


def test_the_table_reads_a_header_in_a_state_or_none() -> None:
    """A state whose frames carry no header (after SaslHandshake v0, after a changed mechanism) takes any frame, so it
    has exactly one row; the others are looked up by API key. DONE has none: nothing follows a login."""
    states = {state for state, _ in TRANSITIONS}
    assert states == set(LoginState) - {LoginState.DONE}
    for state in states:
        triggers = [trigger for row_state, trigger in TRANSITIONS if row_state is state]
        assert Unread.FRAME not in triggers or triggers == [Unread.FRAME], state
    for (state, trigger), transition in TRANSITIONS.items():
        # every step can fail, but handing an ApiVersions to the caller, who answers it
        assert (LoginState.DONE in transition.next_states) is not (trigger == ApiKey.API_VERSIONS), state


def test_a_handshake_after_the_handshake_is_refused(tmp_path: Any) -> None:
    machine = _machine_in(tmp_path, LoginState.AUTHENTICATE)
    events = machine.receive(_handshake())
    assert isinstance(events[0], Refused) and events[0].principal is None and events[0].mechanism == "PLAIN"
    assert events[-1] == Close(CAUSE_PROTOCOL_ERROR)


def test_the_login_over_takes_no_frame(tmp_path: Any) -> None:
    machine = _machine_in(tmp_path, LoginState.AUTHENTICATE)
    machine.receive(_authenticate(b"\x00alice\x00alice-secret"))
    assert machine.state is LoginState.DONE
    with pytest.raises(RuntimeError):
        machine.receive(_authenticate(b"\x00alice\x00alice-secret"))


def test_a_raw_token_state_reads_no_header(tmp_path: Any) -> None:
    """After SaslHandshake v0 a frame is a token even when its first bytes look like a Kafka header."""
    machine = SaslMachine(_listener(tmp_path))
    machine.receive(wire.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}))
    assert machine.state is LoginState.RAW_TOKENS
    events = machine.receive(_header_only(ApiKey.PRODUCE))
    answer = [type(e) for e in events]
    assert answer == [LoginFailed, Close]  # a PLAIN token, which fails: raw tokens carry no answer
