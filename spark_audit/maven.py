"""Jars the job fetches from Maven Central with Maven, once, into the project's cache.

Spark's ``--packages`` resolves through Ivy, which does not read Maven's settings
(mirrors, proxies); Maven does. Jars go under ``~/.cache/kafka-envelope-proxy/``
(override the root with ``KAFKA_ENVELOPE_PROXY_CACHE``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT = 900.0
MARKER = ".complete.json"

# Only Maven Central: Spark's poms name other repositories, unreachable where only Central is.
SETTINGS = """<settings>
  <mirrors>
    <mirror>
      <id>central-for-everything</id>
      <mirrorOf>*,!central</mirrorOf>
      <url>https://repo.maven.apache.org/maven2</url>
    </mirror>
  </mirrors>
</settings>
"""


class MavenError(RuntimeError):
    """Maven is missing, did not finish, or could not fetch an artifact; the message says which."""


def cache_root() -> Path:
    override = os.environ.get("KAFKA_ENVELOPE_PROXY_CACHE")
    if override:
        return Path(override)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-envelope-proxy"


def file_identity(path: Path | str) -> str:
    """A file as a cache key sees it: its path, size and modification time (a file replaced in place is another)."""
    try:
        stat = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def _mvn(needed_for: str) -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenError(f"mvn not found: Maven is needed once to {needed_for}")
    return mvn


def run(*args: str, settings: Path, needed_for: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``mvn -q -B -gs settings args...`` in the settings' folder (a pom.xml where the user runs the job is not read);
    ``needed_for`` completes "Maven is needed once to ..." when it is missing."""
    command = [_mvn(needed_for), "-q", "-B", "-Dstyle.color=never", "-gs", str(settings), *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, cwd=settings.parent)
    except subprocess.TimeoutExpired as exc:
        raise MavenError(f"maven did not finish within {timeout:.0f}s: {' '.join(command)}") from exc


def complete(directory: Path) -> list[Path] | None:
    """The jars a finished fetch left in ``directory`` (its marker names them), or None."""
    marker = read_marker(directory)
    jars = [directory / str(name) for name in marker.get("jars", [])] if marker is not None else []
    return jars if jars and all(jar.is_file() for jar in jars) else None


def once(directory: Path, lock_name: str, done: Callable[[Path], T | None], fetch: Callable[[Path], T], *, before_writing: Callable[[], object] = lambda: None) -> T:
    """``done(directory)`` when it is not None; else ``fetch(scratch)``, under an exclusive lock.

    The lock (``lock_name`` beside ``directory``) makes concurrent processes fetch once: whoever waited
    looks again before fetching. ``scratch`` is a folder beside ``directory``, removed afterwards;
    ``fetch`` puts its result in place with :func:`publish`. ``before_writing`` runs before anything is
    written to the cache (a check that can raise).
    """
    found = done(directory)
    if found is not None:
        return found
    before_writing()
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / lock_name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = done(directory)
        if found is not None:
            return found
        scratch = Path(tempfile.mkdtemp(prefix=f"{directory.name}.partial-", dir=directory.parent))
        try:
            return fetch(scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def cached(directory: Path, lock_name: str, fetch: Callable[[Path], list[Path]], *, before_writing: Callable[[], object] = lambda: None) -> list[Path]:
    """The jars a finished fetch left in ``directory``; else ``fetch(scratch)``'s (see :func:`once`)."""
    return once(directory, lock_name, complete, fetch, before_writing=before_writing)


def read_marker(directory: Path) -> dict[str, Any] | None:
    """What :func:`publish` wrote about a finished fetch in ``directory``, or None."""
    try:
        marker = json.loads((directory / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def publish(fetched: Path, directory: Path, jars: list[str], **about: object) -> list[Path]:
    """Mark ``fetched`` complete and put it in place of ``directory`` (a rename: readers see all of it or none)."""
    (fetched / MARKER).write_text(json.dumps({**about, "jars": jars}, indent=1) + "\n")
    if directory.exists():
        shutil.rmtree(directory)
    fetched.rename(directory)
    return [directory / name for name in jars]


def ensure_jar(group: str, artifact: str, version: str, *, needed_for: str, timeout: float = TIMEOUT) -> Path:
    """One jar (no dependencies) from Maven Central, fetched the first time into ``<cache>/<artifact>-<version>/``.

    Raises MavenError when Maven is missing or fails, OSError when the cache cannot be written."""
    directory = cache_root() / f"{artifact}-{version}"
    coordinates = f"{group}:{artifact}:{version}"
    name = f"{artifact}-{version}.jar"

    def fetch(scratch: Path) -> list[Path]:
        settings = scratch / "settings.xml"
        settings.write_text(SETTINGS)
        out = scratch / "jars"
        result = run(
            "dependency:copy", f"-Dartifact={coordinates}", f"-DoutputDirectory={out}", settings=settings, needed_for=needed_for, timeout=timeout
        )
        if result.returncode != 0 or not (out / name).is_file():
            output = (result.stdout + result.stderr).strip()[-2000:]
            raise MavenError(f"could not fetch {coordinates} from Maven Central (mvn exit {result.returncode})\n{output}")
        return publish(out, directory, [name], artifact=coordinates)

    return cached(directory, f".{artifact}.lock", fetch, before_writing=lambda: _mvn(needed_for))[0]
