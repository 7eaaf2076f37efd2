"""Directory moves on the file system that holds the job's output (local, HDFS...), through Hadoop's API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

from pyspark.sql import SparkSession


def file_system(spark: SparkSession, source: str) -> tuple[Any, Any]:
    """Hadoop's ``Path`` class and the file system (local, HDFS...) that holds ``source``."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path
    return path, path(source).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def exists(spark: SparkSession, source: str) -> bool:
    path, fs = file_system(spark, source)
    return bool(fs.exists(path(source)))


def delete(spark: SparkSession, target: str) -> None:
    """Remove ``target`` and what it holds (nothing when it is absent)."""
    path, fs = file_system(spark, target)
    fs.delete(path(target), True)


def move(spark: SparkSession, source: str, target: str) -> bool:
    """Replace ``target`` by the directory ``source``; False (``target`` removed) when ``source`` is absent."""
    path, fs = file_system(spark, source)
    src, dst = path(source), path(target)
    fs.delete(dst, True)
    if not fs.exists(src):
        return False
    fs.mkdirs(dst.getParent())
    if not fs.rename(src, dst):
        raise OSError(f"could not move {source} to {target}")
    return True


def date_partitions(spark: SparkSession, source: str) -> Iterator[tuple[date, list[Any]]]:
    """Each ``date=<d>/`` partition under ``source`` with its data files (Hadoop ``FileStatus``; no ``.``/``_`` files)."""
    path, fs = file_system(spark, source)
    root = path(source)
    if not fs.exists(root):
        return
    for partition in fs.listStatus(root):
        name = partition.getPath().getName()
        if partition.isDirectory() and name.startswith("date="):
            files = [part for part in fs.listStatus(partition.getPath()) if part.isFile() and not part.getPath().getName().startswith((".", "_"))]
            yield date.fromisoformat(name.removeprefix("date=")), files


def read_text(spark: SparkSession, source: str) -> str | None:
    """A small file's text (UTF-8), None when there is none."""
    path, fs = file_system(spark, source)
    if not fs.exists(path(source)):
        return None
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    stream = fs.open(path(source))
    try:
        return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream)).decode("utf-8")
    finally:
        stream.close()


def write_text(spark: SparkSession, target: str, text: str) -> None:
    """Replace a small file by a rename: a reader sees the old text or the new, never part of one."""
    path, fs = file_system(spark, target)
    final, staged = path(target), path(f"{target}.tmp")
    stream = fs.create(staged, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    fs.delete(final, False)
    if not fs.rename(staged, final):
        raise OSError(f"could not move {staged} to {target}")
