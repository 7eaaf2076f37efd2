"""`envelope-proxy controller` and `envelope-proxy run` as real processes."""

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from proxy.tools.embedded import client_config, controller_properties, proxy_properties


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def _wait_for_port(port: int, process: subprocess.Popen[Any], deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if process.poll() is not None:
            raise AssertionError(f"server exited early with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"port {port} not listening after {deadline}s")


def _server(args: list[str], log: Path) -> subprocess.Popen[Any]:
    return subprocess.Popen([sys.executable, "-m", "proxy.tools.cli", *args], stdout=log.open("w"), stderr=subprocess.STDOUT)


def test_sigterm_stops_the_proxy_cleanly_and_publishes_the_audit_file(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    controller_port, proxy_port = _free_port(), _free_port()
    controller_file = _write(tmp_path / "controller.properties", controller_properties(port=controller_port))
    props = proxy_properties(controller_port, tmp_path / "audit")
    props["listeners"] = f"CLIENT://127.0.0.1:{proxy_port}"
    props["listener.security.protocol.map"] = "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    proxy_file = _write(tmp_path / "proxy.properties", props)

    controller = _server(["controller", "--config", str(controller_file)], tmp_path / "controller.log")
    proxy = _server(["run", "--config", str(proxy_file)], tmp_path / "proxy.log")
    try:
        _wait_for_port(controller_port, controller)
        _wait_for_port(proxy_port, proxy)
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
    path = _write(tmp_path / "controller.properties", controller_properties(port=9093))
    result = subprocess.run(
        [sys.executable, "-m", "proxy.tools.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
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
        [sys.executable, "-m", "proxy.tools.cli", command, "--config", str(missing)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert str(missing) in result.stderr
