"""What a failing audit sink does to requests (audit.on.failure), and audit.excluded.principals, end to end."""

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

from devkit import wire
from envelope_proxy.embedded import DEFAULT_USERS, EmbeddedStack, start_stack
from tests.integration.conftest import audit_records

# Every batch publishes its file, so the next record needs a new file in staging: breaking staging breaks the sink.
ONE_RECORD_PER_FILE = {"audit.file.max.bytes": "1"}


def _create_topic(sock: socket.socket, name: str, correlation_id: int = 3) -> tuple[int, str | None]:
    topic = wire.create_topic(sock, name, correlation_id=correlation_id)
    return int(topic.error_code), topic.error_message


@contextmanager
def broken_staging(audit_dir: Path) -> Iterator[None]:
    """A regular file where the staging directory was: opening a new audit file fails (also for root)."""
    staging, aside = audit_dir / ".staging", audit_dir / ".staging-aside"
    # One atomic rename: the proxy may be publishing a file out of staging at this very moment.
    staging.rename(aside)
    staging.write_text("")
    try:
        yield
    finally:
        staging.unlink()
        aside.rename(staging)


def _metric(stack: EmbeddedStack, name: str, **labels: str) -> float:
    value = stack.proxy.service.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_reject_answers_kafka_storage_error_and_forwards_nothing(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides={**ONE_RECORD_PER_FILE, "audit.on.failure": "reject"})

    def work() -> tuple[tuple[int, str | None], tuple[int, str | None]]:
        with wire.connect(stack.sasl_address) as sock:
            assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
            with broken_staging(tmp_path / "audit"):
                refused = _create_topic(sock, "unaudited", 3)
            return refused, _create_topic(sock, "audited", 4)

    refused, accepted = await trio.to_thread.run_sync(work)
    assert refused == (56, "the proxy could not write the audit record of this request; it was not forwarded")
    assert accepted == (0, None)
    assert "unaudited" not in stack.controller.image.topics and "audited" in stack.controller.image.topics
    subjects = [(r["subject"], r["data"]["stage"]) for r in audit_records(tmp_path / "audit") if r["subject"]]
    assert ("topic:unaudited", "intent") not in subjects
    assert [s for s in subjects if s[0] == "topic:audited"] == [("topic:audited", "intent"), ("topic:audited", "outcome")]
    assert _metric(stack, "envelope_proxy_audit_rejected_requests_total") == 1
    assert _metric(stack, "envelope_proxy_requests_total", listener="CLIENT", api="CreateTopics", outcome="failed") == 1


async def test_block_holds_the_request_until_its_intent_is_written(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=ONE_RECORD_PER_FILE)
    answers: list[tuple[int, str | None]] = []
    sock = await trio.to_thread.run_sync(lambda: wire.connect(stack.sasl_address, timeout=60))

    async def ask() -> None:
        answers.append(await trio.to_thread.run_sync(_create_topic, sock, "held"))

    try:
        assert await trio.to_thread.run_sync(wire.sasl_plain_login, sock, "admin", DEFAULT_USERS["admin"]) == 0
        with trio.fail_after(60):
            async with trio.open_nursery() as client:
                with broken_staging(tmp_path / "audit"):
                    client.start_soon(ask)
                    while _metric(stack, "envelope_proxy_audit_write_errors_total", sink="file") < 3:
                        await trio.sleep(0.02)  # the intent failed to be written, and was retried
                    assert answers == [] and "held" not in stack.controller.image.topics
                # the sink works again: the retry writes the intent, then the request goes on
    finally:
        sock.close()
    assert answers == [(0, None)] and "held" in stack.controller.image.topics
    stages = [r["data"]["stage"] for r in audit_records(tmp_path / "audit") if r["subject"] == "topic:held"]
    assert stages == ["intent", "outcome"]
    assert _metric(stack, "envelope_proxy_audit_records_lost_total") == 0


async def test_excluded_principals_have_no_request_records_but_their_connections_are_audited(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides={"audit.excluded.principals": "User:bob,User:mallory"})

    def work() -> None:
        for user in ("bob", "alice"):
            with wire.connect(stack.sasl_address) as sock:
                assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
                _create_topic(sock, f"by-{user}")
        with wire.connect(stack.sasl_address) as sock:  # a failed login names the user, excluded or not
            assert wire.sasl_plain_login(sock, "bob", "wrong") == 58

    await trio.to_thread.run_sync(work)
    records = audit_records(tmp_path / "audit")
    requests = [(r["data"]["authenticationInfo"]["principal"], r["data"]["stage"]) for r in records if r["type"].endswith(".request")]
    assert ("User:alice", "intent") in requests and ("User:alice", "outcome") in requests
    assert not [principal for principal, _ in requests if principal == "User:bob"]
    events = [(r["data"]["authenticationInfo"]["principal"], r["data"]["stage"]) for r in records if r["type"].endswith(".connection")]
    assert ("User:bob", "authenticated") in events and ("User:bob", "authentication-failed") in events
