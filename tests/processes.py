"""The proxy and the embedded controller as real processes on loopback, for tests and benchmarks."""

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def wait_for_port(port: int, process: "subprocess.Popen[Any]", deadline: float = 60.0) -> None:
    """Until `port` accepts connections; AssertionError when `process` exits first or after `deadline` seconds."""
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


def start_server(args: list[str], log: Path) -> "subprocess.Popen[Any]":
    """`envelope-proxy <args>` (run, controller, ...) as a process of the current interpreter, its output in `log`."""
    return subprocess.Popen([sys.executable, "-m", "envelope_proxy.cli", *args], stdout=log.open("w"), stderr=subprocess.STDOUT)
