"""The request path of ProxyService over in-memory streams: a fake controller connection, an in-memory audit, MockClock."""

from typing import Any

import pytest
import trio
from trio.testing import MockClock

from apiversions import VersionRange
from devkit import wire
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from envelope.principal import Principal
from envelope.wrap import wrap
from proxy.audit.cloudevents import CONNECTION_EVENT_TYPE
from tests.audit_records import assert_valid
from tests.proxy.forward.harness import (
    CLUSTER_ID,
    CONTROLLER_RANGES,
    CREATE_TOPICS_VERSION,
    NODE_ID,
    PREAUTH_IDLE_SECONDS,
    Answer,
    Proxy,
    ReceivedEnvelope,
    answer_ok,
    api_versions,
    create_topics,
    envelope_error_forever,
    envelope_errors,
    raw_request,
    success_answer,
    unavailable,
    with_unknown_tag,
)

TOPIC = {"type": "TOPIC", "name": "orders", "patternType": "LITERAL", "operation": "CREATE"}


def created(frame: bytes, correlation_id: int = 7) -> list[tuple[str, int, str | None]]:
    """(name, error code, error message) of each topic of a CreateTopics answer."""
    received, body = decode_response_body(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, frame)
    assert received == correlation_id
    return [(str(t.name), int(t.error_code), t.error_message) for t in body.topics]


# -- PLAINTEXT: local answers and forwarding ---------------------------------------------------


async def test_api_versions_is_answered_with_the_intersection_and_audited_local(proxy: Proxy, autojump_clock: MockClock) -> None:
    client = proxy.connect()
    received, body = decode_response_body(ApiKey.API_VERSIONS, 3, await client.exchange(api_versions(correlation_id=1)))
    assert received == 1 and int(body.error_code) == 0
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}
    assert ranges[ApiKey.CREATE_TOPICS] == (2, 5)  # the proxy's 2..7 and the controller's 0..5
    assert ranges[ApiKey.API_VERSIONS] == (0, 4)
    assert ApiKey.CREATE_ACLS not in ranges  # forwardable, but the controller does not serve it
    assert ApiKey.ENVELOPE not in ranges
    assert proxy.stages(client) == ["connected", "local"]
    (local,) = proxy.records(client, stage="local")
    assert local["methodName"] == "kafka.ApiVersions" and local["apiVersion"] == 3
    assert local["result"] == {"status": "SUCCESS", "envelopeErrorCode": None, "errorCode": 0, "errors": []}
    assert local["requestMetadata"]["correlationId"] == 1
    assert (local["requestMetadata"]["clientSoftwareName"], local["requestMetadata"]["clientSoftwareVersion"]) == ("unit-client", "1.0")
    assert proxy.upstream.envelopes == []


async def test_create_topics_is_forwarded_untouched_and_audited_as_intent_then_outcome(proxy: Proxy, autojump_clock: MockClock) -> None:
    stages_when_forwarded: list[str] = []

    async def respond(envelope: ReceivedEnvelope) -> Answer:
        stages_when_forwarded.extend(record["data"]["stage"] for record in proxy.sink.records)
        return await answer_ok(envelope)

    proxy.upstream.respond = respond
    client = proxy.connect()
    request = with_unknown_tag(create_topics("orders", correlation_id=7))
    answer = await client.exchange(request)

    (envelope,) = proxy.upstream.envelopes
    assert envelope.parts.request_data == request  # the client's bytes, its unknown tagged field too: not a re-encoding
    assert str(envelope.parts.principal) == "User:ANONYMOUS" and str(envelope.parts.client_address) == "127.0.0.1"
    assert answer == success_answer(envelope)  # the embedded answer, byte for byte
    assert created(answer) == [("orders", 0, None)]
    assert stages_when_forwarded == ["connected", "intent"]  # the intent is committed before the controller sees the request

    intent, outcome = proxy.records(client)[1:]
    assert (intent["stage"], outcome["stage"]) == ("intent", "outcome")
    assert intent["requestId"] == outcome["requestId"]
    assert intent["resources"] == outcome["resources"] == [TOPIC]
    subjects = [r["subject"] for r in proxy.sink.records if r["data"]["requestId"] == intent["requestId"]]
    assert subjects == ["topic:orders", "topic:orders"]
    assert outcome["result"] == {"status": "SUCCESS", "envelopeErrorCode": 0, "errorCode": 0, "errors": []}
    assert outcome["forwardingPrincipal"] == "User:ANONYMOUS" and outcome["upstream"]["address"] == "127.0.0.1:9999"


