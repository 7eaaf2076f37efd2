"""SIGKILL the proxy (`envelope-proxy run`, audit.durability=fsync) in the middle of a stream of admin requests.

Every request whose answer reached a client must have its intent record on disk
(published or still in staging), and a restart must publish the staged leftovers.
`run_until_killed` leaves the audit directory of the crashed run for further checks
(e.g. the Spark job reporting the intents without outcomes, `intents_without_outcomes`).
"""

import contextlib
import datetime
import json
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devkit import wire
from devkit.processes import free_port, start_server, stop_process, wait_for_port, write_properties
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties
from tests.audit_records import assert_valid, records_under

CLIENTS = 4
ANSWERED_BEFORE_KILL = 60
TOPIC = {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}


@dataclass
class CrashRun:
    audit_dir: Path
    proxy_config: Path
    proxy_port: int
    controller: "subprocess.Popen[Any]"
    answered: list[str] = field(default_factory=list)
    """Topics whose CreateTopics answer a client had received when the proxy was killed."""
    staged_at_kill: list[str] = field(default_factory=list)
    """Names of the files in <audit_dir>/.staging right after the kill that held a whole record (a file opened by a
    rotation just before the kill may hold none: a restart removes it, as there is nothing to publish)."""


def _a_staged_file_has_records(staging: Path) -> bool:
    for path in staging.glob("*.jsonl"):
        with contextlib.suppress(FileNotFoundError):  # published by a rotation since the listing
            if path.stat().st_size > 0:
                return True
    return False


def _instant(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def intents_without_outcomes(records: list[dict[str, Any]]) -> set[str]:
    """Request ids of forwarded requests with an intent but no outcome: the ones a crash cut short."""
    stages: dict[str, set[str]] = {}
    for record in records:
        if record["type"].endswith(".request") and record["data"]["stage"] in ("intent", "outcome"):
            stages.setdefault(record["data"]["requestId"], set()).add(record["data"]["stage"])
    return {request_id for request_id, seen in stages.items() if seen == {"intent"}}


def run_until_killed(tmp_path: Path, extra: dict[str, str] | None = None) -> CrashRun:
    """Controller and proxy as processes, CLIENTS connections creating topics back to back, then SIGKILL the proxy.
    The controller is left running (stop it with `_stop`)."""
    controller_port, proxy_port = free_port(), free_port()
    controller_file = write_properties(tmp_path / "controller.properties", controller_properties(port=controller_port))
    props = proxy_properties(controller_port, tmp_path / "audit")
    props.update(
        {
            "listeners": f"CLIENT://127.0.0.1:{proxy_port}",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            "audit.durability": "fsync",
            "audit.file.max.bytes": "40000",  # several published files and one in staging at the kill
            **(extra or {}),
        }
    )
    run = CrashRun(
        tmp_path / "audit",
        write_properties(tmp_path / "proxy.properties", props),
        proxy_port,
        start_server(["controller", "--config", str(controller_file)], tmp_path / "controller.log"),
    )
    lock, stop = threading.Lock(), threading.Event()

    def client(index: int) -> None:
        try:
            with wire.connect(f"127.0.0.1:{proxy_port}", timeout=30) as sock:
                assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
                for n in range(2000):  # bounded
                    if stop.is_set():
                        return
                    topic = f"crash-{index}-{n}"
                    wire.call(sock, ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": topic, **TOPIC}], "timeout": 5000, "validate_only": False}, n + 10)
                    with lock:
                        run.answered.append(topic)
        except (ConnectionError, OSError):
            return  # the proxy was killed

    wait_for_port(controller_port, run.controller)
    proxy = start_server(["run", "--config", str(run.proxy_config)], tmp_path / "proxy.log")
    try:
        wait_for_port(proxy_port, proxy)
        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        staging = run.audit_dir / ".staging"
        # Kill while a file is being written (right after a rotation there is briefly none).
        while (len(run.answered) < ANSWERED_BEFORE_KILL or not _a_staged_file_has_records(staging)) and time.monotonic() < deadline:
            time.sleep(0.005)
        proxy.send_signal(signal.SIGKILL)
        proxy.wait(30)
        with lock:
            run.answered = list(run.answered)  # answers after this point cannot exist: the process is gone
        run.staged_at_kill = sorted(path.name for path in (run.audit_dir / ".staging").glob("*.jsonl") if b"\n" in path.read_bytes())
        stop.set()
        for thread in threads:
            thread.join(30)
    finally:
        stop.set()
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait(30)
    return run


def test_sigkill_keeps_the_intent_of_every_answered_request_and_a_restart_publishes_the_leftovers(tmp_path: Path) -> None:
    run = run_until_killed(tmp_path)
    try:
        assert len(run.answered) >= ANSWERED_BEFORE_KILL, (tmp_path / "proxy.log").read_text()[-3000:]
        records = records_under(run.audit_dir)  # published and staged, whole lines only
        assert_valid(records)
        intents = {r["subject"] for r in records if r["data"]["stage"] == "intent"}
        missing = [topic for topic in run.answered if f"topic:{topic}" not in intents]
        assert not missing, f"answered but no intent on disk: {missing}"
        # At most one request per connection was in flight: those are the intents without an outcome.
        assert len(intents_without_outcomes(records)) <= CLIENTS
        assert run.staged_at_kill, "the kill should leave the current file in staging"

        restarted = start_server(["run", "--config", str(run.proxy_config)], tmp_path / "proxy-restart.log")
        try:
            wait_for_port(run.proxy_port, restarted)
            published = {path.name for path in run.audit_dir.glob("*.jsonl")}
            assert set(run.staged_at_kill) <= published
            assert f"published {len(run.staged_at_kill)} files left in" in (tmp_path / "proxy-restart.log").read_text()
        finally:
            assert stop_process(restarted) == 0, (tmp_path / "proxy-restart.log").read_text()[-3000:]
        assert list((run.audit_dir / ".staging").glob("*.jsonl")) == []
        after = records_under(run.audit_dir)
        assert {r["id"] for r in records} <= {r["id"] for r in after}  # publishing lost nothing
        # The Spark job reports exactly those intents, but for any in its grace second before the newest record.
        report = tmp_path / "report"
        job = subprocess.run(
            [
                *(sys.executable, "-m", "spark_audit", "--input", str(run.audit_dir), "--output", str(report)),
                *("--outcome-grace", "1 second", "--no-html", "--quiet", "--master", "local[1]"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert job.returncode == 0, job.stderr[-3000:]
        summary = json.loads((report / "summary.json").read_text())
        newest = max(_instant(r["time"]) for r in after)
        cut_short = intents_without_outcomes(after)
        expected = [r for r in after if r["data"].get("requestId") in cut_short and r["data"]["stage"] == "intent"]
        assert summary["intents_without_outcome"] == sum(1 for r in expected if _instant(r["time"]) <= newest - 1.0)
    finally:
        assert stop_process(run.controller) == 0
