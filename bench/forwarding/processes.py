"""The processes of bench/forwarding: started with bounded waits, measured from /proc, always stopped.

Every process goes into a `Processes` (a context manager): on exit, error or not, each one still
running gets SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STOP_GRACE = 15.0


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` in seconds (fields 14 and 15 of /proc/<pid>/stat, after the parenthesised name)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS


def rss_kb(pid: int) -> int:
    """VmRSS of `pid` in KiB: its resident memory now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def peak_rss_mb(pid: int) -> float | None:
    """VmHWM of `pid` in MiB: the most resident memory it has had."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def read_announcement(process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    """The first stdout line of `process`, a JSON object (what the relay and the zero-work upstream print)."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{process.args!r} printed no address within {timeout:.0f}s")
            if not selector.select(remaining):
                continue
            chunk = os.read(process.stdout.fileno(), 1)
            if not chunk:
                raise RuntimeError(f"{process.args!r} exited with {process.wait(STOP_GRACE)} before printing its address")
            line += chunk
    announced = json.loads(line)
    if not isinstance(announced, dict):
        raise RuntimeError(f"{process.args!r} printed {line!r}")
    return announced


class Processes:
    """Every server the benchmark starts; all are stopped when the block ends."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._running: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop_all()

    def start(self, name: str, argv: list[str], *, announces: bool = False, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """`argv` with stderr (and stdout, unless it `announces` on it) in <workdir>/<name>.log."""
        log = (self.workdir / f"{name}.log").open("wb")
        self._logs.append(log)
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if announces else log,
            stderr=log,
            cwd=cwd,
            start_new_session=True,  # a Ctrl-C reaches only us; we stop them in order
        )
        self._running.append(process)
        return process

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(STOP_GRACE)
        if process.stdout is not None:
            process.stdout.close()
        if process in self._running:
            self._running.remove(process)

    def stop_all(self) -> None:
        for process in reversed(list(self._running)):
            self.stop(process)
        for log in self._logs:
            log.close()
        self._logs.clear()

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            text = (self.workdir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


__all__ = ["Processes", "cpu_seconds", "peak_rss_mb", "read_announcement", "rss_kb"]
