"""bench/audit/measure.py sums a process tree's memory: a JVM's child that has not exec'ed yet shares the JVM's memory."""

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

MEASURE = Path(__file__).resolve().parents[2] / "bench" / "audit" / "measure.py"
BALLAST_MB = 200
# The parent fills its memory, forks a child that does not exec (so it keeps the parent's command line and, until it
# writes, the parent's pages), then both wait to be measured.
PROGRAM = f"""
import os, sys, time
ballast = bytearray({BALLAST_MB} * 1024 * 1024)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
print(child, flush=True)
time.sleep(30)
"""


def _measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("audit_measure", MEASURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["audit_measure"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _tree_rss_mb(program_name: str, directory: Path) -> tuple[float, float]:
    """The tree's resident MB, each memory once and the plain sum, for the same program started under `program_name`
    (a link to this Python)."""
    link = directory / program_name
    link.symlink_to(sys.executable)
    with subprocess.Popen([str(link), "-c", PROGRAM], stdout=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout is not None
            child = int(parent.stdout.readline())
            deadline = time.monotonic() + 30
            while not Path(f"/proc/{child}").exists():
                assert time.monotonic() < deadline
                time.sleep(0.05)
            once, plain = _measure().tree_rss_both(parent.pid)
            return once / 2**20, plain / 2**20
        finally:
            parent.kill()


def test_a_jvm_copy_that_has_not_exec_ed_is_counted_once(tmp_path: Path) -> None:
    as_jvm, plain = _tree_rss_mb("java", tmp_path)
    assert BALLAST_MB <= as_jvm < 1.5 * BALLAST_MB, as_jvm
    # The plain sum, as a sampler that knows nothing of posix_spawn takes it, counts the copy too.
    assert plain >= 2 * BALLAST_MB, plain


def test_children_of_anything_else_are_counted(tmp_path: Path) -> None:
    # Python workers forked by pyspark's daemon are real processes: each one's memory counts.
    as_python, _ = _tree_rss_mb("python-daemon", tmp_path)
    assert as_python >= 2 * BALLAST_MB, as_python


def test_the_link_keeps_the_name_it_was_started_under(tmp_path: Path) -> None:
    link = tmp_path / "java"
    link.symlink_to(sys.executable)
    with subprocess.Popen([str(link), "-c", "import time; time.sleep(30)"]) as process:
        try:
            time.sleep(0.2)
            assert (Path("/proc") / str(process.pid) / "cmdline").read_bytes().split(b"\0")[0] == os.fsencode(link)
        finally:
            process.kill()
