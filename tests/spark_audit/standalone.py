"""A Spark standalone master and workers on loopback, from pyspark's own bin/spark-class."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark

from spark_audit.session import JVM_OPTIONS, QUICK_COMPILER_ONLY

SPARK_HOME = Path(pyspark.__file__).resolve().parent
STARTUP_TIMEOUT = 120.0
#: heap of the master's and each worker's own JVM: they only keep the cluster's books
DAEMON_MEMORY = "256m"
#: Every JVM of a test cluster (the daemons, a driver, the executors) lives for one short run: the quick
#: compiler alone, and the job's own bounds on threads and memory (spark_audit/session.py). The optimizing
#: compiler's work would not pay back within the run, and on two cores it competes with it for CPU.
SHORT_LIVED_JVM = " ".join([*JVM_OPTIONS, QUICK_COMPILER_ONLY])
#: what an executor logs as it starts each task (its stderr in the worker's work dir)
TASK_STARTED = re.compile(r"Running task \S+ in stage \S+ \(TID \d+\)")


class ClusterError(RuntimeError):
    """The master or a worker did not come up; the message carries the end of its log."""


@dataclass(frozen=True)
class Cluster:
    master_url: str
    #: each worker's --work-dir, where it keeps every executor's stdout and stderr
    worker_dirs: tuple[Path, ...]
    env: dict[str, str]
    master_log: Path


def spark_env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}


def tasks_started(worker_dir: Path) -> int:
    """How many tasks the executors this worker launched started, from their logs."""
    return sum(len(TASK_STARTED.findall(log.read_text(errors="replace"))) for log in worker_dir.glob("app-*/*/stderr"))


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        # own process group: the JVM and anything it forks are stopped together
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _wait_for(process: subprocess.Popen[bytes], log: Path, pattern: str) -> re.Match[str]:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        match = re.search(pattern, text)
        if match:
            return match
        if process.poll() is not None:
            break
        time.sleep(0.5)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    raise ClusterError(f"{pattern!r} not seen in {log} (exit {process.poll()}):\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@contextlib.contextmanager
def standalone_cluster(workdir: Path, *, workers: int = 2, cores: int = 1, memory: str = "512m") -> Iterator[Cluster]:
    """A master and ``workers`` workers on 127.0.0.1 (ports picked by the JVMs), stopped on exit whatever happens.

    Each worker offers ``cores`` cores and ``memory`` to executors.
    """
    env = spark_env()
    daemon_env = {**env, "SPARK_DAEMON_MEMORY": DAEMON_MEMORY, "SPARK_DAEMON_JAVA_OPTS": SHORT_LIVED_JVM}
    workdir.mkdir(parents=True, exist_ok=True)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        master_log = workdir / "master.log"
        master = _start(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
            master_log,
            daemon_env,
        )
        processes.append(master)
        url = _wait_for(master, master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        _wait_for(master, master_log, r"I have been elected leader")
        started: list[tuple[subprocess.Popen[bytes], Path]] = []
        worker_dirs = []
        for n in range(1, workers + 1):
            worker_dir = workdir / f"worker-{n}"
            worker_dir.mkdir(parents=True, exist_ok=True)
            worker_args = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", str(cores), "--memory", memory]
            log = workdir / f"worker-{n}.log"
            worker = _start(["org.apache.spark.deploy.worker.Worker", url, *worker_args, "--work-dir", str(worker_dir)], log, daemon_env)
            processes.append(worker)
            started.append((worker, log))
            worker_dirs.append(worker_dir)
        # the workers' JVMs start side by side; each must be known to the master before anything is submitted
        for worker, log in started:
            _wait_for(worker, log, r"Successfully registered with master")
        yield Cluster(url, tuple(worker_dirs), env, master_log)
    finally:
        for process in reversed(processes):
            _stop(process)
