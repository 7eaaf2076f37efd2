"""A real proxy's audit trail through rotations, a SIGKILL and restarts verifies whole with `envelope-proxy audit verify`."""

import json
import subprocess
import sys
from pathlib import Path

from devkit.processes import start_server, stop_process, wait_for_port
from tests.audit_records import assert_valid, records_under
from tests.integration.test_audit_crash import run_until_killed
from tests.proxy.audit.chain_trail import write_key_pair


def _verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envelope_proxy", "audit", "verify", *args], capture_output=True, text=True, timeout=120, check=False)


def test_a_trail_through_rotations_a_sigkill_and_restarts_verifies(tmp_path: Path) -> None:
    private, public = write_key_pair(tmp_path)
    run = run_until_killed(tmp_path, {"audit.chain.signing.key.file": str(private), "audit.chain.checkpoint.records": "50"})
    try:
        for attempt in range(2):  # the restart that publishes the crash's staging file, then a plain restart
            restarted = start_server(["run", "--config", str(run.proxy_config)], tmp_path / f"proxy-restart-{attempt}.log")
            wait_for_port(run.proxy_port, restarted)
            assert stop_process(restarted) == 0
    finally:
        assert stop_process(run.controller) == 0
    assert_valid(records_under(run.audit_dir))
    checked = _verify(str(run.audit_dir), "--public-key", str(public), "--json")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    report = json.loads(checked.stdout)
    assert len(report["writers"]) == 3, report
    by_writer = {writer["writer"]: writer for writer in report["writers"]}
    # Each restart continues the last record of the run before, the crashed run's from its recovered staging file.
    linked = [writer["continues"]["source"] for writer in report["writers"] if writer["continues"]]
    assert len(linked) == 2 and all(source in by_writer for source in linked)
    assert sum(1 for writer in report["writers"] if not writer["closed"]) == 1, "only the killed run has no closing checkpoint"
    # Any change of a line is caught: drop one line of the middle of the killed run's first file.
    first_file = sorted(run.audit_dir.glob("*.jsonl"))[0]
    lines = first_file.read_bytes().splitlines(keepends=True)
    first_file.write_bytes(b"".join(lines[:5] + lines[6:]))
    broken = _verify(str(run.audit_dir), "--public-key", str(public))
    assert broken.returncode == 1 and "missing: 6" in broken.stdout, broken.stdout
