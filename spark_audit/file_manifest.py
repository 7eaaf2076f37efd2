"""Which audit files incremental runs have ingested: a manifest in the checkpoint that never outgrows the input.

The rule (docs/audit-job.md, "Batch and incremental"): a run lists the input's ``*.jsonl`` files as a batch run
reads them, and ingests every listed file the manifest does not hold with its present size. After its records are
in the store, the manifest becomes the files of that listing it holds, plus those just ingested. So

- a file is ingested once: once in, it stays in the manifest for as long as the input lists it;
- no file is skipped, whatever its name, date or modification time: a file published late into an old date (a
  proxy restarted after a crash publishes its staging file) is listed, and is not in the manifest;
- an entry goes when its file goes (retention, an operator): the manifest is at most the input's listing, not
  every name ever read, as the Structured Streaming file source's log was (it kept every name for its
  ``maxFileAge``, and the job set that to 100 years so as not to skip late files);
- a file whose size changed is read again whole (audit files are renamed complete into the directory and never
  change; should one grow, its records already stored are dropped as duplicates by id).

The manifest is one small JSON file, replaced by a rename after each batch: a run that dies before the rename
ingests that batch's files again next time, and the ingest's lookup of the new ids among the stored ones drops
what was stored already (ingest.py), while the quarantine of that batch number is rewritten, not added to.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from spark_audit import hadoop_fs

MANIFEST = "files.json"
FORMAT = 1
SUFFIX = ".jsonl"
#: Hadoop's glob characters: a listed file's name is escaped before it is handed to Spark, which would expand them.
_GLOB = "\\*?[]{}"


@dataclass(frozen=True)
class AuditFile:
    #: the file's URI as Spark names a line's origin (``file:///audit/a.jsonl``), the manifest's key
    key: str
    #: the path as Hadoop lists it, for Spark to read
    path: str
    size: int


@dataclass(frozen=True)
class Manifest:
    #: the number of the next batch (the quarantine's ``batch=<n>``)
    next_batch: int = 0
    #: every ingested file the last listing held, by key, with the size it had
    files: Mapping[str, int] = field(default_factory=dict)
    #: the chain fields of every file in ``files`` are kept (``_tables/chain``, spark_audit/chain_integrity.py)
    chain_kept: bool = True


def key(uri: str) -> str:
    """One spelling of a file's URI: Hadoop lists ``file:/a``, Spark's metadata says ``file:///a``."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return f"file://{parsed.path}"
    return uri


def _visible(name: str) -> bool:
    return not name.startswith((".", "_"))


def _local_files(input_path: str) -> list[AuditFile]:
    """:func:`list_files` of a local input, by Python: Hadoop's listing through Py4J costs a few round trips per
    file, which grows with the history kept in the directory (9 days of hourly files: several seconds)."""
    local = urlparse(input_path).path if input_path.startswith("file:") else input_path
    found: dict[str, AuditFile] = {}
    for match in sorted(glob.glob(local)) if glob.has_magic(local) else [local]:
        if os.path.isdir(match):
            with os.scandir(match) as entries:
                candidates = [(entry.name, entry.path) for entry in entries if entry.is_file()]
        else:
            candidates = [(os.path.basename(match), match)] if os.path.isfile(match) else []
        for name, file_path in candidates:
            if name.endswith(SUFFIX) and _visible(name):
                listed = f"file://{os.path.abspath(file_path)}"
                found[listed] = AuditFile(listed, listed, os.path.getsize(file_path))
    return [found[k] for k in sorted(found)]


def list_files(spark: SparkSession, input_path: str) -> list[AuditFile]:
    """The ``*.jsonl`` files a batch run reads from ``input_path`` (a directory, or a glob of them), by key."""
    if urlparse(input_path).scheme in ("", "file"):
        return _local_files(input_path)
    path, fs = hadoop_fs.file_system(spark, input_path)
    found: dict[str, AuditFile] = {}
    for status in fs.globStatus(path(input_path)) or []:
        children = fs.listStatus(status.getPath()) if status.isDirectory() else [status]
        for child in children:
            name = child.getPath().getName()
            if child.isFile() and name.endswith(SUFFIX) and _visible(name):
                listed = str(child.getPath().toString())
                found[key(listed)] = AuditFile(key(listed), listed, int(child.getLen()))
    return [found[k] for k in sorted(found)]


