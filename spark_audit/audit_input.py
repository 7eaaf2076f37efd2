"""Where the audit files of a local ``--input`` are, before Spark starts: the directory's own ``*.jsonl``, else those of
its sub-directories (``<root>/<proxy>/*.jsonl``, the layout docs/deploy.md gives: one ``audit.log.dir`` per proxy
on a shared volume), else an error saying what was looked for and why nothing was found.

Spark reads neither hidden (``.``) nor ``_`` names, so the proxy's ``.staging/`` (files still being written) is
not read, and is not counted here either, only mentioned.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

PATTERN = "*.jsonl"
STAGING = ".staging"


class NoAuditFiles(ValueError):
    """A local --input with no audit records to read; the message says where the job looked."""


@dataclass(frozen=True)
class AuditInput:
    path: str
    """What Spark reads: the directory, or ``<directory>/*`` for the per-proxy layout."""
    note: str | None = None
    """Said on stderr when the job reads something other than the directory's own files."""


def _visible(path: Path) -> bool:
    return not path.name.startswith((".", "_"))


def _files(directory: Path) -> list[Path]:
    try:
        return sorted(path for path in directory.glob(PATTERN) if _visible(path) and path.is_file())
    except OSError:
        return []


def _with_records(files: list[Path]) -> list[Path]:
    return [path for path in files if path.stat().st_size > 0]


def _subdirectories(directory: Path) -> list[Path]:
    try:
        return sorted(path for path in directory.iterdir() if _visible(path) and path.is_dir())
    except OSError:
        return []


def resolve(path: str) -> AuditInput:
    """The files a local --input (an existing directory) stands for; NoAuditFiles when it holds no records."""
    root = Path(path)
    own = _files(root)
    if _with_records(own):
        return AuditInput(path)
    proxies = [sub for sub in _subdirectories(root) if _with_records(_files(sub))]
    if proxies:
        names = ", ".join(sub.name for sub in proxies[:5]) + (f" and {len(proxies) - 5} more" if len(proxies) > 5 else "")
        return AuditInput(
            os.path.join(path, "*"),
            f"--input {path} has no {PATTERN} of its own: reading those of its sub-directories, one per proxy ({names})",
        )
    reasons = []
    if own:
        reasons.append(f"its {len(own)} {PATTERN} file(s) are empty")
    subdirectories = _subdirectories(root)
    staged = len(_files(root / STAGING)) + sum(len(_files(sub / STAGING)) for sub in subdirectories)
    if staged:
        reasons.append(
            f"{staged} file(s) are still being written in {STAGING}/ (a proxy publishes a file when it rotates, "
            "audit.file.rotate.ms or audit.file.max.bytes, and when it stops)"
        )
    if not reasons:
        looked = f" nor in its {len(subdirectories)} sub-directories" if subdirectories else ""
        reasons.append(f"there is no {PATTERN} file in it{looked}")
    raise NoAuditFiles(
        f"--input: no audit records in {path}: the job reads the {PATTERN} files directly in it, or those of each of "
        f"its sub-directories ({path}/<proxy>/{PATTERN}, as docs/deploy.md lays them out), and {'; '.join(reasons)}. "
        "Is it the proxy's audit.log.dir?"
    )


def check_file_url(url: str) -> None:
    """A ``file:`` --input (a directory, or a glob of directories, as the guide's ``file:///audit/*``) that names no
    audit records: NoAuditFiles saying what it matched. Spark itself would read the glob as zero records."""
    path = unquote(urlparse(url).path)
    matched = sorted(glob.glob(path)) if glob.has_magic(path) else ([path] if os.path.exists(path) else [])
    directories = [Path(item) for item in matched if os.path.isdir(item) and _visible(Path(item))]
    files = [Path(item) for item in matched if os.path.isfile(item) and item.endswith(".jsonl")]
    if _with_records(files) or any(_with_records(_files(directory)) for directory in directories):
        return
    if not matched:
        raise NoAuditFiles(
            f"--input: no audit records in {url}: {path} matches no file or directory (hidden ones, such as {STAGING}/, are not read)"
        )
    staged = sum(len(_files(directory / STAGING)) for directory in directories)
    still = (
        f"; {staged} file(s) are still being written in {STAGING}/ (published when they rotate and when a proxy stops)" if staged else ""
    )
    names = ", ".join(str(directory) for directory in directories[:5]) or "no directory"
    raise NoAuditFiles(f"--input: no audit records in {url}: it matches {names}, and none holds a non-empty {PATTERN} file{still}")
