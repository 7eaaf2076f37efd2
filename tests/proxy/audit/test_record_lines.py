"""Spliced intent and outcome lines (proxy/audit/record_lines.py) against the dict-and-encoder way they stand in for.

The oracle is the way every record was written before: RequestAudit builds the record's dict (`intent_record`,
`outcome_record`), cloudevents.py bounds and encodes it (`AuditEntry.of`). Whatever the request path wrote, spliced
or not, must be that line byte for byte, for every forwarded API and version, on hypothesis' callers, client ids,
resources, request bodies (the fuzzer's generator, decoded as the proxy decodes them) and answers, within the limits
and over them (where the dict way cuts, and no line is spliced).
"""

import random
import re
from typing import Any

import orjson
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from authz.actions import Operation, PatternType, ResourceAccess, ResourceType
from authz.admin_apis import SERVED_ADMIN_APIS
from envelope.bounded_plan import plan_of
from envelope.codec import request_header_version, request_schema
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo
from envelope.responses import ResourceError
from envelope.served import pinned_ranges
from fuzz.generate import body as generated_body
from proxy.audit import cloudevents
from proxy.audit.cloudevents import RecordLimits
from proxy.audit.pipeline import AuditEntry, AuditLog
from proxy.audit.request_records import Caller, Forwarding, RequestAudit
from proxy.forward.forwarding import decode_with_resources
from proxy.net.addresses import ControllerAddress, ProxiedBy
from tests.proxy.audit.test_pipeline import FlakySink

SERVED = pinned_ranges(SERVED_ADMIN_APIS)
VERSIONS = [(api_key, version) for api_key, served in sorted(SERVED.items()) for version in range(served.min, served.max + 1)]
RECORD_ID = "00000000-0000-4000-8000-000000000001"
RECORD_TIME = "2026-11-28T17:00:00.123Z"
CONTROLLER = ControllerAddress("c", 9093, 3000)
WIDE = RecordLimits()
NARROW = RecordLimits(max_string_chars=12, max_resources=2, max_record_bytes=1400)

# Client-chosen strings with what JSON must escape: quotes, backslashes, control characters, non-ASCII, surrogates aside.
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
maybe_texts = st.none() | texts
proxied = st.none() | st.builds(
    ProxiedBy, texts, st.integers(0, 65535), st.sampled_from([1, 2]), st.sampled_from(["PROXY", "LOCAL"]), maybe_texts, maybe_texts, maybe_texts, st.booleans()
)
callers = st.builds(
    Caller, texts, maybe_texts, texts, texts, texts, st.integers(0, 65535), texts, maybe_texts, maybe_texts, maybe_texts, proxied
)
resources = st.lists(
    st.builds(ResourceAccess, st.sampled_from(list(ResourceType)), texts, st.sampled_from(list(PatternType)), st.sampled_from(list(Operation))),
    max_size=4,
)
results = st.lists(st.builds(ResourceError, texts, st.sampled_from([0, 0, 3, 36, 41, 9999]), maybe_texts), max_size=4)
codes = st.sampled_from([ErrorCode.none, ErrorCode.not_controller, ErrorCode.cluster_authorization_failed, 7777])


@pytest.fixture(autouse=True)
def _fixed_ids_and_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways draw the record's id and time from cloudevents: fixed, so that lines can be compared."""
    monkeypatch.setattr(cloudevents, "new_id", lambda: RECORD_ID)
    monkeypatch.setattr(cloudevents, "utc_now", lambda: RECORD_TIME)


_CHAIN_SUFFIX = re.compile(rb',"chainseq":[0-9]+,"chainprev":"[0-9a-f]{64}"}\n\Z')


def _unsealed(line: bytes) -> bytes:
    """The line as the request path built it, before the writer sealed it into its hash chain (proxy/audit/chain.py)."""
    return _CHAIN_SUFFIX.sub(b"}\n", line)


def _oracle(audit: RequestAudit, data: dict[str, Any], subject: str | None, within: bool) -> bytes:
    return AuditEntry.of(cloudevents.make_record(audit.node_id, subject, data), audit.log.limits, within=within).line


async def _pair(
    limits: RecordLimits,
    caller: Caller,
    header: RequestHeaderInfo,
    named: list[ResourceAccess],
    body: Any,
    answer: tuple[int, int, list[ResourceError]],
    deliveries: tuple[tuple[list[ControllerAddress], ControllerAddress], ...] = (([CONTROLLER], CONTROLLER),),
) -> tuple[list[AuditEntry], bytes, bytes]:
    """What the request path wrote for one forwarded request, and the dict way's two lines for the same request."""
    sink = FlakySink(failures=0)
    log = AuditLog([sink], limits=limits)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        audit = RequestAudit(log, 7, caller, header, resources=named, forwarding=Forwarding("User:proxy", "c:9093"))
        audit.started = 0.0
        await audit.intent(body)
        intent = _oracle(audit, *audit.intent_record(*audit.parameters(body)))
        for attempts, server in deliveries:
            audit.delivered(attempts, server, 0.0015)
        await audit.outcome(*answer)
        envelope_error, top, found = answer
        outcome = _oracle(audit, *audit.outcome_record(envelope_error, top, [r for r in found if r.error_code != ErrorCode.none]))
        await log.aclose(5)
    return sink.kept, intent, outcome