def readable(file: AuditFile) -> str:
    """The path with Hadoop's glob characters escaped, so Spark reads that file and no other."""
    return "".join(f"\\{c}" if c in _GLOB else c for c in file.path)


def new_files(listed: Iterable[AuditFile], manifest: Manifest) -> list[AuditFile]:
    return [f for f in listed if manifest.files.get(f.key) != f.size]


def after_batch(manifest: Manifest, listed: Iterable[AuditFile], ingested: Iterable[AuditFile]) -> Manifest:
    """The manifest once ``ingested`` are in the store: pruned to the listing, so it never outgrows the input."""
    present = {f.key for f in listed}
    files = {k: size for k, size in manifest.files.items() if k in present}
    files.update({f.key: f.size for f in ingested})
    return Manifest(manifest.next_batch + 1, files, manifest.chain_kept)


def load(spark: SparkSession, checkpoint: str) -> Manifest:
    """The manifest; where there is none, what an older checkpoint's file-source log says was committed."""
    text = hadoop_fs.read_text(spark, f"{checkpoint}/{MANIFEST}")
    if text is None:
        # written whole before the old one was removed: a run that died between the two left it
        text = hadoop_fs.read_text(spark, f"{checkpoint}/{MANIFEST}.tmp")
    if text is None:
        return _from_stream_log(spark, checkpoint)
    raw = json.loads(text)
    if raw.get("format") != FORMAT:
        raise ValueError(f"{checkpoint}/{MANIFEST}: format {raw.get('format')!r}, this job reads {FORMAT}")
    return Manifest(int(raw["nextBatch"]), {str(k): int(v) for k, v in raw["files"].items()}, bool(raw.get("chainKept", False)))


def save(spark: SparkSession, checkpoint: str, manifest: Manifest) -> None:
    text = json.dumps(
        {
            "format": FORMAT,
            "nextBatch": manifest.next_batch,
            "chainKept": manifest.chain_kept,
            "files": dict(sorted(manifest.files.items())),
        },
        indent=0,
    )
    hadoop_fs.write_text(spark, f"{checkpoint}/{MANIFEST}", text + "\n")


def _numbered(spark: SparkSession, directory: str) -> dict[int, str]:
    """``<n>`` and ``<n>.compact`` files of a Structured Streaming log directory, by batch number."""
    path, fs = hadoop_fs.file_system(spark, directory)
    if not fs.exists(path(directory)):
        return {}
    numbered: dict[int, str] = {}
    for status in fs.listStatus(path(directory)):
        number = status.getPath().getName().removesuffix(".compact")
        if status.isFile() and number.isdigit():
            numbered[int(number)] = str(status.getPath().toString())
    return numbered


def _from_stream_log(spark: SparkSession, checkpoint: str) -> Manifest:
    """A checkpoint the Structured Streaming file source wrote (before this manifest): the files of its committed
    batches, so that moving to the manifest reads nothing twice and the quarantine's batch numbers go on."""
    commits = _numbered(spark, f"{checkpoint}/commits")
    if not commits:
        return Manifest()
    last = max(commits)
    files: dict[str, int] = {}
    for number, log in sorted(_numbered(spark, f"{checkpoint}/sources/0").items()):
        text = hadoop_fs.read_text(spark, log) or ""
        for line in text.splitlines()[1:]:  # the first line is the log's version
            entry: dict[str, Any] = json.loads(line)
            if int(entry.get("batchId", number)) <= last:
                # the log does not hold the size: the next run's listing gives it (a file is not read again for it)
                files[key(str(entry["path"]))] = -1
    return Manifest(last + 1, files, chain_kept=False)


def with_sizes(manifest: Manifest, listed: Iterable[AuditFile]) -> Manifest:
    """A migrated manifest's entries given their listed sizes (the stream log has none)."""
    sizes = {f.key: f.size for f in listed}
    return Manifest(manifest.next_batch, {k: (sizes.get(k, v) if v < 0 else v) for k, v in manifest.files.items()}, manifest.chain_kept)
