"""Run a command and sample the resident memory of its whole process tree (Python, the JVM, Python workers)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Measured:
    returncode: int
    seconds: float
    peak_rss_bytes: int
    stdout: str
    stderr: str


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def _rss(pid: int) -> int:
    try:
        return int((Path("/proc") / str(pid) / "statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss(root: int) -> int:
    tree = _children()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _rss(pid)
        stack.extend(tree.get(pid, []))
    return total


def run(command: list[str], *, timeout: float, interval: float = 0.2, env: dict[str, str] | None = None) -> Measured:
    """Wall time and sampled peak RSS (sum over the tree; a sample every ``interval`` seconds)."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(process.pid))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
        if process.poll() is None:
            process.kill()
            process.wait()
    return Measured(process.returncode, time.monotonic() - started, peak, stdout, stderr)
