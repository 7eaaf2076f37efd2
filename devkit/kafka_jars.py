"""Kafka's jars from Maven Central in a per-version cache, found java, and the java command line that runs them.

Nothing from Kafka is committed: `ensure_kafka_jars()` asks Maven to copy the
jars named by `devkit/kafka/pom.xml` (kafka_2.13, kafka-tools, a log4j2
binding) from Maven Central into a per-version cache folder, once; a marker
file says the folder is complete. `kafka_jvm` is the command line every Kafka
JVM here starts with: a node (kafka_node.py), the sidecar's controller,
Kafka's own tools.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

KAFKA_VERSION = os.environ.get("KAFKA_NODE_VERSION", "4.3.1")
"""Newest 4.x whose kafka_2.13 *and* kafka-tools artifacts are on Maven Central (4.4.0 lacks kafka-tools/kafka-tools-api)."""

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"

_MARKER = ".complete.json"
_MAVEN_TIMEOUT = 1800.0


class KafkaToolingMissing(RuntimeError):
    """java or mvn is not installed, so no real Kafka node can be built or run."""


class KafkaNodeError(RuntimeError):
    """The node could not be formatted, started or reached; the message carries the end of its log."""


def missing_tools() -> list[str]:
    """Names of the required executables (java, mvn) that are not available."""
    missing = []
    if find_java() is None:
        missing.append("java")
    if shutil.which("mvn") is None:
        missing.append("mvn")
    return missing


def find_java() -> str | None:
    """The java of JAVA_HOME, else the one on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def _require_java() -> str:
    java = find_java()
    if java is None:
        raise KafkaToolingMissing("java not found (set JAVA_HOME or put java on PATH): a Kafka 4.x node needs Java 17+")
    return java


def cache_root() -> Path:
    override = os.environ.get("KAFKA_ENVELOPE_PROXY_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-envelope-proxy"


def kafka_lib_dir(version: str = KAFKA_VERSION) -> Path:
    """Where the jars for `version` live: ~/.cache/kafka-envelope-proxy/kafka-<version>/lib."""
    return cache_root() / f"kafka-{version}" / "lib"


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def _is_complete(lib: Path, version: str) -> bool:
    try:
        marker = json.loads((lib / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("version") != version or marker.get("pom_sha256") != _pom_digest():
        return False
    jars = marker.get("jars")
    return isinstance(jars, list) and bool(jars) and all((lib / str(name)).is_file() for name in jars)


def ensure_kafka_jars(version: str = KAFKA_VERSION) -> Path:
    """Return a folder holding every jar a Kafka `version` node and its tools need, running Maven the first time.

    Idempotent and safe to call from concurrent processes: the copy goes to a
    scratch folder that is renamed into place under a file lock, and a marker
    (version, pom hash, jar names) decides whether the folder is complete.
    """
    lib = kafka_lib_dir(version)
    if _is_complete(lib, version):
        return lib
    _require_java()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaToolingMissing("mvn not found: Maven 3.8+ is needed once to fetch the Kafka jars from Maven Central")
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(lib, version):
            return lib
        scratch = Path(tempfile.mkdtemp(prefix="lib.partial-", dir=lib.parent))
        try:
            command = [
                mvn,
                "-q",
                "-B",
                "-Dstyle.color=never",
                "-f",
                str(POM),
                f"-Dkafka.version={version}",
                "dependency:copy-dependencies",
                f"-DoutputDirectory={scratch}",
            ]
            started = time.monotonic()
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=_MAVEN_TIMEOUT, check=False)
            except subprocess.TimeoutExpired as exc:
                raise KafkaNodeError(f"maven did not finish within {_MAVEN_TIMEOUT:.0f}s: {' '.join(command)}") from exc
            jars = sorted(path.name for path in scratch.glob("*.jar"))
            if result.returncode != 0 or not any(name.startswith(f"kafka_2.13-{version}") for name in jars):
                output = (result.stdout + result.stderr).strip()[-4000:]
                raise KafkaNodeError(
                    f"could not fetch Kafka {version} from Maven Central (mvn exit {result.returncode}):\n  {' '.join(command)}\n{output}"
                )
            marker = {"version": version, "pom_sha256": _pom_digest(), "jars": jars, "seconds": round(time.monotonic() - started, 1)}
            (scratch / _MARKER).write_text(json.dumps(marker, indent=1) + "\n")
            if lib.exists():
                shutil.rmtree(lib)
            scratch.rename(lib)
        finally:
            if scratch.exists():
                shutil.rmtree(scratch, ignore_errors=True)
    return lib


def kafka_jvm(lib: Path, workdir: Path, *, heap: str = "384m", options: tuple[str, ...] = (), log4j: Path | None = None) -> list[str]:
    """The java command line every Kafka JVM here starts with (a node, the sidecar's controller, Kafka's tools): a
    small serial-GC heap, headless, logs under `workdir`, the jars of `lib`; a main class and its arguments follow."""
    logging = [f"-Dlog4j2.configurationFile={log4j}"] if log4j is not None else []
    return [
        _require_java(),
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        *options,
        "-Djava.awt.headless=true",
        *logging,
        f"-Dkafka.logs.dir={workdir}",
        "-cp",
        f"{lib}/*",
    ]
