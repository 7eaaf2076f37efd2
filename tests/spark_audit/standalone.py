"""A Spark standalone master and worker on loopback, from pyspark's own bin/spark-class."""

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

SPARK_HOME = Path(pyspark.__file__).resolve().parent
STARTUP_TIMEOUT = 120.0


class ClusterError(RuntimeError):
    """The master or worker did not come up; the message carries the end of its log."""


@dataclass(frozen=True)
class Cluster:
    master_url: str
    worker_dir: Path
    env: dict[str, str]


def spark_env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}


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
def standalone_cluster(workdir: Path, *, cores: int = 1, memory: str = "1g") -> Iterator[Cluster]:
    """A master and one worker on 127.0.0.1 (ports picked by the JVMs), stopped on exit whatever happens."""
    env = spark_env()
    worker_dir = workdir / "worker"
    worker_dir.mkdir(parents=True, exist_ok=True)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        master_log = workdir / "master.log"
        master = _start(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"], master_log, env
        )
        processes.append(master)
        url = _wait_for(master, master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        _wait_for(master, master_log, r"I have been elected leader")
        worker_log = workdir / "worker.log"
        worker_args = [
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--webui-port",
            "0",
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--work-dir",
            str(worker_dir),
        ]
        worker = _start(["org.apache.spark.deploy.worker.Worker", url, *worker_args], worker_log, env)
        processes.append(worker)
        _wait_for(worker, worker_log, r"Successfully registered with master")
        yield Cluster(url, worker_dir, env)
    finally:
        for process in reversed(processes):
            _stop(process)
