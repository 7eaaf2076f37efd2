"""The driver JVM maps the class archive `make test` made, and only a whole archive is ever published (spark_audit/class_archive.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_audit import class_archive
from spark_audit.local_fs import CLASS_PATH, local_file_system_conf
from tests.spark_audit.harness import REPO_ROOT

# A fresh driver JVM started as the job starts its own; prints the lines of its memory map that name the archive.
_MAPPED = """
import sys
from spark_audit.session import build_session
spark = build_session(sys.argv[1])
jvm = spark.sparkContext._gateway.proc.pid
with open(f"/proc/{jvm}/maps") as maps:
    print("".join(line for line in maps if sys.argv[2] in line))
spark.stop()
"""


def _made_archive() -> Path:
    path = class_archive.archive_path(local_file_system_conf("local[2]").get(CLASS_PATH, ""))
    if path is None or not path.is_file():
        reason = f"no class archive at {path}: `make test` makes one (make class-archive)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (required when CI=true)")
        pytest.skip(reason)
    return path


@pytest.mark.spark
def test_a_local_session_maps_the_archive_make_test_made() -> None:
    archive = _made_archive()
    proc = subprocess.run(
        [sys.executable, "-c", _MAPPED, "local[1]", str(archive)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert str(archive) in proc.stdout


@pytest.mark.spark
def test_a_truncated_archive_is_never_published(tmp_path: Path) -> None:
    archive = _made_archive()
    truncated = tmp_path / "truncated.jsa"
    with archive.open("rb") as whole, truncated.open("wb") as part:
        part.write(whole.read(archive.stat().st_size // 2))
    # a JVM mapping it dies (SIGBUS); the check before publishing sees that, and no crash file is left behind
    assert class_archive._starts_with(truncated) is False
    assert class_archive._starts_with(archive) is True
    assert list(tmp_path.glob("hs_err*")) == [] and list(REPO_ROOT.glob("hs_err*")) == []


def test_off_or_without_java_there_are_no_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(class_archive.ENV, class_archive.OFF)
    assert class_archive.java_options("", create=True) == ()
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    assert class_archive.java_options("", create=True) == ()


def test_an_archive_is_mapped_where_there_is_one_and_written_only_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if class_archive.java_binary() is None:
        pytest.skip("no java")
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "archives"))
    path = class_archive.archive_path("")
    assert path is not None and path.parent == tmp_path / "archives"
    assert class_archive.java_options("", create=False) == ()
    written = class_archive.java_options("", create=True)
    assert written == (class_archive.QUIET, f"{class_archive.WRITE_FLAG}{path}.{os.getpid()}.partial")
    path.write_bytes(b"archive")
    assert class_archive.java_options("", create=True) == (class_archive.QUIET, f"{class_archive.READ_FLAG}{path}")
    # another class path (the local file system's jar, a caller's jars) is another archive: the JVM would refuse this one
    other = class_archive.archive_path("/opt/extra.jar")
    assert other is not None and other != path


def test_an_unwritable_directory_means_no_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if class_archive.java_binary() is None:
        pytest.skip("no java")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv(class_archive.ENV, str(blocked / "archives"))
    assert class_archive.java_options("", create=True) == ()


def test_stale_partials_go_and_the_newest_archives_stay(tmp_path: Path) -> None:
    old_partial = tmp_path / f"a{class_archive.SUFFIX}.11.partial"
    fresh_partial = tmp_path / f"b{class_archive.SUFFIX}.12.partial"
    for partial in (old_partial, fresh_partial):
        partial.write_bytes(b"x")
    long_ago = time.time() - 2 * class_archive.STALE_SECONDS
    os.utime(old_partial, (long_ago, long_ago))
    class_archive._remove_stale(tmp_path)
    assert not old_partial.exists() and fresh_partial.exists()

    archives = []
    for age in range(class_archive.KEEP + 2):
        archive = tmp_path / f"spark-driver-{age}{class_archive.SUFFIX}"
        archive.write_bytes(b"x")
        os.utime(archive, (time.time() - age * 60, time.time() - age * 60))
        archives.append(archive)
    class_archive._prune(tmp_path)
    assert [archive.exists() for archive in archives] == [True] * class_archive.KEEP + [False, False]


def test_make_class_archive_says_why_when_it_cannot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from spark_audit import make_class_archive

    monkeypatch.setenv(class_archive.ENV, class_archive.OFF)
    assert make_class_archive.main(["--input", str(tmp_path)]) == 1
    assert f"{class_archive.ENV}=none" in capsys.readouterr().err
    if shutil.which("java") is None:
        return
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "archives"))
    assert make_class_archive.main(["--input", str(tmp_path)]) == 1
    assert "no *.jsonl files" in capsys.readouterr().err
