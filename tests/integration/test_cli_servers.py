"""`envelope-proxy controller` and `envelope-proxy run` as real processes."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from envelope_proxy.embedded import client_config, controller_properties, proxy_properties
from tests.processes import free_port, start_server, wait_for_port, write_properties


def test_sigterm_stops_the_proxy_cleanly_and_publishes_the_audit_file(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    controller_port, proxy_port = free_port(), free_port()
    controller_file = write_properties(tmp_path / "controller.properties", controller_properties(port=controller_port))
    props = proxy_properties(controller_port, tmp_path / "audit")
    props["listeners"] = f"CLIENT://127.0.0.1:{proxy_port}"
    props["listener.security.protocol.map"] = "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    proxy_file = write_properties(tmp_path / "proxy.properties", props)

    controller = start_server(["controller", "--config", str(controller_file)], tmp_path / "controller.log")
    proxy = start_server(["run", "--config", str(proxy_file)], tmp_path / "proxy.log")
    try:
        wait_for_port(controller_port, controller)
        wait_for_port(proxy_port, proxy)
        admin = AdminClient(client_config(f"127.0.0.1:{proxy_port}", "admin"))
        for future in admin.create_topics([NewTopic("cli-topic", 1, 1)]).values():
            future.result(timeout=30)
        assert list((tmp_path / "audit").glob("*.jsonl")) == []  # still being written in staging
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(timeout=30) == 0, (tmp_path / "proxy.log").read_text()
    finally:
        for process in (proxy, controller):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
    assert controller.returncode == 0
    published = list((tmp_path / "audit").glob("*.jsonl"))
    assert len(published) == 1
    assert list((tmp_path / "audit" / ".staging").glob("*.jsonl")) == []
    records = [json.loads(line) for line in published[0].read_text().splitlines()]
    stages = [r["data"]["stage"] for r in records if r["subject"] == "topic:cli-topic"]
    assert stages == ["intent", "outcome"]


def test_check_config_of_the_controller(tmp_path: Path) -> None:
    path = write_properties(tmp_path / "controller.properties", controller_properties(port=9093))
    result = subprocess.run(
        [sys.executable, "-m", "envelope_proxy.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    effective = json.loads(result.stdout)
    assert effective["role"] == "controller"
    assert effective["super.users"] == ["User:admin", "User:proxy"]
    assert "proxy-secret" not in result.stdout


@pytest.mark.parametrize("command", ["run", "controller"])
def test_a_missing_config_file_is_a_clear_error(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nope.properties"
    result = subprocess.run(
        [sys.executable, "-m", "envelope_proxy.cli", command, "--config", str(missing)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert str(missing) in result.stderr
