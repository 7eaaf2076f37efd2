"""What one forwarded CreateTopics costs the proxy, step by step, in one process: prints JSON.

Each step of the request path runs alone, many times, through the proxy's own code (the same
functions `ProxyService` calls), and its median time per call is reported. The sum is the
proxy's Python work beyond what a bare envelope relay also does; what the steps leave out of the
CPU per request that `run.py` measures is the socket calls and trio's scheduling, which the
relay pays too. Figures move with the machine's load: compare steps within one run.

    .venv/bin/python bench/forwarding/breakdown.py [--repeat 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import encode_request, encode_response, request_schema, response_schema
from envelope.frames import FrameReader, encode_frame
from envelope.header import peek_request_header
from envelope.principal import Principal
from envelope.wrap import unwrap, wrap, wrap_response
from proxy.audit.chain import AuditChain
from proxy.audit.cloudevents import make_record
from proxy.audit.pipeline import AuditLog
from proxy.audit.request_records import Caller, Forwarded, Forwarding, RequestAudit
from proxy.audit.sinks.file import FileSink
from proxy.forward.forwarding import answer_errors, decode_with_resources, decoded_response_errors
from proxy.forward.read_routes import READ_ROUTES
from proxy.forward.routing import route
from proxy.forward.service import own_ranges
from proxy.net.addresses import ControllerAddress
from proxy.net.connection import DeadlineWatch
from proxy.ops.metrics import ProxyMetrics

VERSION = 7
CALLER = Caller("User:alice", "PLAIN", "CLIENT", "SASL_PLAINTEXT", "127.0.0.1", 50000, "1", "franz-go", "1.0")
FORWARDING = Forwarding("User:proxy", "127.0.0.1:9093")
KAFKA_TOPIC_CONFIGS = 40
"""Config entries a Kafka 4.3 controller returns per new topic in CreateTopics v5+ (KIP-525), about every topic config."""
CONTROLLER = ControllerAddress("127.0.0.1", 9093, 3000)


def _create_topics_frame(correlation_id: int) -> bytes:
    topic = {"name": f"bench-{correlation_id}", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    body = build_entity(request_schema(ApiKey.CREATE_TOPICS, VERSION), {"topics": [topic], "timeout_ms": 5000, "validate_only": True})
    return encode_request(body, correlation_id=correlation_id, client_id="loadgen")


def _envelope_answer(correlation_id: int, configs: int = 0) -> tuple[bytes, bytes]:
    """The zero-work upstream's answer (no configs), or with `configs` entries a Kafka controller's."""
    entries = [{"name": f"config.name.{n}", "value": f"value-{n}", "read_only": False, "config_source": 5, "is_sensitive": False} for n in range(configs)]
    topic_id = uuid.uuid4() if configs else None
    topic: dict[str, Any] = {"name": "bench-1", "topic_id": topic_id, "error_code": ErrorCode.none, "error_message": None, "num_partitions": 1, "replication_factor": 1, "configs": entries}
    schema = response_schema(ApiKey.CREATE_TOPICS, VERSION)
    embedded = encode_response(build_entity(schema, {"throttle_time": 0, "topics": [topic]}), correlation_id=correlation_id)
    return embedded, wrap_response(correlation_id, ErrorCode.none, embedded)


def _timed(work: Callable[[], Any], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        work()
    return (time.perf_counter() - started) / repeat * 1e6


async def _timed_async(work: Callable[[], Awaitable[Any]], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        await work()
    return (time.perf_counter() - started) / repeat * 1e6


async def _one_round(repeat: int, audit_dir: Path) -> tuple[dict[str, float], dict[str, float], float]:
    frame = _create_topics_frame(7)
    header = peek_request_header(frame)
    advertised = own_ranges()
    body, resources = decode_with_resources(header.api_key, header.api_version, frame, header.header_size)
    principal = Principal("User", "alice")
    embedded, envelope_answer = _envelope_answer(1)
    kafka_embedded, _ = _envelope_answer(1, KAFKA_TOPIC_CONFIGS)
    metrics = ProxyMetrics()
    sink = FileSink(audit_dir, 100, metrics=metrics)
    log = AuditLog([sink], metrics=metrics)
    steps: dict[str, float] = {}
    oracles: dict[str, float] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        await RequestAudit(log, 100, CALLER, header, resources=resources, forwarding=FORWARDING).intent()  # opens the file

        def read_frame() -> None:
            reader = FrameReader()
            reader.feed(encode_frame(frame))
            reader.next_frame()

        steps["frame: length prefix and reassembly"] = _timed(read_frame, repeat)
        steps["header peek"] = _timed(lambda: peek_request_header(frame), repeat)
        steps["route"] = _timed(lambda: route(header, advertised, READ_ROUTES), repeat)
        steps["decode the request and name its resources (bounded pre-pass + kio)"] = _timed(
            lambda: decode_with_resources(header.api_key, header.api_version, frame, header.header_size), repeat
        )
        audits = [RequestAudit(log, 100, CALLER, header, resources=resources, forwarding=FORWARDING) for _ in range(repeat)]
        steps["request audit object"] = _timed(lambda: RequestAudit(log, 100, CALLER, header, resources=resources, forwarding=FORWARDING), repeat)
        pending = iter(audits)
        # with the request's parameters, as audit.level=request (the default) keeps them
        steps["intent record: build, bound, encode, write, count"] = await _timed_async(lambda: next(pending).intent(body), repeat)
        oracle_audits = iter([RequestAudit(log, 100, CALLER, header, resources=resources, forwarding=FORWARDING) for _ in range(repeat)])

        async def intent_by_dict() -> None:
            audit = next(oracle_audits)
            data, subject, within = audit.intent_record(*audit.parameters(body))
            await log.write(make_record(audit.node_id, subject, data), required=True, within=within)

        oracles["intent record the dict way: build, bound, encode, write"] = await _timed_async(intent_by_dict, repeat)
        steps["envelope wrap"] = _timed(lambda: wrap(frame, principal, IPv4Address("127.0.0.1"), correlation_id=1, client_id="envelope-proxy"), repeat)
        steps["envelope unwrap"] = _timed(lambda: unwrap(envelope_answer), repeat)
        steps["the answer's errors for the outcome (zero-work answer: no configs)"] = _timed(
            lambda: answer_errors(header.api_key, header.api_version, embedded), repeat
        )
        steps[f"the answer's errors for the outcome (Kafka's answer: {KAFKA_TOPIC_CONFIGS} configs)"] = _timed(
            lambda: answer_errors(header.api_key, header.api_version, kafka_embedded), repeat
        )
        # The slow ways kept as the tests' oracles, timed beside the steps that replaced them.
        oracles["the answer's errors by the full decode (zero-work answer)"] = _timed(
            lambda: decoded_response_errors(header.api_key, header.api_version, embedded), repeat
        )
        oracles[f"the answer's errors by the full decode (Kafka's answer: {KAFKA_TOPIC_CONFIGS} configs)"] = _timed(
            lambda: decoded_response_errors(header.api_key, header.api_version, kafka_embedded), repeat
        )
        for audit in audits:
            audit.delivered([CONTROLLER], CONTROLLER, 0.0)
        outcome = Forwarded(ErrorCode.none, ErrorCode.none, [])
        pending = iter(audits)
        steps["outcome record: build, bound, encode, write, count"] = await _timed_async(lambda: next(pending).record(outcome), repeat)
        # Part of each record step above: the writer seals a line into its hash chain (SHA-256 of the line before,
        # two attributes appended). Timed alone on a real intent line, twice per forwarded request.
        written = next(audit_dir.rglob("*.jsonl")).read_bytes().splitlines(keepends=True)[0]
        chain = AuditChain()
        steps["audit chain: seal one record's line (in each record step above)"] = _timed(lambda: chain.seal(written, 0.0), repeat)
        pending = iter(audits)

        async def outcome_by_dict() -> None:
            audit = next(pending)
            data, subject, within = audit.outcome_record(outcome.envelope_error, outcome.top, outcome.results)
            await log.write(make_record(audit.node_id, subject, data), within=within)

        oracles["outcome record the dict way: build, bound, encode, write"] = await _timed_async(outcome_by_dict, repeat)
        steps["request metrics (a counter, three histograms, plain numbers)"] = _timed(
            lambda: metrics.count_request(
                CALLER.listener, audits[0].api, outcome.metric, forwarded=outcome.forwarded, elapsed=audits[0].elapsed_ms() / 1000, queued=audits[0].queued
            ),
            repeat,
        )

        def two_scopes() -> None:
            # The upstream's waits as they were kept before the pool's watch: a cancel scope each.
            for _ in range(2):
                with trio.CancelScope(deadline=trio.current_time() + 30):
                    pass

        oracles["two cancel scopes with deadlines (the pool's queue, the link's round trip, before the watch)"] = _timed(two_scopes, repeat)
        watch = DeadlineWatch()
        await nursery.start(watch.run)
        waits = [object(), object()]

        def two_notes() -> None:
            # The upstream's waits now: the pool's queue for a connection and the link's round trip note their
            # deadlines in the pool's watch (proxy/upstream/link.py DeadlineWatch).
            for wait in waits:
                watch.watch(wait, trio.current_time() + 30)  # type: ignore[arg-type]  # any key: the watch only keeps it
                watch.done(wait)  # type: ignore[arg-type]

        steps["two deadlines noted in the pool's watch (the queue, the round trip)"] = _timed(two_notes, repeat)

        with trio.CancelScope() as connection_deadlines:

            def two_moves() -> None:
                # The client's side (KafkaConnection.serving): the wait for the next frame and the answer's send
                # share the connection's one scope; a request moves its deadline twice.
                connection_deadlines.deadline = math.inf
                connection_deadlines.deadline = trio.current_time() + 600

            oracles["two moves of the connection's deadline (the client's frame, the answer), before the listener's watch"] = _timed(two_moves, repeat)
        connection_wait = object()

        def connection_notes() -> None:
            # The client's side now (KafkaConnection.serving with the listener's DeadlineWatch): the wait for the
            # next frame and the answer's send note their deadlines, the request's handling takes its note out.
            watch.watch(connection_wait, trio.current_time() + 600)  # type: ignore[arg-type]  # any key: the watch only keeps it
            watch.done(connection_wait)  # type: ignore[arg-type]
            watch.watch(connection_wait, trio.current_time() + 600)  # type: ignore[arg-type]

        steps["the connection's deadline noted in the listener's watch (the client's frame, the answer)"] = _timed(connection_notes, repeat)
        watch.done(connection_wait)  # type: ignore[arg-type]
        client_ip = IPv4Address("127.0.0.1")

        async def whole_request() -> None:
            # Every step above once, in the order a forwarded request takes them, on a frame as it arrives.
            reader = FrameReader()
            reader.feed(encode_frame(frame))
            arrived = reader.next_frame()
            assert arrived is not None
            peeked = peek_request_header(arrived)
            route(peeked, advertised, READ_ROUTES)
            _, named = decode_with_resources(peeked.api_key, peeked.api_version, arrived, peeked.header_size)
            audit = RequestAudit(log, 100, CALLER, peeked, resources=named, forwarding=FORWARDING)
            await audit.intent(body)
            two_notes()
            wrap(arrived, principal, client_ip, correlation_id=1, client_id="envelope-proxy")
            unwrap(envelope_answer)
            top, errors = answer_errors(peeked.api_key, peeked.api_version, embedded)
            audit.delivered([CONTROLLER], CONTROLLER, 0.0)
            answered = Forwarded(ErrorCode.none, top, errors)
            await audit.record(answered)
            metrics.count_request(
                CALLER.listener, audit.api, answered.metric, forwarded=answered.forwarded, elapsed=audit.elapsed_ms() / 1000, queued=audit.queued
            )
            connection_notes()

        whole = await _timed_async(whole_request, repeat)
        watch.done(connection_wait)  # type: ignore[arg-type]
        await log.aclose(5)
        nursery.cancel_scope.cancel()
    return steps, oracles, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000, help="calls per step and round (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; each step's median is reported (default %(default)s)")
    args = parser.parse_args()
    rounds: list[dict[str, float]] = []
    oracle_rounds: list[dict[str, float]] = []
    wholes: list[float] = []
    with tempfile.TemporaryDirectory(prefix="breakdown-") as folder:
        for index in range(args.rounds):
            steps_of_round, oracles_of_round, whole = trio.run(_one_round, args.repeat, Path(folder) / str(index))
            rounds.append(steps_of_round)
            oracle_rounds.append(oracles_of_round)
            wholes.append(whole)
    steps = {name: round(statistics.median(r[name] for r in rounds), 2) for name in rounds[0]}
    report = {
        "benchmark": "forwarding-breakdown",
        "unit": "us per request",
        "steps": steps,
        "sum": round(sum(steps.values()), 1),
        # the same steps back to back, one request after another: what they cost together, caches shared
        "whole_request": round(statistics.median(wholes), 1),
        # the slow ways the fast steps replaced, kept as the tests' oracles: what each step cost before
        "oracles": {name: round(statistics.median(r[name] for r in oracle_rounds), 2) for name in oracle_rounds[0]},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
