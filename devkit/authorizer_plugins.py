"""Authorizer plug-ins for a Kafka node, fetched or built once into the project's cache: the Open Policy Agent
plug-in's jars (Maven Central), the OPA server (built from its Go module), a plug-in compiled from Java sources,
and a node classpath that adds any of them to Kafka's jars.

Each cached folder is written the one way the cache is written (`spark_audit.maven.once` and `publish`: a lock, a
scratch folder, a rename, a marker), so concurrent test processes build it once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from devkit.maven_cache import maven_failure, pom_digest, run_maven
from devkit.tooling import ToolingMissing, report_made
from spark_audit.maven import cache_root, once, publish, read_marker

OPA_POM = Path(__file__).resolve().parent / "opa" / "pom.xml"
OPA_MODULE = "github.com/open-policy-agent/opa"
OPA_VERSION = "v1.22.3"
GO_BUILD_TIMEOUT = 900.0
JAVAC_TIMEOUT = 300.0
JAVA_RELEASE = "17"
"""The bytecode level of compiled plug-ins: Kafka 4.x brokers run on Java 17+."""


def _complete(folder: Path, about: dict[str, str]) -> list[Path] | None:
    marker = read_marker(folder)
    if marker is None or any(marker.get(key) != value for key, value in about.items()):
        return None
    names = marker.get("jars")
    if not isinstance(names, list) or not all((folder / str(name)).is_file() for name in names):
        return None
    return [folder / str(name) for name in names]


def opa_plugin_jars() -> list[Path]:
    """opa-authorizer 1.5.1 and the jars it needs beside Kafka 4.3.1's (devkit/opa/pom.xml says which and why)."""
    folder = cache_root() / "opa-authorizer-1.5.1"
    about = {"pom_sha256": pom_digest(OPA_POM)}
    mvn = shutil.which("mvn")

    def fetch(scratch: Path) -> list[Path]:
        if mvn is None:
            raise ToolingMissing("mvn not found: Maven is needed once to fetch the OPA plug-in from Maven Central")
        started = time.monotonic()
        result = run_maven(mvn, OPA_POM, {}, "dependency:copy-dependencies", scratch, ToolingMissing)
        jars = sorted(path.name for path in scratch.glob("*.jar"))
        if result.returncode != 0 or not any(name.startswith("opa-authorizer-") for name in jars):
            raise ToolingMissing(maven_failure(result, "the OPA authorizer plug-in"))
        return publish(scratch, folder, jars, seconds=round(time.monotonic() - started, 1), **about)

    return once(folder, ".lock", lambda found: _complete(found, about), fetch)


def opa_server() -> Path:
    """The `opa` executable of OPA_VERSION, built with `go install` the first time (about 2 minutes)."""
    folder = cache_root() / f"opa-{OPA_VERSION}"
    about = {"module": f"{OPA_MODULE}@{OPA_VERSION}"}
    go = shutil.which("go")

    def build(scratch: Path) -> list[Path]:
        if go is None:
            raise ToolingMissing(f"go not found: the OPA server is built from {OPA_MODULE}@{OPA_VERSION}")
        env = {**os.environ, "GOBIN": str(scratch), "CGO_ENABLED": "0"}
        try:
            done = subprocess.run(
                [go, "install", f"{OPA_MODULE}@{OPA_VERSION}"], env=env, capture_output=True, text=True, timeout=GO_BUILD_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ToolingMissing(f"go install {OPA_MODULE}@{OPA_VERSION} did not finish in {GO_BUILD_TIMEOUT:.0f} s") from exc
        if done.returncode != 0 or not (scratch / "opa").is_file():
            raise ToolingMissing(f"go install {OPA_MODULE}@{OPA_VERSION} failed: {done.stderr[-3000:]}")
        return publish(scratch, folder, ["opa"], **about)

    (binary,) = once(folder, ".lock", lambda found: _complete(found, about), build)
    return binary


def compiled_plugin(name: str, sources: Sequence[Path], kafka_lib: Path) -> Path:
    """A jar of `sources` compiled with javac (--release 17) against Kafka's jars; cached by the sources' digest."""
    digest = hashlib.sha256(b"".join(source.read_bytes() for source in sources)).hexdigest()[:16]
    folder = cache_root() / f"{name}-{digest}"
    about = {"sources_sha256": digest}
    javac = shutil.which("javac")
    jar = f"{name}.jar"

    def build(scratch: Path) -> list[Path]:
        if javac is None:
            raise ToolingMissing(f"javac not found: the {name} plug-in is compiled from Java {JAVA_RELEASE} sources")
        classes = scratch / "classes"
        command = [javac, "--release", JAVA_RELEASE, "-nowarn", "-cp", f"{kafka_lib}/*", "-d", str(classes), *map(str, sources)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=JAVAC_TIMEOUT, check=False)
        if done.returncode != 0:
            raise ToolingMissing(f"javac failed for {name}: {done.stderr[-3000:]}")
        with zipfile.ZipFile(scratch / jar, "w") as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        shutil.rmtree(classes)
        return publish(scratch, folder, [jar], **about)

    (built,) = once(folder, ".lock", lambda found: _complete(found, about), build)
    return built


def node_lib_with(kafka_lib: Path, plugins: Sequence[Path], folder: Path) -> Path:
    """`folder` holding links to Kafka's jars and to `plugins`: a KafkaNode `lib_dir` whose classpath has both."""
    folder.mkdir(parents=True, exist_ok=True)
    for jar in [*kafka_lib.glob("*.jar"), *plugins]:
        link = folder / jar.name
        if not link.exists():
            link.symlink_to(jar)
    return folder


def main() -> int:
    """`make authorizer-tools`: the OPA server built and the OPA plug-in's jars fetched into the cache before the tests,
    beside the pip install rather than inside the interop tier."""
    return report_made("authorizer tools", opa_server, opa_plugin_jars)


if __name__ == "__main__":
    sys.exit(main())