async def test_describe_cluster_is_answered_by_the_proxy_itself(proxy: Proxy, autojump_clock: MockClock) -> None:
    client = proxy.connect()
    body = await client.call(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False}, correlation_id=4)
    assert int(body.error_code) == 0 and body.cluster_id == CLUSTER_ID and int(body.controller_id) == NODE_ID
    assert [(int(b.broker_id), b.host, int(b.port)) for b in body.brokers] == [(NODE_ID, "127.0.0.1", 9092)]
    (local,) = proxy.records(client, stage="local")
    assert local["methodName"] == "kafka.DescribeCluster" and local["requestMetadata"]["correlationId"] == 4
    assert proxy.upstream.envelopes == []


# -- the controller's answers ------------------------------------------------------------------


async def test_not_controller_is_retried_until_the_controller_answers(proxy: Proxy, autojump_clock: MockClock) -> None:
    proxy.upstream.respond = envelope_errors(41, 41)
    client = proxy.connect()
    request = create_topics()
    answer = await client.exchange(request)
    assert len(proxy.upstream.envelopes) == 3
    assert all(envelope.parts.request_data == request for envelope in proxy.upstream.envelopes)
    assert answer == success_answer(proxy.upstream.envelopes[-1])
    # Each NOT_CONTROLLER made the pool forget the node and look for the active controller again.
    assert proxy.upstream.forgotten == ["127.0.0.1:9999"] * 2
    (outcome,) = proxy.records(client, stage="outcome")
    assert outcome["result"]["status"] == "SUCCESS" and outcome["result"]["envelopeErrorCode"] == 0
    assert outcome["upstream"]["attempts"] == 3 and outcome["upstream"]["address"] == "127.0.0.1:9999"


async def test_not_controller_until_the_forward_deadline_gives_request_timed_out(proxy: Proxy, autojump_clock: MockClock) -> None:
    proxy.upstream.respond = envelope_error_forever(41)
    client = proxy.connect()
    started = trio.current_time()
    answer = await client.exchange(create_topics())
    waited = trio.current_time() - started
    # As Kafka's ForwardingManager: re-sent with backoff until the request is controller.forward.timeout.ms old.
    forward_timeout = proxy.config.upstream.forward_timeout
    assert forward_timeout - 1.5 <= waited <= forward_timeout
    assert len(proxy.upstream.envelopes) > 4
    ((name, code, message),) = created(answer)
    assert (name, code) == ("orders", 7) and message is not None and "controller.forward.timeout.ms" in message
    (outcome,) = proxy.records(client, stage="outcome")
    assert outcome["result"]["status"] == "ERROR"
    assert (outcome["result"]["envelopeErrorCode"], outcome["result"]["errorCode"]) == (41, 7)
    assert outcome["upstream"]["attempts"] == len(proxy.upstream.envelopes)


async def test_an_unavailable_controller_gives_request_timed_out(proxy: Proxy, autojump_clock: MockClock) -> None:
    proxy.upstream.respond = unavailable
    client = proxy.connect()
    answer = await client.exchange(create_topics())
    ((name, code, message),) = created(answer)
    assert (name, code) == ("orders", 7) and message is not None and "no answer from controller" in message
    assert proxy.stages(client) == ["connected", "intent", "outcome"]
    (outcome,) = proxy.records(client, stage="outcome")
    assert outcome["result"]["status"] == "ERROR"
    assert (outcome["result"]["envelopeErrorCode"], outcome["result"]["errorCode"]) == (None, 7)


