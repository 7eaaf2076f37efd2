"""Kafka's JVMs map the class archive `make test` made (devkit/kafka_class_archive.py): a tool started the way the
tests start one loads Kafka's classes from it, a compiled client's classes after Kafka's jars do not keep it from
mapping, and a class path that does not start with Kafka's jars is not given it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devkit.kafka_jars import CLASS_ARCHIVE, class_archive_folder, ensure_kafka_jars, find_java, java_command
from devkit.processes import skip_or_fail

pytestmark = pytest.mark.interop

SHARED = "source: shared objects file"
TOOL = "org.apache.kafka.tools.TopicCommand"


def _lib() -> Path:
    lib = ensure_kafka_jars()
    java = find_java()
    assert java is not None
    if not (class_archive_folder(lib, java) / CLASS_ARCHIVE).is_file():
        skip_or_fail("no class archive of Kafka's jars: `make kafka-class-archive` makes it")
    return lib


def _loaded_from(classpath: str) -> dict[str, str]:
    """Where each class the tool's JVM loaded came from, as `-Xlog:class+load` says."""
    command = [*java_command(classpath, options=("-Xlog:class+load=info:stdout",)), TOOL, "--version"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    sources = {}
    for line in done.stdout.splitlines():
        parts = line.split("] ", 1)[-1].split(" ", 1)
        if len(parts) == 2:
            sources[parts[0]] = parts[1]
    return sources


def test_a_tool_loads_kafkas_classes_from_the_archive() -> None:
    sources = _loaded_from(f"{_lib()}/*")
    assert sources[TOOL] == SHARED
    kafka = [name for name in sources if name.startswith("org.apache.kafka.")]
    assert len(kafka) > 20 and all(sources[name] == SHARED for name in kafka), [name for name in kafka if sources[name] != SHARED][:5]


def test_classes_after_kafkas_jars_keep_the_archive_and_classes_before_them_do_not(tmp_path: Path) -> None:
    lib = _lib()
    assert _loaded_from(f"{lib}/*:{tmp_path}")[TOOL] == SHARED
    assert "-XX:SharedArchiveFile" not in " ".join(java_command(f"{tmp_path}:{lib}/*"))
    assert SHARED not in _loaded_from(f"{tmp_path}:{lib}/*")[TOOL]


def test_the_archive_is_named_by_the_jars_their_folder_and_the_jdk(tmp_path: Path) -> None:
    java = find_java()
    assert java is not None
    first, second = tmp_path / "first" / "lib", tmp_path / "second" / "lib"
    for lib in (first, second):
        lib.mkdir(parents=True)
        (lib / "kafka-clients.jar").write_bytes(b"jar")
    named = class_archive_folder(first, java)
    assert class_archive_folder(first, java) == named
    # the same jars elsewhere: the archive holds the class path it was dumped with
    assert class_archive_folder(second, java) != named
    # a jar replaced in place
    (first / "kafka-clients.jar").write_bytes(b"another jar")
    assert class_archive_folder(first, java) != named
