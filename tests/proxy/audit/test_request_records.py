"""The records of one request: the intent and the outcome share who and what, and never each other's omissions."""

from typing import Any

import orjson
import trio
from kio.schema.errors import ErrorCode

from authz.actions import Operation, topics
from envelope.apis import ApiKey
from envelope.header import RequestHeaderInfo
from envelope.responses import ResourceError
from proxy.audit.cloudevents import RecordLimits
from proxy.audit.pipeline import AuditLog
from proxy.audit.request_records import Caller, Forwarding, RequestAudit
from proxy.net.addresses import ControllerAddress
from tests.proxy.audit.test_pipeline import FlakySink

CALLER = Caller("User:alice", "PLAIN", "CLIENT", "SASL_PLAINTEXT", "127.0.0.1", 50000, "c-1", "librdkafka", "2.16.0")
HEADER = RequestHeaderInfo(ApiKey.CREATE_TOPICS, 7, 42, "admin", 2, 20)


async def _forwarded_pair(names: list[str], failed: list[str], limits: RecordLimits) -> list[dict[str, Any]]:
    sink = FlakySink(failures=0)
    log = AuditLog([sink], limits=limits)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        audit = RequestAudit(log, 1, CALLER, HEADER, resources=topics(names, Operation.CREATE), forwarding=Forwarding("User:proxy", "c:9093"))
        await audit.intent()
        audit.delivered([ControllerAddress("c", 9093, 3000)], ControllerAddress("c", 9093, 3000), 0.0)
        await audit.outcome(ErrorCode.none, ErrorCode.none, [ResourceError(name, ErrorCode.topic_already_exists, "exists") for name in failed])
        await log.aclose(5)
    return [orjson.loads(entry.line) for entry in sink.kept]


async def test_the_outcome_names_what_the_intent_names_and_where_the_envelope_went() -> None:
    intent, outcome = (line["data"] for line in await _forwarded_pair(["a", "b"], ["b"], RecordLimits()))

    assert (intent["stage"], outcome["stage"]) == ("intent", "outcome")
    assert intent["requestId"] == outcome["requestId"]
    for key in ("methodName", "authenticationInfo", "requestMetadata", "resources", "forwardingPrincipal"):
        assert intent[key] == outcome[key], key
    assert [r["name"] for r in outcome["resources"]] == ["a", "b"]
    assert intent["upstream"] == {"address": "c:9093", "nodeId": None, "attempts": 0, "controllers": []}
    assert outcome["upstream"] == {"address": "c:9093", "nodeId": 3000, "attempts": 1, "controllers": [3000]}
    assert intent["result"] is None and outcome["result"]["errors"][0]["resource"] == "b"


async def test_the_outcomes_omissions_do_not_leak_into_the_intent() -> None:
    names = [f"t{i}" for i in range(6)]
    intent, outcome = (line["data"] for line in await _forwarded_pair(names, names, RecordLimits(max_resources=2)))

    assert intent["truncated"] == {"fields": [], "omitted": {"resources": 4}}
    assert outcome["truncated"] == {"fields": [], "omitted": {"resources": 4, "result.errors": 4}}
    assert len(intent["resources"]) == len(outcome["resources"]) == 2


async def test_what_the_records_share_is_checked_once_and_still_capped() -> None:
    """The shared part is checked against the limits once per request: a long name is capped in both records."""
    long_name = "t" * 300
    intent, outcome = (line["data"] for line in await _forwarded_pair([long_name], [], RecordLimits(max_string_chars=64)))
    for data in (intent, outcome):
        assert data["resources"][0]["name"].startswith("t" * 64) and len(data["resources"][0]["name"]) < 100
        assert "resources.name" in data["truncated"]["fields"]


async def test_an_outcomes_own_long_error_message_is_capped_though_its_intent_was_within() -> None:
    sink = FlakySink(failures=0)
    log = AuditLog([sink], limits=RecordLimits(max_string_chars=64))
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        audit = RequestAudit(log, 1, CALLER, HEADER, resources=topics(["a"], Operation.CREATE), forwarding=Forwarding("User:proxy", "c:9093"))
        await audit.intent()
        await audit.outcome(ErrorCode.none, ErrorCode.none, [ResourceError("a", ErrorCode.policy_violation, "why " * 100)])
        await log.aclose(5)
    intent, outcome = (orjson.loads(entry.line)["data"] for entry in sink.kept)
    assert "truncated" not in intent
    assert len(outcome["result"]["errors"][0]["message"]) < 100
    assert outcome["truncated"]["fields"] == ["result.errors.message"]