async def test_unsupported_version_closes_the_connection_as_versions_changed(proxy: Proxy, autojump_clock: MockClock) -> None:
    proxy.upstream.respond = envelope_error_forever(35)
    client = proxy.connect()
    await client.send(create_topics())
    await client.assert_closed()  # no answer: the client must ask ApiVersions again
    assert len(proxy.upstream.envelopes) == 1  # not retried
    assert proxy.stages(client) == ["connected", "intent", "outcome", "disconnected"]
    (outcome,) = proxy.records(client, stage="outcome")
    assert outcome["result"]["status"] == "ERROR"
    assert (outcome["result"]["envelopeErrorCode"], outcome["result"]["errorCode"]) == (35, 35)
    assert proxy.disconnect_cause(client) == "versions-changed"


# -- refused requests --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "api_key", "reason"),
    [
        (raw_request(ApiKey.FETCH, 4, correlation_id=9), ApiKey.FETCH, "API Fetch is not served by this proxy"),
        (
            wrap(create_topics(), Principal("User", "admin"), "10.0.0.1", correlation_id=9, client_id="sneaky"),
            ApiKey.ENVELOPE,
            "Envelope is not accepted from clients",
        ),
        (create_topics(correlation_id=9, version=6), ApiKey.CREATE_TOPICS, "version 6 of CreateTopics is not in 2..5"),
    ],
    ids=["api-not-served", "envelope", "version-not-advertised"],
)
async def test_a_refused_request_is_audited_and_closes_the_connection(
    proxy: Proxy, autojump_clock: MockClock, frame: bytes, api_key: int, reason: str
) -> None:
    client = proxy.connect()
    await client.send(frame)
    await client.assert_closed()
    assert proxy.upstream.envelopes == []
    assert proxy.stages(client) == ["connected", "refused", "disconnected"]
    (refused,) = proxy.records(client, stage="refused")
    assert (refused["apiKey"], refused["requestMetadata"]["correlationId"]) == (api_key, 9)
    assert refused["authorizationInfo"] == {"decision": "DENIED", "reason": reason}
    assert refused["result"]["status"] == "REFUSED" and refused["result"]["errorCode"] == 42
    assert proxy.disconnect_cause(client) == "protocol-error"


async def test_a_refused_api_key_unknown_to_kafka_gets_a_record_matching_the_schema(proxy: Proxy, autojump_clock: MockClock) -> None:
    client = proxy.connect()
    await client.send(raw_request(1000, 0, correlation_id=9))
    await client.assert_closed()
    (refused,) = proxy.records(client, stage="refused")
    assert refused["apiKey"] == 1000 and refused["methodName"] == "kafka.Unknown"
    assert refused["authorizationInfo"]["reason"] == "API Unknown(1000) is not served by this proxy"
    assert_valid(proxy.sink.records)


# -- SASL_PLAINTEXT ---------------------------------------------------------------------------


async def test_a_plain_login_then_a_request_is_forwarded_as_the_user(proxy: Proxy, autojump_clock: MockClock) -> None:
    client = proxy.connect("CLIENT")
    await client.exchange(api_versions(correlation_id=1))
    result = await client.sasl_plain("alice", "alice-secret")
    assert int(result.error_code) == 0
    answer = await client.exchange(create_topics())
    assert created(answer) == [("orders", 0, None)]
    (envelope,) = proxy.upstream.envelopes
    assert envelope.parts.principal == Principal("User", "alice")
    assert proxy.stages(client) == ["connected", "local", "authenticated", "intent", "outcome"]
    (authenticated,) = proxy.records(client, stage="authenticated")
    assert authenticated["authenticationInfo"]["principal"] == "User:alice" and authenticated["authenticationInfo"]["mechanism"] == "PLAIN"
    (intent,) = proxy.records(client, stage="intent")
    assert intent["authenticationInfo"]["principal"] == "User:alice"


