"""The client matrix's Go and Node clients, made once per machine like the Kafka jars: `make client-matrix-tools`.

Under the cache of devkit/kafka_node.py (`KAFKA_ENVELOPE_PROXY_CACHE` or `XDG_CACHE_HOME` move it), in
`client-matrix/`: the Go program built from tests/interop/client_matrix/kadm (go.mod and go.sum pin franz-go),
and kafkajs installed with `npm ci` from tests/interop/client_matrix/kafkajs/package-lock.json. A folder named by
the digest of its inputs (and of the toolchain's version) is renamed into place under a file lock when complete,
so a change to the sources makes a new one and concurrent runs build it once.

    python -m devkit.client_tools     # what `make client-matrix-tools` runs: prints both paths
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

from devkit.tooling import ToolingMissing, report_made
from spark_audit.maven import cache_root

SOURCES = Path(__file__).resolve().parents[1] / "tests" / "interop" / "client_matrix"
KADM = SOURCES / "kadm"
KADM_INPUTS = ("go.mod", "go.sum", "main.go")
KAFKAJS = SOURCES / "kafkajs"
KAFKAJS_INPUTS = ("package.json", "package-lock.json")
BUILD_TIMEOUT = 900.0


def _go() -> str:
    found = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
    if found is None:
        raise ToolingMissing("go not found: the client matrix builds its franz-go (kadm) client with Go 1.22+")
    return found


def tool(name: str, why: str) -> str:
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
    target = cache_root() / "client-matrix" / f"kadm-{_digest(KADM, KADM_INPUTS, _version([go, 'version']))}"

    def build(scratch: Path) -> None:
        env = {**os.environ, "GOFLAGS": "-mod=readonly", "GOWORK": "off", "CGO_ENABLED": "0"}
        _run_build([go, "build", "-trimpath", "-o", str(scratch / "kadm-workflow"), "."], KADM, "go build of the kadm client", env)

    return _made_once(target, build) / "kadm-workflow"


@cache
def kafkajs_modules() -> Path:
    """node_modules holding the pinned kafkajs, installed on first use (`npm ci`, a few seconds)."""
    node = tool("node", "the client matrix runs its kafkajs client with Node.js 14+")
    npm = tool("npm", "the client matrix installs kafkajs with npm")
    target = cache_root() / "client-matrix" / f"kafkajs-{_digest(KAFKAJS, KAFKAJS_INPUTS, _version([node, '--version']))}"

    def install(scratch: Path) -> None:
        for name in KAFKAJS_INPUTS:
            shutil.copy(KAFKAJS / name, scratch / name)
        _run_build([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], scratch, "npm ci of kafkajs")

    return _made_once(target, install) / "node_modules"


def main() -> int:
    return report_made("client matrix tools", kadm_program, kafkajs_modules)


if __name__ == "__main__":
    sys.exit(main())
