"""The proxy and the embedded controller as real processes on loopback, for tests and benchmarks."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: ports the kernel picks for TCP before one is also free for UDP (`free_port(udp_too=True)`)
_UDP_TRIES = 50


def free_port(host: str = "127.0.0.1", *, udp_too: bool = False) -> int:
    """A port nothing listens on now (the kernel's pick; a race with other processes is possible, and rare).

    `udp_too`: free for UDP as well, for a server that listens on both (a KDC); OSError when none is found.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(_UDP_TRIES):
        with socket.socket(family, socket.SOCK_STREAM) as tcp:
            tcp.bind((host, 0))
            port = int(tcp.getsockname()[1])
            if not udp_too:
                return port
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind((host, port))
                except OSError:
                    continue
                return port
    raise OSError(f"no port on {host} free for both TCP and UDP")


def write_properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def wait_for_port(port: int, process: "subprocess.Popen[Any]", deadline: float = 60.0, log: Path | None = None) -> None:
    """Until `port` accepts connections; AssertionError when `process` exits first or after `deadline` seconds (with
    the end of `log`, the process's output, when given)."""
    end = time.monotonic() + deadline

    def tail() -> str:
        return "" if log is None or not log.exists() else ":\n" + log.read_text(errors="replace")[-4000:]

    while time.monotonic() < end:
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode} before listening on {port}{tail()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"port {port} not listening after {deadline:.0f}s{tail()}")


def start_server(args: list[str], log: Path) -> "subprocess.Popen[Any]":
    """`envelope-proxy <args>` (run, controller, ...) as a process of the current interpreter, its output in `log`."""
    return subprocess.Popen([sys.executable, "-m", "envelope_proxy.cli", *args], stdout=log.open("w"), stderr=subprocess.STDOUT)


def stop_process(process: "subprocess.Popen[Any]", timeout: float = 30.0) -> int:
    """SIGTERM, the graceful stop every server here drains on, then SIGKILL after `timeout` seconds; the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait(10)


def skip_or_fail(reason: str, *, required: bool = True) -> None:
    """Skip a test whose tool or service is missing; fail it instead when CI=true and it could be there (`required`)."""
    import pytest  # only tests call this; the benchmarks import the module without pytest

    if os.environ.get("CI") == "true" and required:
        pytest.fail(f"{reason} (required when CI=true)")
    pytest.skip(reason)