async def test_a_wrong_password_gets_58_is_audited_and_closes_after_the_delay(proxy: Proxy, autojump_clock: MockClock) -> None:
    client = proxy.connect("CLIENT")
    result = await client.sasl_plain("alice", "wrong")
    assert int(result.error_code) == 58 and result.error_message == "Authentication failed: Invalid username or password"
    answered = trio.current_time()
    await client.assert_closed()
    assert trio.current_time() - answered == pytest.approx(proxy.config.transport.failed_auth_delay)
    assert proxy.stages(client) == ["connected", "authentication-failed", "disconnected"]
    (failed,) = proxy.records(client, stage="authentication-failed")
    assert failed["authenticationInfo"]["principal"] == "User:alice"
    assert failed["authorizationInfo"]["reason"] == "authentication-failed"
    assert failed["result"]["errorCode"] == 58
    assert proxy.disconnect_cause(client) == "authentication-failed"
    assert proxy.upstream.envelopes == []


async def test_a_second_api_versions_before_the_handshake_is_a_protocol_error(proxy: Proxy, autojump_clock: MockClock) -> None:
    client = proxy.connect("CLIENT")
    await client.exchange(api_versions(correlation_id=1))
    await client.send(api_versions(correlation_id=2))
    await client.assert_closed()
    assert proxy.stages(client) == ["connected", "local", "refused", "disconnected"]
    (refused,) = [r for r in proxy.sink.records if r["data"]["stage"] == "refused"]
    assert refused["type"] == CONNECTION_EVENT_TYPE  # the connection is refused, not one request
    assert refused["data"]["authorizationInfo"]["reason"] == "protocol-error"
    assert "ILLEGAL_SASL_STATE" in refused["data"]["authorizationInfo"]["detail"]
    assert proxy.disconnect_cause(client) == "protocol-error"


# -- idle connections and the drain -----------------------------------------------------------


@pytest.mark.parametrize("listener", ["PLAIN", "CLIENT"])
async def test_a_silent_connection_is_closed_after_preauth_idle(proxy: Proxy, autojump_clock: MockClock, listener: str) -> None:
    assert proxy.listener(listener).idle_timeout > PREAUTH_IDLE_SECONDS  # so the shorter timeout is the one that applies
    client = proxy.connect(listener)
    started = trio.current_time()
    await client.assert_closed()
    assert trio.current_time() - started == pytest.approx(PREAUTH_IDLE_SECONDS)
    assert proxy.stages(client) == ["connected", "disconnected"]
    assert proxy.disconnect_cause(client) == "idle"


async def test_after_a_login_a_quiet_connection_waits_for_connections_max_idle_ms_as_in_kafka(proxy: Proxy, autojump_clock: MockClock) -> None:
    # Kafka has no deadline for an authenticated connection's first request: only connections.max.idle.ms.
    client = proxy.connect("CLIENT")
    assert int((await client.sasl_plain("alice", "alice-secret")).error_code) == 0
    await trio.sleep(PREAUTH_IDLE_SECONDS * 3)
    assert int((await client.call(60, 0, {"include_cluster_authorized_operations": False}, correlation_id=9)).error_code) == 0
    logged_in = trio.current_time()
    await client.assert_closed()
    assert trio.current_time() - logged_in == pytest.approx(proxy.listener("CLIENT").idle_timeout)
    assert proxy.disconnect_cause(client) == "idle"


