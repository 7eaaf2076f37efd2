"""What the audit job's tests share: bench/audit's generator for realistic input, and the job run as a user runs it."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_audit import local_fs

REPO_ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def bench_generator() -> Any:
    """bench/audit/generate.py, loaded once (bench/ is not a package; its modules import their siblings by name,
    as they do when run as scripts)."""
    folder = str(REPO_ROOT / "bench" / "audit")
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location("bench_generate", REPO_ROOT / "bench" / "audit" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_generate"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


#: The edge cases turned up far above real traffic's rates, so that a few thousand lines hold every kind.
EDGE_CASE_RATES = {
    "brute_force": 0.01,
    "refused_connections": 0.03,
    "malformed": 0.01,
    "blank": 0.01,
    "duplicate_in_file": 0.01,
    "duplicate_across_files": 0.01,
    "lost_intent": 0.02,
    "lost_outcome": 0.02,
}


def edge_case_traffic(*, days: int, nodes: int, principals: int, topics: int, addresses: int) -> Any:
    """bench/audit's Traffic of that size with EDGE_CASE_RATES."""
    return bench_generator().Traffic(days=days, nodes=nodes, principals=principals, topics=topics, addresses=addresses, **EDGE_CASE_RATES)


def run_job(
    source: Path, out: Path, *options: str, timeout: float, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m spark_audit --input source --output out *options`, its output captured; `env` replaces the environment."""
    return subprocess.run(
        [sys.executable, "-m", "spark_audit", "--input", str(source), "--output", str(out), *options],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO_ROOT,
        env=env,
    )


def run_bench(tmp_path: Path, *options: str) -> dict[str, Any]:
    """bench/audit/run.py over a thousand records with `options`: its JSON, once it exited 0.

    On one task thread: these tests check the bench's steps and its JSON, not a speed, and each step is a fresh JVM that
    a second task thread made dearer (the incremental smoke run 118.5 and 130.5 CPU-s on `local[1]`, 137.7 and 146.0 on
    `local[2]`, interleaved)."""
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "audit" / "run.py"),
            "--records",
            "1000",
            "--workdir",
            str(tmp_path),
            "--master",
            "local[1]",
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    assert [run["records"] for run in result["runs"]] == [1000]
    return result


def recording_chmod(bin_dir: Path, log: Path) -> dict[str, str]:
    """An environment whose `chmod` (found on PATH, as Hadoop's shell finds it) logs each call, then runs the real one."""
    real = shutil.which("chmod")
    assert real is not None
    bin_dir.mkdir()
    shim = bin_dir / "chmod"
    shim.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


#: The large run's input and heap: why these two, in test_memory_wall.py.
REALISTIC_LINES = 500_000
SMALL_HEAP = "512m"


@dataclass(frozen=True)
class RealisticRun:
    """`python -m spark_audit` over REALISTIC_LINES generated lines on a heap of SMALL_HEAP, every `chmod` it started logged."""

    proc: subprocess.CompletedProcess[str]
    out: Path
    #: what the generator wrote (bench/audit/generate.py's counts: records, malformed, duplicates, ...)
    counts: Any
    #: one line per `chmod` process the run started; no file when it started none
    chmod_log: Path


def realistic_run(root: Path) -> RealisticRun:
    """The job over REALISTIC_LINES lines of bench/audit's generator in ``root``, as a user runs it, on SMALL_HEAP."""
    source, out, chmod_log = root / "audit", root / "out", root / "chmod.log"
    counts = bench_generator().write(source, REALISTIC_LINES, seed=13)
    env = recording_chmod(root / "bin", chmod_log)
    env.pop(local_fs.JAR_ENV, None)  # the job chooses its file system itself, as in a user's environment
    proc = run_job(source, out, "--master", "local[2]", "--driver-memory", SMALL_HEAP, "--quiet", timeout=1200, env=env)
    return RealisticRun(proc, out, counts, chmod_log)
