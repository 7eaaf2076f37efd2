"""The workflow in franz-go's kadm (Go) and in kafkajs (Node), each a program beside this file.

Both are made once per machine, like the Kafka jars, under ~/.cache/kafka-envelope-proxy/client-matrix
(`KAFKA_ENVELOPE_PROXY_CACHE` or `XDG_CACHE_HOME` move it): the Go program is built from `kadm/`
(go.mod and go.sum pin franz-go), and kafkajs is installed with `npm ci` from `kafkajs/package-lock.json`.
A folder named by the digest of its inputs (and of the toolchain's version) is renamed into place under a
file lock when complete, so a change to the sources makes a new one and concurrent runs build it once.

    python -m tests.interop.client_matrix.go_and_node     # what `make client-matrix-tools` runs

Each run prints one JSON object, step -> outcome, as its last line (the same arguments as AdminWorkflow.java).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from tests.interop.client_matrix.workflow import WorkflowSpec

HERE = Path(__file__).resolve().parent
KADM = HERE / "kadm"
KADM_INPUTS = ("go.mod", "go.sum", "main.go")
KAFKAJS = HERE / "kafkajs"
KAFKAJS_INPUTS = ("package.json", "package-lock.json")
BUILD_TIMEOUT = 900.0
RUN_TIMEOUT = 300.0


class ToolingMissing(RuntimeError):
    """go, node or npm is not installed, or the build or install failed; the message says which and how."""


class ClientRunFailed(AssertionError):
    """The client crashed, hung, or printed what the matrix cannot read; the message names it."""


def _cache_root() -> Path:
    """Beside the Kafka jars (devkit/kafka_node.py): the same variables move both."""
    override = os.environ.get("KAFKA_ENVELOPE_PROXY_CACHE")
    base = Path(override) if override else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-envelope-proxy"
    return base / "client-matrix"


def _go() -> str:
    found = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
    if found is None:
        raise ToolingMissing("go not found: the client matrix builds its franz-go (kadm) client with Go 1.22+")
    return found


def _tool(name: str, why: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolingMissing(f"{name} not found: {why}")
    return found


def _version(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout.strip()


def _digest(directory: Path, names: tuple[str, ...], toolchain: str) -> str:
    digest = hashlib.sha256(toolchain.encode())
    for name in names:
        digest.update(name.encode() + b"\0" + (directory / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _made_once(target: Path, make: Callable[[Path], None]) -> Path:
    """`target` (a folder), made by `make(scratch)` into a scratch folder renamed into place under a lock."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        scratch = Path(tempfile.mkdtemp(prefix=f"{target.name}.partial-", dir=target.parent))
        try:
            make(scratch)
            scratch.chmod(0o755)
            scratch.rename(target)
        finally:
            if scratch.exists():
                shutil.rmtree(scratch, ignore_errors=True)
    return target


def _run_build(command: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> None:
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False, env=env)
    except subprocess.TimeoutExpired as exc:
        raise ToolingMissing(f"{what} did not finish within {BUILD_TIMEOUT:.0f}s: {' '.join(command)}") from exc
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-4000:]
        raise ToolingMissing(f"{what} failed (exit {done.returncode}) after {time.monotonic() - started:.0f}s: {' '.join(command)}\n{output}")


@cache
def kadm_program() -> Path:
    """The built Go program, built on first use (about 30 s, and the franz-go modules from the Go module proxy)."""
    go = _go()
    target = _cache_root() / f"kadm-{_digest(KADM, KADM_INPUTS, _version([go, 'version']))}"

    def build(scratch: Path) -> None:
        env = {**os.environ, "GOFLAGS": "-mod=readonly", "GOWORK": "off", "CGO_ENABLED": "0"}
        _run_build([go, "build", "-trimpath", "-o", str(scratch / "kadm-workflow"), "."], KADM, "go build of the kadm client", env)

    return _made_once(target, build) / "kadm-workflow"


@cache
def kafkajs_modules() -> Path:
    """node_modules holding the pinned kafkajs, installed on first use (`npm ci`, a few seconds)."""
    node = _tool("node", "the client matrix runs its kafkajs client with Node.js 14+")
    npm = _tool("npm", "the client matrix installs kafkajs with npm")
    target = _cache_root() / f"kafkajs-{_digest(KAFKAJS, KAFKAJS_INPUTS, _version([node, '--version']))}"

    def install(scratch: Path) -> None:
        for name in KAFKAJS_INPUTS:
            shutil.copy(KAFKAJS / name, scratch / name)
        _run_build([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], scratch, "npm ci of kafkajs")

    return _made_once(target, install) / "node_modules"


def _workflow(command: list[str], spec: WorkflowSpec, name: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    args = [spec.bootstrap, *spec.admin, *spec.outsider, spec.topic, ",".join(spec.steps)]
    try:
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False, env=env)
    except subprocess.TimeoutExpired as exc:
        raise ClientRunFailed(f"{name} hung for {RUN_TIMEOUT:.0f}s") from exc
    if done.returncode != 0:
        raise ClientRunFailed(f"{name} exited with {done.returncode}: {done.stderr[-3000:]}")
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise ClientRunFailed(f"{name} printed nothing: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def kadm_workflow(spec: WorkflowSpec) -> dict[str, Any]:
    return _workflow([str(kadm_program())], spec, "franz-go's kadm")


def kafkajs_workflow(spec: WorkflowSpec) -> dict[str, Any]:
    node = _tool("node", "the client matrix runs its kafkajs client with Node.js 14+")
    env = {**os.environ, "NODE_PATH": str(kafkajs_modules())}
    return _workflow([node, str(KAFKAJS / "workflow.js")], spec, "kafkajs", env)


def main() -> int:
    try:
        print(kadm_program())
        print(kafkajs_modules())
    except ToolingMissing as exc:
        print(f"client matrix tools: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["ClientRunFailed", "ToolingMissing", "kadm_program", "kadm_workflow", "kafkajs_modules", "kafkajs_workflow"]
