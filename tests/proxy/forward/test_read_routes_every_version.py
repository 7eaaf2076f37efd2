"""Every read route, at every version the proxy advertises for it, over upstream answers kio builds at the version the
proxy asks: no route reads a field its version lacks (issue 48: DescribeDelegationToken read the token requester, a
v3 field, of a v1/v2 answer and closed the client's connection).

kio's entities are slotted dataclasses, so a field a version lacks is an AttributeError on read; its mirror image, an
answer built at the client's version from one without a field that version needs, is a TypeError in build_entity. Both
fail. Everything around the route is generated: the request body (any kio can write at that version), the versions the
read upstream serves (so it may answer at a lower version than the client asked, or not at all), its answer (any value
kio can write at the version it was asked), and each decision of the edge authorizer. Each answer must then read back at
the client's version. A route may refuse a drawn answer no Kafka would give with another exception (the service answers
that UNKNOWN_SERVER_ERROR, tests/integration/test_read_failures.py); none does today.

The error answers a read gets when its route throws (proxy/forward/read_routes.py READ_ERROR_ANSWERS, Kafka's
getErrorResponse) are built at every version too.
"""

import dataclasses
import ipaddress
import typing
from collections.abc import Callable
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from apiversions import VersionRange
from authz import RequestContext
from authz.actions import ResourceAccess
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_body, decode_response_body, encode_request, encode_response, request_schema, response_schema
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import Principal
from proxy.forward.read_routes import READ_APIS, READ_ERROR_ANSWERS, READ_ROUTES
from proxy.forward.reads import METADATA_WITH_CLUSTER_ID, ReadPath, ReadUnavailable
from proxy.forward.service import own_ranges
from proxy.net.settings import ListenerConfig
from proxy.upstream.cluster_identity import ClusterIdentity
from tests.proxy.forward.harness import CLUSTER_ID, config

ADVERTISED = own_ranges()
"""The reads are not forwardable: the proxy advertises its own range for each, whatever the controller serves."""
CASES = [(api_key, version) for api_key in sorted(READ_ROUTES) for version in range(ADVERTISED[api_key].min, ADVERTISED[api_key].max + 1)]
LISTENER = ListenerConfig("CLIENT", "0.0.0.0", 9093, "SASL_PLAINTEXT", "proxy.example.com", 9093)
PRINCIPALS = ["User:alice", "User:bob", "Group:ops"]
UPSTREAM_SETTINGS = config().upstream
EXAMPLES = 12
"""Per API and version (40 cases): the whole file runs in a few seconds."""


def _case_id(case: tuple[int, int]) -> str:
    return f"{ApiKey(case[0]).name.lower()}-v{case[1]}"


class DrawnEdge:
    """The edge authorizer's surface ReadPath uses: each decision drawn."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    async def allowed(self, ctx: RequestContext, accesses: list[ResourceAccess]) -> list[bool]:
        return [self.data.draw(st.booleans(), label=f"allow {a.resource_type.name} {a.name} {a.operation.name}") for a in accesses]


class DrawnUpstream:
    """The ControllerPool surface ReadPath uses; each answer drawn by kio's types at the version the proxy asked, and
    sent through the wire as a real upstream's would be."""

    def __init__(self, data: st.DataObject, served: dict[int, VersionRange]) -> None:
        self.data = data
        self.controller_ranges = served
        self.settings = UPSTREAM_SETTINGS
        self.active = None  # no controller address: answers come from request() alone
        self.active_id = -1
        self.asked: list[tuple[int, int]] = []

    async def request(self, build: Callable[[int], bytes], *, timeout: float | None = None) -> bytes:
        frame = build(99)
        header = peek_request_header(frame)
        decode_body(header.api_key, header.api_version, frame, header.header_size)  # the proxy's request is one Kafka reads
        self.asked.append((header.api_key, header.api_version))
        served = self.controller_ranges[header.api_key]
        assert header.api_version in range(served.min, served.max + 1), "asked at a version the upstream does not serve"
        answer = self.data.draw(st.from_type(response_schema(header.api_key, header.api_version)), label="upstream answer")
        if header.api_key == ApiKey.DESCRIBE_CONFIGS:  # a broker answers each resource asked, once, in order
            asked = decode_body(header.api_key, header.api_version, frame, header.header_size).resources
            result = typing.get_args(typing.get_type_hints(type(answer))["results"])[0]
            drawn = self.data.draw(st.lists(st.from_type(result), min_size=len(asked), max_size=len(asked)), label="results")
            answer = dataclasses.replace(
                answer,
                results=tuple(
                    dataclasses.replace(r, resource_type=a.resource_type, resource_name=a.resource_name)
                    for r, a in zip(drawn, asked, strict=True)
                ),
            )
        return encode_response(answer, correlation_id=header.correlation_id)


