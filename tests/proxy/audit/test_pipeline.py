"""The audit pipeline: group commit, durability modes, rotation, crash recovery, failure policies, filters, the spool."""

import json
import logging
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio

from proxy.audit.cloudevents import CONNECTION_EVENT_TYPE, make_record
from proxy.audit.connection_events import ConnectionEvent, Endpoint
from proxy.audit.pipeline import (
    AuditEntry,
    AuditLog,
    AuditSinkError,
    AuditUnavailable,
)
from proxy.audit.settings import audit_running
from proxy.audit.sinks import file as audit_file
from proxy.audit.sinks.file import FileSink
from proxy.audit.sinks.kafka import KafkaSink, KafkaSinkSettings
from proxy.audit.sinks.spool import Spool
from proxy.net.sasl.credential_source import ScramCredentialSource
from proxy.net.sasl.credentials import add_user
from proxy.net.sasl.machine import attempted_user
from proxy.net.sasl.mechanisms import ServerMechanism
from proxy.net.sasl.plain import PlainServer
from proxy.net.sasl.scram_mechanism import ScramServerSide
from proxy.ops.metrics import ProxyMetrics
from tests.audit_records import assert_valid, complete_lines, records_under


def request_record(principal: str = "User:alice", stage: str = "local", n: int = 0, node_id: int = 100) -> dict[str, Any]:
    data = {
        "requestId": f"00000000-0000-4000-8000-{n:012d}",
        "stage": stage,
        "methodName": "kafka.ApiVersions",
        "apiKey": 18,
        "apiVersion": 3,
        "authenticationInfo": {"principal": principal, "mechanism": "PLAIN", "listener": "CLIENT", "securityProtocol": "SASL_PLAINTEXT"},
        "forwardingPrincipal": None,
        "requestMetadata": {
            "clientAddress": "127.0.0.1",
            "clientPort": 40000,
            "clientId": "t",
            "clientSoftwareName": None,
            "clientSoftwareVersion": None,
            "correlationId": n,
            "connectionId": "CLIENT-1",
            "proxiedBy": None,
        },
        "resources": [],
        "authorizationInfo": None,
        "result": {"status": "SUCCESS", "envelopeErrorCode": None, "errorCode": 0, "errors": []},
        "timings": {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.1},
        "upstream": None,
        "connection": None,
    }
    if stage == "intent":
        data.update(result=None, timings=None, forwardingPrincipal="User:proxy", upstream={"address": "c:9093", "nodeId": None, "attempts": 0, "controllers": []})
    if stage == "outcome":  # as forwarded records are: the outcome names the controller that answered
        data.update(forwardingPrincipal="User:proxy", upstream={"address": "c:9093", "nodeId": 1, "attempts": 1, "controllers": [1]})
    return make_record(node_id, None, data)


def connection_event(stage: str) -> dict[str, Any]:
    return ConnectionEvent(stage, Endpoint("CLIENT", "SASL_PLAINTEXT", "127.0.0.1", 1, "CLIENT-1")).record(100)


