"""Run a command and sample the resident memory and CPU time of its whole process tree (Python, the JVM, Python workers).

CPU time is what the benchmark compares besides wall time: on a machine shared with other work,
a process's CPU seconds move much less than its wall seconds when the others' load changes.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Measured:
    returncode: int
    seconds: float
    peak_rss_bytes: int
    #: the plain sum over the tree, every process counted (what a sampler that knows nothing of posix_spawn sees)
    peak_rss_plain_bytes: int
    #: user + system CPU seconds of every process of the tree (each process's last sample)
    cpu_seconds: float
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


def _cpu(pid: int) -> float:
    """User + system CPU seconds of one process so far."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # after the command's name: state is field 3, utime and stime are fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / TICKS


def _tree(root: int) -> list[int]:
    tree = _children()
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, []))
    return found


def tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds so far of each live process of the tree."""
    return {pid: _cpu(pid) for pid in _tree(root)}


def _cmdline(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _is_jvm(cmdline: bytes) -> bool:
    program = cmdline.split(b"\0", 1)[0]
    return program == b"java" or program.endswith(b"/java")


def tree_rss(root: int) -> int:
    """Resident bytes of the tree, each memory counted once (:func:`tree_rss_both`)."""
    return tree_rss_both(root)[0]


def tree_rss_both(root: int) -> tuple[int, int]:
    """Resident bytes of the tree, each memory counted once, and the plain sum over its processes.

    A JVM's child that still has the JVM's command line has not exec'ed yet: Java starts programs with
    posix_spawn, whose child shares the parent's memory until it execs. Hadoop's local file system
    starts one (`chmod`) for every file and directory it writes when its native library is absent, as
    with pyspark, so a sample now and then would count the JVM twice; such a child is left out of the
    first figure. The job in local mode uses a file system that starts none (spark_audit/local_fs.py),
    so there the two agree.
    """
    tree = _children()
    once = plain = 0
    stack = [(root, b"")]
    while stack:
        pid, parent = stack.pop()
        cmdline = _cmdline(pid)
        rss = _rss(pid)
        plain += rss
        if not (cmdline == parent and _is_jvm(parent)):
            once += rss
        stack.extend((child, cmdline) for child in tree.get(pid, []))
    return once, plain


def run(command: list[str], *, timeout: float, interval: float = 0.2, env: dict[str, str] | None = None) -> Measured:
    """Wall time and sampled peak RSS (sum over the tree; a sample every ``interval`` seconds)."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = plain_peak = 0
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, plain_peak
        while not done.is_set():
            once, plain = tree_rss_both(process.pid)
            peak, plain_peak = max(peak, once), max(plain_peak, plain)
            for pid, seconds in tree_cpu(process.pid).items():
                cpu[pid] = max(cpu.get(pid, 0.0), seconds)
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
    return Measured(process.returncode, time.monotonic() - started, peak, plain_peak, round(sum(cpu.values()), 2), stdout, stderr)
