"""The class-data-sharing archive of the Kafka JVMs the tests start: made once per machine (`make kafka-class-archive`), mapped
by every later JVM whose class path is Kafka's jars alone (devkit/kafka_jars.py `java_command`).

A Kafka tool's JVM spends most of its second loading, verifying and linking some 4,000 classes from Kafka's jars, and
a node's start some 7,000; the suite starts about a hundred such JVMs. Java 17 maps classes already parsed and
verified from an archive instead (measured: a TopicCommand --create 0.6 against 1.1 CPU-s, a node ready in about 1 s
against 2). The archive is static: the classes that a node, Kafka's tools (against it, over SASL/PLAIN) and the storage
format loaded, listed by each JVM (``-XX:DumpLoadedClassList``), merged and dumped with ``-Xshare:dump``; it is
checked with ``-Xshare:on`` (which refuses an archive it cannot use) before it is published. Java maps it in a JVM
whose class path starts with the jars it was dumped with (a compiled client's classes come after them) and skips it
silently where it does not fit (`CLASS_ARCHIVE_QUIET`).

    python -m devkit.kafka_class_archive     # what `make kafka-class-archive` runs: prints the archive
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from devkit.kafka_jars import CLASS_ARCHIVE, KafkaNodeError, class_archive_folder, ensure_kafka_jars, find_java, java_command
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import NODE_USER, plain_client_properties
from devkit.tooling import ToolingMissing, report_made
from spark_audit.maven import once, publish

TOOL_TIMEOUT = 120.0
DUMP_TIMEOUT = 300.0
LIST_SUFFIX = ".classlist"


def _tool_runs(node: KafkaNode, config: Path) -> list[tuple[str, list[str]]]:
    """Kafka's tools as the tests run them, each against `node` as its admin: a name and the class and arguments."""
    bootstrap = ["--bootstrap-server", node.broker_address, "--command-config", str(config)]
    return [
        ("topic-create", ["org.apache.kafka.tools.TopicCommand", *bootstrap, "--create", "--topic", "archive", "--partitions", "1"]),
        ("topic-describe", ["org.apache.kafka.tools.TopicCommand", *bootstrap, "--describe", "--topic", "archive"]),
        ("acl-add", ["org.apache.kafka.tools.AclCommand", *bootstrap, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "archive"]),
        ("acl-list", ["org.apache.kafka.tools.AclCommand", *bootstrap, "--list"]),
        ("configs", ["kafka.admin.ConfigCommand", *bootstrap, "--describe", "--entity-type", "topics", "--entity-name", "archive"]),
        ("quorum", ["org.apache.kafka.tools.MetadataQuorumCommand", *bootstrap, "describe", "--status"]),
        ("tokens", ["org.apache.kafka.tools.DelegationTokenCommand", *bootstrap, "--describe"]),
    ]


def _listed(classpath: str, name: str, lists: Path, main_and_arguments: list[str]) -> None:
    """Run one JVM on `classpath` that lists the classes it loaded in `lists`/`name`.classlist."""
    dump = f"-XX:DumpLoadedClassList={lists / name}{LIST_SUFFIX}"
    done = subprocess.run([*java_command(classpath, options=(dump,)), *main_and_arguments], capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=False)
    if done.returncode != 0:
        raise KafkaNodeError(f"{name} failed while listing classes (exit {done.returncode}): {done.stderr[-2000:]}")


def _make(java: str, lib: Path, folder: Path, scratch: Path) -> list[Path]:
    classpath = f"{lib}/*"
    lists = scratch / "lists"
    lists.mkdir()
    node = KafkaNode(lib_dir=lib, workdir=scratch / "node", jvm_options=(f"-XX:DumpLoadedClassList={lists / 'node'}{LIST_SUFFIX}",))
    with node:
        config = plain_client_properties(scratch / "admin.properties", NODE_USER, node.users[NODE_USER])
        for name, main_and_arguments in _tool_runs(node, config):
            _listed(classpath, name, lists, main_and_arguments)
    # the storage format every node's start runs first (on the stopped node's folder, which it leaves as it is)
    _listed(classpath, "format", lists, ["kafka.tools.StorageTool", "format", "-t", node.cluster_id, "-c", str(node.properties_path), "--ignore-formatted", "--standalone"])
    merged = scratch / f"merged{LIST_SUFFIX}"
    names = sorted({line for listed in lists.glob(f"*{LIST_SUFFIX}") for line in listed.read_text().splitlines() if line and not line.startswith("#")})
    merged.write_text("\n".join(names) + "\n")
    archive = scratch / CLASS_ARCHIVE
    steps = (
        [java, "-Xshare:dump", f"-XX:SharedClassListFile={merged}", f"-XX:SharedArchiveFile={archive}", "-cp", classpath],
        [java, "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-cp", classpath, "-version"],
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=DUMP_TIMEOUT, check=False)
        if done.returncode != 0:
            raise KafkaNodeError(f"the class archive could not be made (exit {done.returncode}): {' '.join(step)}\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
    for made in (lists, node.workdir):
        shutil.rmtree(made)
    for made in (config, merged):
        made.unlink()
    scratch.chmod(0o755)  # a JVM of any user may map it
    return publish(scratch, folder, [CLASS_ARCHIVE], classes=len(names))


def ensure_class_archive(lib: Path) -> Path:
    """The class archive of JVMs on Kafka's jars in `lib`, made the first time (about 20 s: a node, seven tool runs,
    the dump); concurrent callers make it once."""
    java = find_java()
    if java is None:
        raise ToolingMissing("java not found (set JAVA_HOME or put java on PATH): the class archive is dumped by Java 17+")
    folder = class_archive_folder(lib, java)
    (archive,) = once(folder, ".lock", lambda found: [found / CLASS_ARCHIVE] if (found / CLASS_ARCHIVE).is_file() else None, lambda scratch: _make(java, lib, folder, scratch))
    return archive


def main() -> int:
    """`make kafka-class-archive`: Kafka's jars fetched and their class archive made, before the tests rather than
    inside them."""
    try:
        return report_made("kafka class archive", lambda: ensure_class_archive(ensure_kafka_jars()))
    except KafkaNodeError as exc:
        print(f"kafka class archive: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