def sample(metrics: ProxyMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


class FlakySink:
    """Fails its first `failures` commits, then keeps what it is given."""

    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts = 0
        self.kept: list[AuditEntry] = []

    async def start(self, nursery: trio.Nursery) -> None:
        return None

    def commit_now(self, batch: Sequence[AuditEntry]) -> bool:
        return False  # every batch goes through the writer, as a Kafka sink's does

    async def commit(self, batch: Sequence[AuditEntry]) -> None:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise AuditSinkError("disk on fire")
        self.kept.extend(batch)

    def deadline(self) -> float:
        return float("inf")

    async def tick(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def close_now(self) -> None:
        return None


# -- group commit and durability ---------------------------------------------------------


async def test_fsync_is_shared_by_the_records_that_queued_up_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    first_sync_started, release_first_sync = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            real_fsync(fd)  # a new file's directory entry: not the group commit under test
            return
        if not synced:
            first_sync_started.set()
            release_first_sync.wait(30)  # hold the first commit so the others queue behind it
        real_fsync(fd)
        synced.append(len(Path(os.readlink(f"/proc/self/fd/{fd}")).read_bytes().splitlines()))

    monkeypatch.setattr(audit_file.os, "fsync", fsync)
    sink = FileSink(tmp_path, 100, durability="fsync")
    audit = AuditLog([sink])
    returned: list[int] = []

    async def writer(n: int) -> None:
        await audit.write(request_record(n=n), required=True)
        # Returning means: on disk, fsynced, with this record in it.
        assert synced and synced[-1] > n - 1
        returned.append(n)

    async with audit_running(audit, 10):
        async with trio.open_nursery() as writers:
            writers.start_soon(writer, 0)
            await trio.to_thread.run_sync(first_sync_started.wait, 30)
            for n in range(1, 50):
                writers.start_soon(writer, n)
            while audit._send.statistics().current_buffer_used < 49:
                await trio.sleep(0.01)
            release_first_sync.set()
        commits = list(synced)
    assert sorted(returned) == list(range(50))
    assert commits == [1, 50]  # two fsyncs for fifty records: the 49 that waited went together
    lines = [json.loads(line) for path in tmp_path.glob("*.jsonl") for line in complete_lines(path)]
    assert sorted(record["data"]["requestMetadata"]["correlationId"] for record in lines) == list(range(50))


@pytest.mark.parametrize("durability", ["none", "flush", "fsync"])
async def test_records_are_readable_in_staging_once_written_except_with_none(tmp_path: Path, durability: str) -> None:
    audit = AuditLog([FileSink(tmp_path, 100, durability=durability)])
    async with audit_running(audit, 10):
        await audit.write(request_record())
        staged = b"".join(path.read_bytes() for path in (tmp_path / ".staging").glob("*.jsonl"))
        assert (staged != b"") == (durability != "none")  # none: still in the process's buffer
    assert len(records_under(tmp_path)) == 1  # shutdown flushes and publishes in every mode
    assert list((tmp_path / ".staging").glob("*.jsonl")) == []


async def test_files_rotate_by_size_and_each_published_file_is_complete(tmp_path: Path) -> None:
    metrics = ProxyMetrics()
    audit = AuditLog([FileSink(tmp_path, 100, max_file_bytes=2000, metrics=metrics)], metrics=metrics)
    async with audit_running(audit, 10):
        for n in range(20):
            await audit.write(request_record(n=n))
        published = sorted(tmp_path.glob("*.jsonl"))
        assert len(published) >= 5
        for path in published:
            assert path.stat().st_size >= 2000 and path.read_bytes().endswith(b"\n")
    assert [r["data"]["requestMetadata"]["correlationId"] for r in records_under(tmp_path)] == list(range(20))
    assert sample(metrics, "envelope_proxy_audit_records_total", sink="file", stage="local") == 20


async def test_an_idle_file_is_published_after_audit_file_rotate_ms(tmp_path: Path) -> None:
    audit = AuditLog([FileSink(tmp_path, 100, rotate_seconds=0.2)])
    async with audit_running(audit, 10):
        await audit.write(request_record())
        assert list(tmp_path.glob("*.jsonl")) == []
        with trio.fail_after(30):  # nothing else is written: only the age of the file publishes it
            while not list(tmp_path.glob("*.jsonl")):
                await trio.sleep(0.05)
        assert list((tmp_path / ".staging").glob("*.jsonl")) == []


def test_staged_leftovers_are_published_at_start_without_a_torn_last_line(tmp_path: Path) -> None:
    staging = tmp_path / ".staging"
    staging.mkdir()
    whole = json.dumps(request_record()) + "\n"
    (staging / "audit-100-a-000001.jsonl").write_text(whole + whole[:30])
    (staging / "audit-100-b-000002.jsonl").write_text(whole[:10])
    FileSink(tmp_path, 100, durability="fsync")
    assert list(staging.iterdir()) == []
    assert (tmp_path / "audit-100-a-000001.jsonl").read_text() == whole
    assert not (tmp_path / "audit-100-b-000002.jsonl").exists()  # nothing complete in it


# -- failure policies -------------------------------------------------------------------


async def test_block_retries_until_the_sink_takes_the_records(caplog: pytest.LogCaptureFixture) -> None:
    metrics = ProxyMetrics()
    sink = FlakySink(failures=3)
    audit = AuditLog([sink], on_failure="block", metrics=metrics)
    async with audit_running(audit, 10):
        with trio.fail_after(30):
            await audit.write(request_record(stage="intent"), required=True)
    assert sink.attempts == 4 and len(sink.kept) == 1
    assert sample(metrics, "envelope_proxy_audit_write_errors_total", sink="flaky") == 3
    assert sample(metrics, "envelope_proxy_audit_records_lost_total") == 0
    assert "retrying; requests wait" in caplog.text and "writes again" in caplog.text


async def test_reject_fails_a_required_record_and_counts_others_as_lost() -> None:
    metrics = ProxyMetrics()
    sink = FlakySink(failures=2)
    audit = AuditLog([sink], on_failure="reject", metrics=metrics)
    async with audit_running(audit, 10):
        with pytest.raises(AuditUnavailable, match="disk on fire"):
            await audit.write(request_record(stage="intent"), required=True)
        await audit.write(request_record(stage="outcome"))  # returns: the request was already answered
        await audit.write(request_record(stage="outcome"))
    assert [entry.stage for entry in sink.kept] == ["outcome"]
    assert sample(metrics, "envelope_proxy_audit_records_lost_total") == 2
    assert sample(metrics, "envelope_proxy_audit_rejected_requests_total") == 1


async def test_shutdown_commits_what_is_queued_and_gives_up_after_the_timeout_on_a_broken_sink() -> None:
    metrics = ProxyMetrics()
    audit = AuditLog([FlakySink(failures=10**9)], on_failure="block", metrics=metrics)
    outcomes: list[str] = []

    async def write() -> None:
        try:
            await audit.write(request_record(stage="intent"), required=True)
            outcomes.append("written")
        except AuditUnavailable:
            outcomes.append("unavailable")

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(audit.run)
            for _ in range(3):
                nursery.start_soon(write)
            await trio.sleep(0.1)
            await audit.aclose(0.3)
    assert outcomes == ["unavailable"] * 3
    assert sample(metrics, "envelope_proxy_audit_records_lost_total") == 3
    with pytest.raises(AuditUnavailable):  # closed: nothing more is taken
        await audit.write(request_record(stage="intent"), required=True)


# -- filters ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "kept"),
    [
        ("all", ["connected", "authenticated", "authentication-failed", "refused", "disconnected"]),
        ("failures", ["authentication-failed", "refused"]),
        ("none", []),
    ],
)
def test_audit_connection_events(mode: str, kept: list[str]) -> None:
    audit = AuditLog([], connection_events=mode)
    stages = ["connected", "authenticated", "authentication-failed", "refused", "disconnected"]
    assert [stage for stage in stages if audit.wanted(connection_event(stage))] == kept
    assert audit.wanted(request_record())  # request records are not connection events


def test_excluded_principals_lose_their_request_records_but_not_refusals_or_connection_events() -> None:
    audit = AuditLog([], excluded_principals=frozenset({"User:monitor"}))
    for stage in ("intent", "outcome", "local", "read"):
        assert not audit.wanted(request_record("User:monitor", stage))
        assert audit.wanted(request_record("User:alice", stage))
    assert audit.wanted(request_record("User:monitor", "refused"))
    event = connection_event("disconnected")
    event["data"]["authenticationInfo"]["principal"] = "User:monitor"
    assert event["type"] == CONNECTION_EVENT_TYPE and audit.wanted(event)


async def test_an_excluded_intent_is_not_waited_for_even_with_a_broken_sink() -> None:
    audit = AuditLog([FlakySink(failures=10**9)], on_failure="block", excluded_principals=frozenset({"User:monitor"}))
    async with audit_running(audit, 0.2):
        with trio.fail_after(5):
            await audit.write(request_record("User:monitor", "intent"), required=True)


@pytest.mark.parametrize(
    ("mechanism", "token", "user"),
    [
        ("PLAIN", b"\x00alice\x00secret", "alice"),
        ("PLAIN", b"alice\x00alice\x00secret", "alice"),
        ("PLAIN", b"garbage", None),
        ("SCRAM-SHA-256", b"n,,n=bo=2Cb,r=abc", "bo,b"),
        ("SCRAM-SHA-512", b"n,,r=abc", None),
        ("PLAIN", b"\x00" + b"x" * 1000 + b"\x00p", "x" * 256),
    ],
)
def test_the_attempted_user_of_a_failed_login(mechanism: str, token: bytes, user: str | None, tmp_path: Path) -> None:
    add_user(tmp_path / "scram.json", "u", "p-secret", mechanisms=["SCRAM-SHA-256"])
    servers: dict[str, ServerMechanism] = {"PLAIN": PlainServer({}), "SCRAM": ScramServerSide(ScramCredentialSource(tmp_path / "scram.json", "k"))}
    assert attempted_user(servers[mechanism.split("-")[0]], mechanism, token) == user


def test_connection_events_and_request_records_match_the_schema() -> None:
    assert_valid([request_record(), connection_event("connected")])


def test_the_schema_is_not_vacuous() -> None:
    from tests.audit_records import schema_errors

    event = connection_event("disconnected")
    assert schema_errors(event)  # a disconnect needs its cause, duration and request count
    event["data"]["connection"] = {"cause": "client", "durationMs": 1.0, "requests": 0}
    assert not schema_errors(event)
    event["data"]["connection"]["cause"] = "gremlins"
    assert schema_errors(event)
    record = request_record(stage="intent")
    del record["data"]["connection"]  # absent or null on request records
    assert not schema_errors(record)
    record["data"]["result"] = request_record()["data"]["result"]
    assert schema_errors(record)  # an intent has no result yet
    record = request_record()
    record["schemaversion"] = 1
    assert schema_errors(record)
    record = request_record()
    record["data"]["connection"] = {"cause": None, "durationMs": None, "requests": None}
    assert schema_errors(record)  # only connection events carry data.connection


# -- the spool and the Kafka sink ---------------------------------------------------------


def test_the_spool_keeps_order_and_forgets_only_what_was_delivered(tmp_path: Path) -> None:
    spool = Spool(tmp_path, durability="fsync", segment_bytes=40)
    lines = [f'{{"n":{n:02d},"pad":"xxxxxxxxxxxxxx"}}\n'.encode() for n in range(6)]
    spool.append(lines[:1])
    spool.append(lines[1:3])  # segment full: the next append opens a new one
    spool.append(lines[3:6])
    assert spool.records == 6 and len(spool.segments) == 2
    first = spool.oldest()
    assert first is not None and spool.read(first) == lines[:3]
    spool.keep_only(first, lines[1:3])  # Kafka took the first line only
    again = Spool(tmp_path, durability="fsync")  # a restart reads what is left, in order
    assert [line for segment in again.segments for line in again.read(segment)] == lines[1:6]
    oldest = again.oldest()
    assert oldest is not None
    again.remove(oldest)
    assert again.records == 3 and again.read(again.segments[0]) == lines[3:6]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_kafka_unreachable_spools_the_records_and_a_restart_delivers_them_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="proxy")
    settings = KafkaSinkSettings(
        bootstrap_servers=f"127.0.0.1:{_closed_port()}",
        topic="audit",
        spool_dir=tmp_path / "spool",
        delivery_timeout=0.3,
        retry_backoff=0.2,
    )
    metrics = ProxyMetrics()
    sink = KafkaSink(settings, durability="fsync", metrics=metrics)
    audit = AuditLog([sink], metrics=metrics)
    async with audit_running(audit, 10):
        with trio.fail_after(30):
            await audit.write(request_record(stage="intent", n=1), required=True)  # waits the delivery timeout, then spools
            assert sink.spooling
            await audit.write(request_record(stage="outcome", n=1), required=True)  # behind the spool at once
    spooled = records_under(tmp_path / "spool")
    assert [r["data"]["stage"] for r in spooled] == ["intent", "outcome"]
    assert_valid(spooled)
    assert sample(metrics, "envelope_proxy_audit_spooled_records_total") == 2
    assert sample(metrics, "envelope_proxy_audit_spool_records") == 2
    assert sample(metrics, "envelope_proxy_audit_records_total", sink="spool", stage="intent") == 1
    assert "spooling records to" in caplog.text
    assert "remain spooled" in caplog.text

    restarted = KafkaSink(settings, durability="fsync")
    assert restarted.spooling and restarted.spool.records == 2
    restarted.close_now()