def _frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("proxy.audit.request_records.time.perf_counter", lambda: 0.25)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(caller=callers, client_id=maybe_texts, correlation=st.integers(-(2**31), 2**31 - 1), named=resources, answer=st.tuples(codes, codes, results), narrow=st.booleans())
def test_spliced_lines_are_the_dict_ways_lines(
    monkeypatch: pytest.MonkeyPatch, caller: Caller, client_id: str | None, correlation: int, named: list[ResourceAccess], answer: Any, narrow: bool
) -> None:
    _frozen_clock(monkeypatch)
    header = RequestHeaderInfo(19, 7, correlation, client_id, 2, 20)
    written, intent, outcome = trio.run(_pair, NARROW if narrow else WIDE, caller, header, named, None, answer)
    assert [_unsealed(entry.line) for entry in written] == [intent, outcome]


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), caller=callers, answer=st.tuples(codes, codes, results), narrow=st.booleans())
def test_every_forwarded_api_and_version_is_spliced_as_the_dict_way_writes_it(
    monkeypatch: pytest.MonkeyPatch, api_key: int, version: int, seed: int, caller: Caller, answer: Any, narrow: bool
) -> None:
    _frozen_clock(monkeypatch)
    frame = bytes(generated_body(plan_of(request_schema(api_key, version)), random.Random(seed)).out)
    try:
        body, named = decode_with_resources(api_key, version, frame, 0)
    except ProtocolError:
        return  # refused before any record: never forwarded
    header = RequestHeaderInfo(api_key, version, seed % 1000, "client", request_header_version(api_key, version), 20)
    written, intent, outcome = trio.run(_pair, NARROW if narrow else WIDE, caller, header, named, body, answer)
    assert [_unsealed(entry.line) for entry in written] == [intent, outcome]


def test_a_plain_request_is_spliced_and_one_over_the_limits_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    _frozen_clock(monkeypatch)
    built: list[dict[str, Any]] = []
    encode_record = AuditEntry.of.__func__  # type: ignore[attr-defined]

    def counted(cls: type[AuditEntry], record: dict[str, Any], limits: RecordLimits = WIDE, *, within: bool | None = None) -> AuditEntry:
        built.append(record)
        entry: AuditEntry = encode_record(cls, record, limits, within=within)
        return entry

    monkeypatch.setattr(AuditEntry, "of", classmethod(counted))
    caller = Caller("User:alice", "PLAIN", "CLIENT", "SASL_PLAINTEXT", "127.0.0.1", 50000, "c-1", "librdkafka", "2.16.0")
    header = RequestHeaderInfo(19, 7, 42, "admin", 2, 20)
    named = [ResourceAccess(ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.CREATE)]
    answer = (ErrorCode.none, ErrorCode.none, [ResourceError("orders", ErrorCode.topic_already_exists, "exists")])
    written, intent, outcome = trio.run(_pair, WIDE, caller, header, named, None, answer)
    assert [_unsealed(entry.line) for entry in written] == [intent, outcome]
    assert len(built) == 2, "only the oracle's two records were built as dicts: both written lines were spliced"
    assert orjson.loads(written[1].line)["data"]["result"]["errors"][0]["errorName"] == "TOPIC_ALREADY_EXISTS"

    built.clear()
    long_name = [ResourceAccess(ResourceType.TOPIC, "o" * 20, PatternType.LITERAL, Operation.CREATE)]
    written, intent, outcome = trio.run(_pair, NARROW, caller, header, long_name, None, answer)
    assert [_unsealed(entry.line) for entry in written] == [intent, outcome]
    assert len(built) == 4, "over the limits, the written records were built and cut the dict way"
    assert orjson.loads(written[0].line)["data"]["truncated"]["fields"] == ["subject", "resources.name"]


UNNAMED = ControllerAddress("c", 9093)
OTHER = ControllerAddress("d", 9093, 3001)


@pytest.mark.parametrize(
    "deliveries",
    [
        (([CONTROLLER], CONTROLLER),),
        (([UNNAMED], UNNAMED),),
        (([OTHER], OTHER),),
        (([UNNAMED, CONTROLLER], CONTROLLER),),
        (([OTHER], OTHER), ([CONTROLLER], CONTROLLER)),
        (),
    ],
)
def test_the_parts_encoded_once_follow_the_controllers_and_codes(
    monkeypatch: pytest.MonkeyPatch, deliveries: tuple[tuple[list[ControllerAddress], ControllerAddress], ...]
) -> None:
    """The result without rows and the upstream are encoded once per codes and controller and kept: every way an
    envelope went (a node without an id, another node, several attempts, none) and every pair of codes, each twice
    so the second comes from what the first kept, is still the dict way's line."""
    _frozen_clock(monkeypatch)
    caller = Caller("User:alice", "PLAIN", "CLIENT", "SASL_PLAINTEXT", "127.0.0.1", 50000, "c-1", "librdkafka", "2.16.0")
    header = RequestHeaderInfo(19, 7, 42, "admin", 2, 20)
    named = [ResourceAccess(ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.CREATE)]
    for envelope_error in (ErrorCode.none, ErrorCode.not_controller):
        for top in (ErrorCode.none, ErrorCode.cluster_authorization_failed, 7777):
            for _ in range(2):
                written, intent, outcome = trio.run(_pair, WIDE, caller, header, named, None, (envelope_error, top, []), deliveries)
                assert [_unsealed(entry.line) for entry in written] == [intent, outcome]
