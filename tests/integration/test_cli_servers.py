"""`envelope-proxy controller` and `envelope-proxy run` as real processes."""

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from devkit.processes import free_port, start_server, stop_process, wait_for_port, write_properties
from envelope_proxy.embedded import client_config, controller_properties, proxy_properties


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
            stop_process(process)
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


def _cli(*args: str, timeout: float = 90) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "envelope_proxy.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_a_port_in_use_is_one_line_naming_it(tmp_path: Path) -> None:
    """Found by an outside check of the docs: the bind error came out as a page of ExceptionGroup traceback."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    try:
        props = {**proxy_properties(free_port(), tmp_path / "audit"), "listeners": f"CLIENT://127.0.0.1:{port},PLAIN://127.0.0.1:0"}
        result = _cli("run", "--config", str(write_properties(tmp_path / "proxy.properties", props)))
    finally:
        held.close()
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"error: [Errno 98] cannot listen on 127.0.0.1:{port}: Address already in use"


def test_an_audit_dir_that_cannot_be_created_is_a_config_error_at_start(tmp_path: Path) -> None:
    """/proc is a directory, so only creating the folder can tell: the start fails with exit 2 naming the key."""
    props = {**proxy_properties(free_port(), tmp_path), "audit.log.dir": "/proc/no-such-audit-dir"}
    result = _cli("run", "--config", str(write_properties(tmp_path / "proxy.properties", props)))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "Invalid value '/proc/no-such-audit-dir' for configuration audit.log.dir: cannot create" in result.stderr


def test_check_config_reads_log_format_as_run_does(tmp_path: Path) -> None:
    props = {**proxy_properties(9093, tmp_path), "log.format": "xml"}
    result = _cli("check-config", "--config", str(write_properties(tmp_path / "proxy.properties", props)))
    assert result.returncode == 2
    assert "Invalid value 'xml' for configuration log.format: expected one of text, json" in result.stderr


def test_the_demo_writes_the_configs_it_ran(tmp_path: Path) -> None:
    result = _cli("demo", "--skip-spark", "--workdir", str(tmp_path), timeout=180)
    assert result.returncode == 0, result.stderr
    for name in ("controller.properties", "proxy.properties"):
        checked = _cli("check-config", "--config", str(tmp_path / name))
        assert checked.returncode == 0, checked.stderr
    assert json.loads(_cli("check-config", "--config", str(tmp_path / "proxy.properties")).stdout)["node.id"] == 100
