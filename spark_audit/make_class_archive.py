"""Make the driver JVM's class archive (spark_audit/class_archive.py) by running the job over a sample.

    python -m spark_audit.make_class_archive --input DIR [--master local[2]]
    python -m spark_audit.make_class_archive --exists    (exit 0 and its path when there is one)

The job's classes are the ones its own run loads, so the archive comes from a real run over the
first audit files of DIR (at most SAMPLE_BYTES of them, linked into a scratch folder). Writing
the archive takes the JVM about 10 s and up to 0.6 GiB more memory as it exits, which is why the
job never does it on its own: ``make test`` and ``bench/audit`` run this once, and so can an
operator, on the machine where the job runs. Exits 0 when an archive for this Java runtime and
these jars is there afterwards (made now or before), 1 otherwise, with one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from spark_audit import class_archive, cli
from spark_audit.local_fs import CLASS_PATH, local_file_system_conf

PROG = "spark_audit.make_class_archive"
#: enough records for every report to have rows; more only makes the run longer
SAMPLE_BYTES = 16 * 1024 * 1024


def archive_for(master: str) -> Path | None:
    """The archive a session on ``master`` maps: the driver's class path is the local file system's jar in local mode."""
    return class_archive.archive_path(local_file_system_conf(master).get(CLASS_PATH, ""))


def _sample(source: Path, into: Path) -> int:
    """Link (or copy) the first audit files of ``source`` into ``into``, at most SAMPLE_BYTES: a file that
    would go past it contributes its first whole lines up to it."""
    taken = 0
    for path in sorted(source.glob("*.jsonl")):
        room = SAMPLE_BYTES - taken
        if room <= 0:
            break
        size = path.stat().st_size
        if size <= room:
            try:
                os.link(path, into / path.name)
            except OSError:
                shutil.copyfile(path, into / path.name)
            taken += size
            continue
        with path.open("rb") as whole:
            head = whole.read(room)
        head = head[: head.rfind(b"\n") + 1]
        (into / path.name).write_bytes(head)
        taken += len(head)
        break
    return taken


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Make the audit job's class archive from a run over a sample of DIR.")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--input", type=Path, metavar="DIR", help="a directory of *.jsonl audit files")
    what.add_argument("--exists", action="store_true", help="only say whether there is an archive (exit 0: its path)")
    parser.add_argument("--master", default="local[2]", metavar="URL", help="Spark master of the run (default: local[2])")
    args = parser.parse_args(argv)
    archive = archive_for(args.master)
    if archive is None:
        if args.exists:
            return 1
        print(f"{PROG}: no archive is made: {class_archive.ENV}=none, or no java on PATH or in JAVA_HOME", file=sys.stderr)
        return 1
    if archive.is_file():
        print(archive)
        return 0
    if args.exists:
        return 1
    with tempfile.TemporaryDirectory(prefix="class-archive-") as scratch:
        sample = Path(scratch) / "audit"
        sample.mkdir()
        if _sample(args.input, sample) == 0:
            print(f"{PROG}: no *.jsonl files in {args.input}", file=sys.stderr)
            return 1
        status = cli.main(
            ["--input", str(sample), "--output", str(Path(scratch) / "out"), "--master", args.master, "--quiet", "--no-html"],
            make_class_archive=True,
        )
    if status != 0 or not archive.is_file():
        print(f"{PROG}: no archive was made (the run exited {status}); the job runs without one", file=sys.stderr)
        return 1
    print(archive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
