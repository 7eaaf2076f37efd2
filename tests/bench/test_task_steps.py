"""bench/forwarding/task_steps: a process started with it counts trio's task steps and reports them on SIGUSR1."""

import json
import os
import subprocess
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "bench" / "forwarding" / "task_steps"

# 100 checkpoints, each a task step of its own, then the totals while the last step runs
PROGRAM = """
import os, signal, trio

async def main() -> None:
    for _ in range(100):
        await trio.lowlevel.checkpoint()
    os.kill(os.getpid(), signal.SIGUSR1)

trio.run(main)
"""


def test_a_signalled_process_writes_the_task_steps_it_took(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FOLDER), os.environ.get("PYTHONPATH", "")]), "BENCH_TASK_STEPS": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    (written,) = tmp_path.glob("*.json")
    totals = json.loads(written.read_text())
    assert 100 <= totals["steps"] < 120, totals  # the checkpoints, and trio's own few steps around them
    assert totals["seconds"] > 0


def test_without_the_folder_nothing_is_counted(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(FOLDER)}
    env.pop("BENCH_TASK_STEPS", None)
    done = subprocess.run([sys.executable, "-c", "import trio, sitecustomize; assert trio.run.__module__.startswith('trio'), trio.run"], env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
