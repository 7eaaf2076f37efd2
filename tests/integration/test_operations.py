"""Operations: exact metric changes after a known sequence, readiness, and a graceful drain on SIGTERM under load."""

import json
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import trio

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from devkit.processes import free_port, start_server, wait_for_port, write_properties
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _samples(text: str) -> dict[str, float]:
    """`name{labels} value` lines of the Prometheus text format, comments and _created series left out."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "_created" not in line:
            series, value = line.rsplit(" ", 1)
            found[series] = float(value)
    return found


async def test_metrics_change_exactly_after_a_known_sequence(nursery: Any, tmp_path: Path) -> None:
    controller = EmbeddedController(parse_controller_config(controller_properties()))
    (bound,) = await nursery.start(controller.run)
    props = {
        **proxy_properties(bound.port, tmp_path / "audit"),
        "metrics.listen": "127.0.0.1:0",
        "security.ip.filter.rule.type": "deny",
        "security.ip.filter.list": "127.0.0.5",
    }
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    address = f"127.0.0.1:{running.listener('CLIENT').port}"

    def sequence() -> list[int | str]:
        seen: list[int | str] = [
            wire.create_topic_at(address, "admin", DEFAULT_USERS["admin"], "accepted"),
            wire.create_topic_at(address, "alice", DEFAULT_USERS["alice"], "denied"),
            wire.create_topic_at(address, "alice", "wrong", "never"),
        ]
        try:
            wire.create_topic_at(address, "admin", DEFAULT_USERS["admin"], "filtered", source="127.0.0.5")
        except (ConnectionError, OSError) as exc:
            seen.append(type(exc).__name__)
        return seen

    outcomes = await trio.to_thread.run_sync(sequence)
    assert outcomes[:3] == [0, 29, 58] and len(outcomes) == 4
    status, text = await trio.to_thread.run_sync(_get, f"http://127.0.0.1:{running.metrics_port}/metrics")
    assert status == 200
    samples = _samples(text)
    expected = {
        'envelope_proxy_requests_total{api="CreateTopics",listener="CLIENT",outcome="forwarded"}': 2.0,
        'envelope_proxy_authentications_total{listener="CLIENT",mechanism="PLAIN",result="success"}': 2.0,
        'envelope_proxy_authentications_total{listener="CLIENT",mechanism="PLAIN",result="failure"}': 1.0,
        'envelope_proxy_connections_refused_total{cause="ip_filter",listener="CLIENT"}': 1.0,
        'envelope_proxy_connections_refused_total{cause="auth",listener="CLIENT"}': 1.0,
        'envelope_proxy_connections_accepted_total{listener="CLIENT"}': 3.0,
        'envelope_proxy_audit_records_total{sink="file",stage="intent"}': 2.0,
        'envelope_proxy_audit_records_total{sink="file",stage="outcome"}': 2.0,
        # connection events: all three admitted connections, two logins, one failed login, one IP filter refusal
        'envelope_proxy_audit_records_total{sink="file",stage="connected"}': 3.0,
        'envelope_proxy_audit_records_total{sink="file",stage="authenticated"}': 2.0,
        'envelope_proxy_audit_records_total{sink="file",stage="authentication-failed"}': 1.0,
        'envelope_proxy_audit_records_total{sink="file",stage="refused"}': 1.0,
        "envelope_proxy_audit_records_lost_total": 0.0,
        'envelope_proxy_request_upstream_time_seconds_count{api="CreateTopics"}': 2.0,
        "envelope_proxy_upstream_connected": 1.0,
        "envelope_proxy_ready": 1.0,
    }
    assert {key: samples.get(key) for key in expected} == expected
    assert not any("alice" in series or "127.0.0" in series for series in samples)  # bounded labels only


async def test_readyz_follows_the_controller(nursery: Any, tmp_path: Path) -> None:
    port = free_port()
    props = {**proxy_properties(port, tmp_path / "audit"), "metrics.listen": "127.0.0.1:0"}
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    readyz = f"http://127.0.0.1:{running.metrics_port}/readyz"
    metrics = readyz.replace("readyz", "metrics")
    assert await trio.to_thread.run_sync(_get, readyz) == (503, "not ready\n")
    assert (await trio.to_thread.run_sync(_get, readyz.replace("readyz", "healthz")))[0] == 200
    assert _samples((await trio.to_thread.run_sync(_get, metrics))[1])["envelope_proxy_upstream_active_controller_id"] == -1.0
    controller = EmbeddedController(parse_controller_config({**controller_properties(port=port), "node.id": "3"}))
    await nursery.start(controller.run)
    with trio.fail_after(30):
        while (await trio.to_thread.run_sync(_get, readyz))[0] != 200:
            await trio.sleep(0.1)
    assert _samples((await trio.to_thread.run_sync(_get, metrics))[1])["envelope_proxy_upstream_active_controller_id"] == 3.0


def test_sigterm_under_load_answers_and_audits_every_accepted_request(tmp_path: Path) -> None:
    controller_port, proxy_port = free_port(), free_port()
    controller_file = write_properties(tmp_path / "controller.properties", controller_properties(port=controller_port))
    props = proxy_properties(controller_port, tmp_path / "audit")
    props.update(
        {
            "listeners": f"CLIENT://127.0.0.1:{proxy_port}",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        }
    )
    props["shutdown.timeout.ms"] = "20000"
    proxy_file = write_properties(tmp_path / "proxy.properties", props)
    controller = start_server(["controller", "--config", str(controller_file)], tmp_path / "controller.log")
    proxy = start_server(["run", "--config", str(proxy_file)], tmp_path / "proxy.log")
    answered: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(index: int) -> None:
        with wire.connect(f"127.0.0.1:{proxy_port}", timeout=30) as sock:
            assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
            for n in range(500):  # bounded
                if stop.is_set():
                    return
                topic = f"load-{index}-{n}"
                body = {"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                try:
                    wire.call(sock, ApiKey.CREATE_TOPICS, 5, {"topics": [body], "timeout": 5000, "validate_only": False}, n + 10)
                except (ConnectionError, OSError):
                    return  # closed by the drain between requests: this one was never read
                with lock:
                    answered.append(topic)

    try:
        wait_for_port(controller_port, controller)
        wait_for_port(proxy_port, proxy)
        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(4)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(answered) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(timeout=60) == 0, (tmp_path / "proxy.log").read_text()[-3000:]
        stop.set()
        for thread in threads:
            thread.join(30)
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", proxy_port)) != 0  # no longer accepting
    finally:
        stop.set()
        for process in (proxy, controller):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(30)
    records = [json.loads(line) for path in sorted((tmp_path / "audit").glob("*.jsonl")) for line in path.read_text().splitlines()]
    stages: dict[str, list[str]] = {}
    for record in records:
        if (record.get("subject") or "").startswith("topic:load-"):
            stages.setdefault(record["subject"][len("topic:") :], []).append(record["data"]["stage"])
    assert len(answered) >= 20
    assert all(stages.get(topic) == ["intent", "outcome"] for topic in answered), "an answered request lacks its audit records"
    assert all(seen == ["intent", "outcome"] for seen in stages.values()), "a forwarded request has no outcome record"
    assert list((tmp_path / "audit" / ".staging").glob("*.jsonl")) == []
    assert "drained: every request in flight was answered" in (tmp_path / "proxy.log").read_text()
