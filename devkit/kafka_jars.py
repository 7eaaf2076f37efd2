"""Kafka's jars from Maven Central in a per-version cache, found java, and the java command line that runs them.

Nothing from Kafka is committed: `ensure_kafka_jars()` asks Maven to copy the
jars named by `devkit/kafka/pom.xml` (kafka_2.13, kafka-tools, a log4j2
binding) from Maven Central into a per-version cache folder, once; a marker
file says the folder is complete. `kafka_jvm` is the command line every Kafka
JVM here starts with: a node (kafka_node.py), the sidecar's controller,
Kafka's own tools.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from functools import cache
from pathlib import Path

from devkit.maven_cache import maven_failure, pom_digest, run_maven
from devkit.tooling import ToolingMissing
from spark_audit.maven import cache_root, file_identity, once, publish, read_marker

KAFKA_VERSION = os.environ.get("KAFKA_NODE_VERSION", "4.3.1")
"""Newest 4.x whose kafka_2.13 *and* kafka-tools artifacts are on Maven Central (4.4.0 lacks kafka-tools/kafka-tools-api)."""

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"



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
        raise ToolingMissing("java not found (set JAVA_HOME or put java on PATH): a Kafka 4.x node needs Java 17+")
    return java


def kafka_lib_dir(version: str = KAFKA_VERSION) -> Path:
    """Where the jars for `version` live: ~/.cache/kafka-envelope-proxy/kafka-<version>/lib."""
    return cache_root() / f"kafka-{version}" / "lib"


def _is_complete(lib: Path, version: str) -> bool:
    marker = read_marker(lib)
    if marker is None or marker.get("version") != version or marker.get("pom_sha256") != pom_digest(POM):
        return False
    jars = marker.get("jars")
    return isinstance(jars, list) and bool(jars) and all((lib / str(name)).is_file() for name in jars)


def ensure_kafka_jars(version: str = KAFKA_VERSION) -> Path:
    """Return a folder holding every jar a Kafka `version` node and its tools need, running Maven the first time.

    Idempotent and safe to call from concurrent processes (`spark_audit.maven.once`); the marker (version, pom
    hash, jar names) decides whether the folder is complete.
    """
    lib = kafka_lib_dir(version)
    if _is_complete(lib, version):
        return lib
    _require_java()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolingMissing("mvn not found: Maven 3.8+ is needed once to fetch the Kafka jars from Maven Central")

    def fetch(scratch: Path) -> Path:
        started = time.monotonic()
        result = run_maven(mvn, POM, {"kafka.version": version}, "dependency:copy-dependencies", scratch, KafkaNodeError)
        jars = sorted(path.name for path in scratch.glob("*.jar"))
        if result.returncode != 0 or not any(name.startswith(f"kafka_2.13-{version}") for name in jars):
            raise KafkaNodeError(maven_failure(result, f"Kafka {version}"))
        publish(scratch, lib, jars, version=version, pom_sha256=pom_digest(POM), seconds=round(time.monotonic() - started, 1))
        return lib

    return once(lib, ".lock", lambda folder: folder if _is_complete(folder, version) else None, fetch)


#: C1 alone: a JVM that lives for one test compiles far less than with both compilers (a node's start and a few
#: calls: 3.4 against 5.5 CPU-s; tests/interop/test_kafka_tools.py 0.78 x its CPU). The forwarding bench's broker
#: keeps both: its steady throughput is what it measures.
QUICK_COMPILER = "-XX:TieredStopAtLevel=1"


#: The name of the class-data-sharing archive in its folder (devkit/kafka_class_archive.py makes it).
CLASS_ARCHIVE = "kafka.jsa"
#: The JVM's messages about class-data sharing: an archive that does not fit (another JDK, changed jars) is simply not
#: used, and its warning would land in a tool's standard output, which tests read.
CLASS_ARCHIVE_QUIET = "-Xlog:cds*=off"


def class_archive_folder(lib: Path, java: str) -> Path:
    """Where the class archive of JVMs running `java` on the jars of `lib` lives: a folder named by the Java runtime and
    every jar's path, size and modification time (the archive holds the class path it was dumped with), so an upgraded
    JDK, a changed jar or the same jars elsewhere make another."""
    runtime = Path(os.path.realpath(java)).parents[1] / "lib" / "server" / "libjvm.so"
    parts = [os.path.realpath(java), file_identity(runtime), *map(file_identity, sorted(lib.absolute().glob("*.jar")))]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]
    return cache_root() / f"kafka-class-archive-{key}"


@cache
def _class_archive_options(classpath: str, java: str) -> tuple[str, ...]:
    """The options that map the class archive made for this class path, where there is one: a class path that starts
    with Kafka's jars (`<lib>/*`, the one the archive was dumped with; Java maps an archive only where its class path
    is a prefix of the JVM's, so a compiled client puts its own classes after them)."""
    first = classpath.split(os.pathsep, 1)[0]
    if not first.endswith("/*"):
        return ()
    archive = class_archive_folder(Path(first[:-2]), java) / CLASS_ARCHIVE
    return (f"-XX:SharedArchiveFile={archive}", CLASS_ARCHIVE_QUIET) if archive.is_file() else ()


def class_archive_options(lib: Path) -> tuple[str, ...]:
    """The JVM options that map the class archive of Kafka's jars in `lib` where one was made, else none: for JVMs
    started by other means than `java_command` (the deploy guide's own command lines, through `JDK_JAVA_OPTIONS`)."""
    return _class_archive_options(f"{lib}/*", _require_java())


def java_command(classpath: str, *, heap: str = "256m", options: tuple[str, ...] = (), quick: bool = True) -> list[str]:
    """The java command line of a JVM started here (a Kafka tool, a compiled client, a node through `kafka_jvm`): a
    small serial-GC heap, C1 alone unless `quick` is False, the class archive of Kafka's jars where the class path is
    theirs and `make test` made one (devkit/kafka_class_archive.py), `options`, then `classpath`; a main class and
    its arguments follow."""
    java = _require_java()
    sharing = _class_archive_options(classpath, java)
    return [java, f"-Xmx{heap}", "-XX:+UseSerialGC", *((QUICK_COMPILER,) if quick else ()), *sharing, *options, "-cp", classpath]


def kafka_jvm(
    lib: Path, workdir: Path, *, heap: str = "384m", options: tuple[str, ...] = (), log4j: Path | None = None, quick: bool = True
) -> list[str]:
    """The java command line every Kafka JVM here starts with (a node, the sidecar's controller): `java_command`'s,
    headless, logs under `workdir`, the jars of `lib`; a main class and its arguments follow."""
    logging = [f"-Dlog4j2.configurationFile={log4j}"] if log4j is not None else []
    return java_command(f"{lib}/*", heap=heap, options=(*options, "-Djava.awt.headless=true", *logging, f"-Dkafka.logs.dir={workdir}"), quick=quick)
