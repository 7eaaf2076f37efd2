"""The driver JVM maps the class archive `make test` made, and only a whole archive is ever published (spark_audit/class_archive.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_audit import class_archive
from spark_audit.make_class_archive import archive_for
from tests.spark_audit.harness import REPO_ROOT

# A fresh driver JVM started as the job starts its own; prints its class path, then the lines of its memory map naming the archive.
_MAPPED = """
import sys
from spark_audit import class_archive
from spark_audit.session import build_session
spark = build_session(sys.argv[1])
jvm = spark.sparkContext._gateway.proc.pid
print(class_archive._class_path_of(jvm))
with open(f"/proc/{jvm}/maps") as maps:
    print("".join(line for line in maps if sys.argv[2] in line))
spark.stop()
"""

# A session that writes an archive, as make_class_archive's run does (without the job: any classes make an archive);
# argv[1] says whether its run succeeded.
_WRITE = """
import sys
from spark_audit import class_archive
from spark_audit.session import Resources, build_session
spark = build_session("local[1]", resources=Resources(create_class_archive=True))
partial = class_archive.writing(spark)
assert partial is not None and partial.name.endswith(".partial"), partial
spark.stop()
print(class_archive.finish(spark, partial, succeeded=sys.argv[1] == "succeeded"))
"""


def _python(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _made_archive() -> Path:
    path = archive_for("local[2]")
    if path is None or not path.is_file():
        reason = f"no class archive at {path}: `make test` makes one (make class-archive)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (required when CI=true)")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def mapped() -> tuple[Path, str, str]:
    """The archive `make test` made, the class path of a fresh driver JVM, and the lines of its map naming the archive."""
    archive = _made_archive()
    class_path, _, maps = _python(_MAPPED, "local[1]", str(archive)).stdout.partition("\n")
    return archive, class_path, maps


@pytest.mark.spark
def test_a_local_session_maps_the_archive_make_test_made(mapped: tuple[Path, str, str]) -> None:
    archive, _, maps = mapped
    assert str(archive) in maps


@pytest.mark.spark
def test_a_truncated_archive_is_refused(mapped: tuple[Path, str, str], tmp_path: Path) -> None:
    archive, class_path, _ = mapped
    truncated = tmp_path / "truncated.jsa"
    with archive.open("rb") as whole, truncated.open("wb") as part:
        part.write(whole.read(archive.stat().st_size // 2))
    # a JVM mapping it dies (SIGBUS); the check before publishing sees that, and no crash file is left behind
    assert class_archive._starts_with(truncated, class_path) is False
    assert class_archive._starts_with(archive, class_path) is True
    # -Xshare:on: an archive the JVM would skip (another class path) is refused too, not published to be skipped forever
    assert class_archive._starts_with(archive, str(tmp_path)) is False
    assert list(tmp_path.glob("hs_err*")) == [] and list(REPO_ROOT.glob("hs_err*")) == []


@pytest.mark.spark
def test_a_run_that_succeeded_publishes_its_archive_and_one_that_failed_leaves_none(tmp_path: Path) -> None:
    env = {**os.environ, class_archive.ENV: str(tmp_path / "failed")}
    assert _python(_WRITE, "failed", env=env).stdout.strip() == "None"
    assert list((tmp_path / "failed").iterdir()) == []  # its JVM was killed before it wrote, and nothing is left

    env = {**os.environ, class_archive.ENV: str(tmp_path / "succeeded")}
    published = Path(_python(_WRITE, "succeeded", env=env).stdout.strip())
    assert published.parent == tmp_path / "succeeded" and published.suffix == class_archive.SUFFIX
    assert [path.name for path in published.parent.iterdir()] == [published.name]  # no partial left
    # the next session maps it
    _, _, maps = _python(_MAPPED, "local[1]", str(published), env=env).stdout.partition("\n")
    assert str(published) in maps


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
    quiet, written = class_archive.java_options("", create=True)
    assert quiet == class_archive.QUIET and re.fullmatch(rf"{re.escape(class_archive.WRITE_FLAG + str(path))}\.[0-9a-f]{{32}}\.partial", written)
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
    old_partial = tmp_path / f"{class_archive.PREFIX}a{class_archive.SUFFIX}.11.partial"
    fresh_partial = tmp_path / f"{class_archive.PREFIX}b{class_archive.SUFFIX}.12.partial"
    for partial in (old_partial, fresh_partial):
        partial.write_bytes(b"x")
    long_ago = time.time() - 2 * class_archive.STALE_SECONDS
    os.utime(old_partial, (long_ago, long_ago))
    class_archive._remove_stale(tmp_path)
    assert not old_partial.exists() and fresh_partial.exists()

    archives = []
    for age in range(class_archive.KEEP + 2):
        archive = tmp_path / f"{class_archive.PREFIX}{age}{class_archive.SUFFIX}"
        archive.write_bytes(b"x")
        os.utime(archive, (time.time() - age * 60, time.time() - age * 60))
        archives.append(archive)
    unrelated = tmp_path / f"another-tool{class_archive.SUFFIX}"
    unrelated.write_bytes(b"x")
    class_archive._prune(tmp_path)
    assert [archive.exists() for archive in archives] == [True] * class_archive.KEEP + [False, False]
    assert unrelated.exists()


def test_make_class_archive_says_why_when_it_cannot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from spark_audit import make_class_archive

    monkeypatch.setenv(class_archive.ENV, class_archive.OFF)
    assert make_class_archive.main(["--input", str(tmp_path)]) == 1
    assert f"{class_archive.ENV}=none" in capsys.readouterr().err
    if class_archive.java_binary() is None:
        return
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "archives"))
    assert make_class_archive.main(["--input", str(tmp_path)]) == 1
    assert "no *.jsonl files" in capsys.readouterr().err


def test_a_directory_with_a_space_means_no_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Spark splits the driver's options at spaces: such a path would become the JVM's main class
    if class_archive.java_binary() is None:
        pytest.skip("no java")
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "my archives"))
    assert class_archive.java_options("", create=True) == ()


def test_the_sample_stops_at_its_size_on_a_line_boundary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from spark_audit import make_class_archive

    monkeypatch.setattr(make_class_archive, "SAMPLE_BYTES", 100)
    source, into = tmp_path / "audit", tmp_path / "sample"
    source.mkdir()
    into.mkdir()
    (source / "a.jsonl").write_bytes(b"x" * 39 + b"\n")  # 40 bytes: whole
    (source / "b.jsonl").write_bytes((b"y" * 29 + b"\n") * 4)  # 120 bytes: its first two lines fit
    (source / "c.jsonl").write_bytes(b"z\n")
    assert make_class_archive._sample(source, into) == 100
    assert sorted(path.name for path in into.iterdir()) == ["a.jsonl", "b.jsonl"]
    assert (into / "b.jsonl").read_bytes() == (b"y" * 29 + b"\n") * 2
