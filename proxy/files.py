"""Crash-safe file writes, the one way every part of the proxy and the embedded controller does them."""

import os
import tempfile
from pathlib import Path


def fsync_directory(path: Path) -> None:
    """Make a new or renamed entry of the directory `path` survive power loss (POSIX needs the directory fsynced)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # not every platform lets a directory be opened
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True) -> None:
    """Temp file beside `path`, flushed (and fsynced), renamed over it, directory fsynced:
    a reader or a crash sees the old file or the new one, never a torn one."""
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise
    if fsync:
        fsync_directory(path.parent)


def directory_problem(path: Path) -> str | None:
    """Why `path` cannot be used as a directory (None when it is one, or can be created), told without creating it:
    what a configured folder's key is refused for when it is read (check-config included)."""
    if path.exists():
        return None if path.is_dir() else "is not a directory"
    for parent in path.absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else f"cannot create it: {parent} is not a directory"
    return None