class DrawnPath(ReadPath):
    """ReadPath with every broker's own answer (a broker's configs) asked of the drawn upstream: no socket opens."""

    async def broker_call(self, broker: Any, api_key: int, client_version: int, values: dict[str, Any]) -> Any:
        return await self.upstream_call(api_key, client_version, values)


@st.composite
def served_ranges(draw: st.DrawFn, api_key: int, version: int, *, older: bool = False) -> dict[int, VersionRange]:
    """What the read upstream serves: every other API kio's range; this one a drawn range that holds the client's
    `version` (or, `older`, one that ends below it), or not at all."""
    served = dict(ADVERTISED)
    mine = ADVERTISED[api_key]
    if draw(st.integers(min_value=0, max_value=9), label="served") == 0:
        del served[api_key]
        return served
    top = version - 1 if older else mine.max
    # Besides the client's Metadata the proxy asks its own, for the broker view, at v12 (capped at what is served)
    floor = max(version, METADATA_WITH_CLUSTER_ID) if api_key == ApiKey.METADATA else version
    high = draw(st.integers(min_value=mine.min if older else floor, max_value=top), label="upstream max")
    low = draw(st.integers(min_value=mine.min, max_value=high if older else version), label="upstream min")
    served[api_key] = VersionRange(low, high)
    return served


def _request(api_key: int, version: int, body: Any) -> tuple[RequestHeaderInfo, Any]:
    """The header and body the service hands a read route for `body` on the wire."""
    frame = encode_request(body, correlation_id=7, client_id="property")
    header = peek_request_header(frame)
    return header, decode_body(api_key, version, frame, header.header_size, allow_trailing=True)


def _context(principal: str, protocol: str) -> RequestContext:
    return RequestContext(
        principal=Principal.parse(principal),
        client_address=ipaddress.ip_address("192.0.2.7"),
        listener="CLIENT",
        security_protocol=protocol,
        sasl_mechanism="PLAIN" if protocol.startswith("SASL") else None,
    )


def test_every_read_has_an_error_answer() -> None:
    assert set(READ_ERROR_ANSWERS) == set(READ_APIS)