async def test_drain_lets_the_request_in_flight_finish_then_wait_drained_returns(proxy: Proxy, autojump_clock: MockClock) -> None:
    release = trio.Event()

    async def respond(envelope: ReceivedEnvelope) -> Answer:
        await release.wait()
        return await answer_ok(envelope)

    proxy.upstream.respond = respond
    busy, idle = proxy.connect(), proxy.connect()
    await idle.exchange(api_versions())  # logged in, waiting for its next request
    await busy.send(create_topics())
    await proxy.upstream.arrived.wait()

    started = trio.current_time()
    proxy.service.drain()
    await idle.assert_closed()  # nothing in flight: closed at once
    assert not proxy.service.drained.is_set()  # busy's request is still in flight
    release.set()
    with trio.fail_after(1):
        await proxy.service.wait_drained()
    assert trio.current_time() == started  # no timeout waited for, no polling: woken by the sessions' ends
    assert [r["result"]["status"] for r in proxy.records(busy, stage="outcome")] == ["SUCCESS"]

    answer = await busy.receive()
    assert answer is not None and created(answer) == [("orders", 0, None)]
    await busy.assert_closed()
    assert proxy.disconnect_cause(busy) == proxy.disconnect_cause(idle) == "shutdown"


# -- what Kafka cannot read ----------------------------------------------------------------------

ACL_VERSION = 3
UNKNOWN_CODE = 0  # UNKNOWN in each of the four ACL enums
UNNAMED_CODE = 99  # a code no enum names: Kafka reads it, and decides later


def _creation(operation: int) -> dict[str, Any]:
    return {
        "resource_type": 2,
        "resource_name": "orders",
        "resource_pattern_type": 3,
        "principal": "User:bob",
        "host": "*",
        "operation": operation,
        "permission_type": 3,
    }


def _acl_filter(pattern_type: int) -> dict[str, Any]:
    return {
        "resource_type_filter": 2,
        "resource_name_filter": None,
        "pattern_type_filter": pattern_type,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }


@pytest.mark.parametrize(
    ("api_key", "values", "reason"),
    [
        (ApiKey.CREATE_ACLS, {"creations": [_creation(2), _creation(UNKNOWN_CODE)]}, "CreatableAcls contain unknown elements"),
        (ApiKey.DELETE_ACLS, {"filters": [_acl_filter(UNKNOWN_CODE)]}, "Filters contain UNKNOWN elements"),
        (ApiKey.DESCRIBE_ACLS, {**_acl_filter(3), "resource_type_filter": UNKNOWN_CODE}, "DescribeAclsRequest contains UNKNOWN elements"),
    ],
    ids=["create-acls-operation", "delete-acls-pattern-type", "describe-acls-resource-type"],
)
async def test_an_acl_request_kafka_cannot_read_closes_the_connection_and_asks_no_upstream(
    proxy: Proxy, autojump_clock: MockClock, api_key: int, values: dict[str, Any], reason: str
) -> None:
    """A broker's request parser refuses UNKNOWN codes and closes the connection: nothing is forwarded or retried."""
    proxy.upstream.controller_ranges = {**CONTROLLER_RANGES, ApiKey.CREATE_ACLS: VersionRange(0, 3), ApiKey.DELETE_ACLS: VersionRange(0, 3)}
    client = proxy.connect()
    await client.send(wire.request(api_key, ACL_VERSION, values, 9))
    await client.assert_closed()
    assert proxy.upstream.envelopes == []
    assert proxy.stages(client) == ["connected", "refused", "disconnected"]
    (refused,) = proxy.records(client, stage="refused")
    assert refused["apiKey"] == api_key
    assert refused["authorizationInfo"]["reason"].endswith(reason)
    assert proxy.disconnect_cause(client) == "protocol-error"


async def test_an_acl_code_no_enum_names_is_read_and_forwarded_as_kafka_reads_it(proxy: Proxy, autojump_clock: MockClock) -> None:
    proxy.upstream.controller_ranges = {**CONTROLLER_RANGES, ApiKey.CREATE_ACLS: VersionRange(0, 3)}
    client = proxy.connect()
    await client.send(wire.request(ApiKey.CREATE_ACLS, ACL_VERSION, {"creations": [_creation(UNNAMED_CODE)]}, 9))
    assert await client.receive() is not None
    assert len(proxy.upstream.envelopes) == 1
    assert "refused" not in proxy.stages(client)
