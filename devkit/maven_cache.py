"""Maven runs for what the tests fetch from Maven Central: Kafka's jars (kafka_jars.py) and Keycloak's
distribution (tests/interop/keycloak.py).

The cache they land in is the Spark job's (`spark_audit.maven`: one root, one lock-scratch-rename, one
marker); this adds the pom-driven Maven run and the pom's digest that a marker carries, so a changed pom
makes a cached folder stale.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path

MAVEN_TIMEOUT = 1800.0
_OUTPUT_TAIL = 4000


def pom_digest(pom: Path) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def run_maven(mvn: str, pom: Path, properties: Mapping[str, str], goal: str, output: Path, error: type[Exception]) -> subprocess.CompletedProcess[str]:
    """`mvn <goal>` on `pom` into `output`, quiet and in batch mode; `error` is raised when it does not finish."""
    command = [mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(pom), *(f"-D{key}={value}" for key, value in properties.items()), goal, f"-DoutputDirectory={output}"]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise error(f"maven did not finish within {MAVEN_TIMEOUT:.0f}s: {' '.join(command)}") from exc


def maven_failure(result: subprocess.CompletedProcess[str], what: str) -> str:
    """The message when Maven did not give `what`: its exit status, command line and the end of its output."""
    output = (result.stdout + result.stderr).strip()[-_OUTPUT_TAIL:]
    return f"could not fetch {what} from Maven Central (mvn exit {result.returncode}):\n  {' '.join(map(str, result.args))}\n{output}"