def _run_route(api_key: int, version: int, data: st.DataObject, *, older: bool) -> tuple[bytes | None, list[tuple[int, int]]]:
    """The frame a read route answers to a drawn request, over drawn upstream answers and edge decisions."""
    request_body = data.draw(st.from_type(request_schema(api_key, version)), label="request")
    if api_key == ApiKey.METADATA and data.draw(st.booleans(), label="no topics or all"):
        request_body = dataclasses.replace(request_body, topics=data.draw(st.sampled_from([(), None] if version > 0 else [()])))
    header, body = _request(api_key, version, request_body)
    upstream = DrawnUpstream(data, data.draw(served_ranges(api_key, version, older=older)))
    path = DrawnPath(upstream, DrawnEdge(data), node_id=100, identity=ClusterIdentity(CLUSTER_ID))  # type: ignore[arg-type]  # the fakes' surfaces
    ctx = _context(data.draw(st.sampled_from(PRINCIPALS)), data.draw(st.sampled_from(["SASL_PLAINTEXT", "SASL_SSL", "PLAINTEXT"])))

    async def main() -> bytes:
        return (await READ_ROUTES[api_key](path, ctx, LISTENER, header, body)).frame

    try:
        return trio.run(main), upstream.asked
    except AttributeError as exc:  # the bug this file is about: say which field, at which versions
        pytest.fail(f"{ApiKey(api_key).name} v{version} (upstream asked at {upstream.asked}) read a field it lacks: {exc!r}")
    except TypeError as exc:  # its mirror image: an answer built at a version without a field that version needs
        pytest.fail(f"{ApiKey(api_key).name} v{version} (upstream asked at {upstream.asked}) built an entity without a field: {exc!r}")
    except ReadUnavailable:  # only a cluster id nobody knows; this one is known
        pytest.fail("ReadUnavailable with a known cluster id")
    except Exception as exc:  # an answer no Kafka gives (drawn freely) may be refused: the service answers UNKNOWN_SERVER_ERROR
        note(f"refused a drawn upstream answer: {exc!r}")
        return None, upstream.asked


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_read_route_reads_only_what_its_versions_have(case: tuple[int, int], data: st.DataObject) -> None:
    """The upstream serves the client's version (as Kafka 4.3.1 and the embedded controller serve every version the
    proxy advertises): the route answers, and its answer reads back at the client's version."""
    api_key, version = case
    frame, _ = _run_route(api_key, version, data, older=False)
    assert frame is None or decode_response_body(api_key, version, frame)[0] == 7


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_error_answer_of_a_read_that_throws(case: tuple[int, int], data: st.DataObject) -> None:
    """Kafka's getErrorResponse at the client's version: UNKNOWN_SERVER_ERROR wherever the answer carries a code."""
    api_key, version = case
    _, body = _request(api_key, version, data.draw(st.from_type(request_schema(api_key, version)), label="request"))
    code = ErrorCode.unknown_server_error
    values = {"throttle_time": 0, **READ_ERROR_ANSWERS[api_key](body, {"error_code": code, "error_message": None})}
    frame = encode_response(build_entity(response_schema(api_key, version), values), correlation_id=7)
    _, answer = decode_response_body(api_key, version, frame)
    if hasattr(answer, "error_code"):
        assert answer.error_code == code
    listed: dict[int, tuple[str, Callable[[], int]]] = {
        ApiKey.METADATA: ("topics", lambda: len(body.topics or ())),
        ApiKey.DESCRIBE_CONFIGS: ("results", lambda: len(body.resources)),
        ApiKey.DESCRIBE_ACLS: ("resources", lambda: 0),
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ("results", lambda: len(body.users or ())),
        ApiKey.DESCRIBE_DELEGATION_TOKEN: ("tokens", lambda: 0),
    }
    if api_key in listed:
        field, count = listed[api_key]
        items = getattr(answer, field)
        assert len(items) == count()
        assert all(item.error_code == code for item in items if hasattr(item, "error_code"))
    if api_key == ApiKey.DESCRIBE_CLIENT_QUOTAS:
        assert answer.entries is None
    if api_key == ApiKey.METADATA:
        assert answer.brokers == ()


OLDER_UPSTREAM = [pytest.param((api_key, version), id=_case_id((api_key, version))) for api_key, version in CASES if version > ADVERTISED[api_key].min]


@pytest.mark.parametrize("case", OLDER_UPSTREAM)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_read_route_over_an_older_upstream(case: tuple[int, int], data: st.DataObject) -> None:
    """The upstream serves only versions below the client's (an older broker as the read upstream): the route reads
    only what the upstream's version has, and fills what the client's version has beside it."""
    api_key, version = case
    frame, asked = _run_route(api_key, version, data, older=True)
    assert frame is None or decode_response_body(api_key, version, frame)[0] == 7
    assert all(asked_version < version for asked_key, asked_version in asked if asked_key == api_key)
