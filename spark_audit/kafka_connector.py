"""The jars of Spark's Kafka source (spark-sql-kafka-0-10), fetched from Maven Central with Maven, once.

The jars go to ``~/.cache/kafka-envelope-proxy/spark-kafka-<spark version>/``
(spark_audit/maven.py says why Maven and where the cache is) and are handed to Spark as
``spark.jars``. Jars Spark already ships (Scala, compression codecs, ...) are
left out so that Spark's own versions stay the only ones on the classpath.

Maven Central may not (yet) hold the connector for the installed Spark
version, or only part of it (the connector and its token-provider jar are
separate artifacts). Each artifact is then taken at the newest earlier
``<major>.<minor>.0`` that Central has, and the choice is printed;
``SPARK_AUDIT_KAFKA_CONNECTOR_VERSION`` forces a version.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark

from spark_audit import maven

GROUP = "org.apache.spark"
CONNECTOR = "spark-sql-kafka-0-10"
TOKEN_PROVIDER = "spark-token-provider-kafka-0-10"
VERSION_ENV = "SPARK_AUDIT_KAFKA_CONNECTOR_VERSION"


class KafkaConnectorError(maven.MavenError):
    """The connector jars cannot be found or fetched; the message says what to do."""


def spark_jars_dir() -> Path:
    return Path(pyspark.__file__).resolve().parent / "jars"


def scala_binary_version(jars: Path | None = None) -> str:
    """``2.13`` for the Scala library Spark ships."""
    for jar in sorted((jars or spark_jars_dir()).glob("scala-library-*.jar")):
        match = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if match:
            return match.group(1)
    raise KafkaConnectorError(f"no scala-library jar in {jars or spark_jars_dir()}: cannot tell which connector build fits")


def candidate_versions(version: str) -> list[str]:
    """``version``, then its earlier patches, then each earlier minor's ``.0`` (newest first)."""
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if not match:
        return [version]
    major, minor, patch = (int(part) for part in match.groups())
    versions = [version] + [f"{major}.{minor}.{p}" for p in range(patch - 1, -1, -1)]
    versions += [f"{major}.{m}.0" for m in range(minor - 1, -1, -1)]
    return list(dict.fromkeys(versions))


def _artifact_name(jar: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients``."""
    return re.sub(r"-\d[\w.+-]*\.jar$", "", jar)


def _mvn(*args: str, settings: Path) -> subprocess.CompletedProcess[str]:
    try:
        return maven.run(*args, settings=settings, needed_for="fetch Spark's Kafka connector (or pass --kafka-jars DIR)")
    except maven.MavenError as exc:
        raise KafkaConnectorError(str(exc)) from exc


def _available(artifact: str, versions: list[str], settings: Path) -> str:
    for version in versions:
        if _mvn("dependency:get", f"-Dartifact={GROUP}:{artifact}:{version}:pom", "-Dtransitive=false", settings=settings).returncode == 0:
            return version
    raise KafkaConnectorError(f"none of {GROUP}:{artifact} {', '.join(versions)} is on Maven Central")


def _pom(scala: str, connector: str, token_provider: str) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.spark-audit</groupId>
  <artifactId>spark-kafka-connector</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>{GROUP}</groupId>
      <artifactId>{CONNECTOR}_{scala}</artifactId>
      <version>{connector}</version>
      <exclusions>
        <exclusion><groupId>{GROUP}</groupId><artifactId>{TOKEN_PROVIDER}_{scala}</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>{GROUP}</groupId>
      <artifactId>{TOKEN_PROVIDER}_{scala}</artifactId>
      <version>{token_provider}</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
"""


def ensure_kafka_connector(spark_version: str | None = None) -> list[Path]:
    """The jars to put on ``spark.jars`` for ``format("kafka")``, fetching them the first time."""
    version = spark_version or os.environ.get(VERSION_ENV) or pyspark.__version__
    scala = scala_binary_version()
    directory = maven.cache_root() / f"spark-kafka-{version}_{scala}"
    return maven.cached(directory, ".spark-kafka.lock", lambda scratch: _fetch(scratch, directory, version, scala))


def _fetch(scratch: Path, directory: Path, version: str, scala: str) -> list[Path]:
    settings = scratch / "settings.xml"
    settings.write_text(maven.SETTINGS)
    versions = candidate_versions(version)
    connector = _available(f"{CONNECTOR}_{scala}", versions, settings)
    token_provider = _available(f"{TOKEN_PROVIDER}_{scala}", versions, settings)
    if (connector, token_provider) != (version, version):
        print(
            f"spark_audit: Maven Central has no {CONNECTOR} {version}; using {CONNECTOR} {connector} and {TOKEN_PROVIDER} {token_provider}",
            file=sys.stderr,
        )
    pom = scratch / "pom.xml"
    pom.write_text(_pom(scala, connector, token_provider))
    out = scratch / "jars"
    result = _mvn(
        "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={out}", settings=settings
    )
    fetched = sorted(path.name for path in out.glob("*.jar"))
    if result.returncode != 0 or not any(name.startswith(f"{CONNECTOR}_") for name in fetched):
        output = (result.stdout + result.stderr).strip()[-3000:]
        raise KafkaConnectorError(
            f"could not fetch {CONNECTOR} {connector} from Maven Central (mvn exit {result.returncode}):\n{output}"
        )
    shipped = {_artifact_name(jar.name) for jar in spark_jars_dir().glob("*.jar")}
    keep = [name for name in fetched if _artifact_name(name) not in shipped]
    for name in fetched:
        if name not in keep:
            (out / name).unlink()
    return maven.publish(out, directory, keep, spark=version, connector=connector, tokenProvider=token_provider, scala=scala)


def connector_jars(jars_dir: str | None) -> list[str]:
    """``--kafka-jars DIR``'s jars, or the cached/fetched connector."""
    if jars_dir:
        found = sorted(str(path) for path in Path(jars_dir).glob("*.jar"))
        if not found:
            raise KafkaConnectorError(f"no jars in {jars_dir}")
        return found
    return [str(path) for path in ensure_kafka_connector()]
