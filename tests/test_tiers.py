"""`make test`'s tiers (devkit/test_tiers.py): what each tier's pytest process is asked to collect."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from devkit.test_tiers import SHARED_FIXTURE_FILES, SPARK_FOLDER, TIER_FOLDERS, TIERS, _command, tier_of, work_unit

REPO_ROOT = Path(__file__).resolve().parents[1]


def _collected(tier: str, extra: list[str]) -> list[str]:
    """The arguments after `--tier=` in the tier's pytest command: the caller's, then the folder the tier adds."""
    command = _command(tier, Path("/scratch"), extra)
    return command[command.index(f"--tier={tier}") + 1 :]


def test_the_spark_and_interop_tiers_collect_only_their_folders() -> None:
    assert _collected("spark", []) == [SPARK_FOLDER]
    assert _collected("interop", ["-x", "-k", "quorum"]) == ["-x", "-k", "quorum", TIER_FOLDERS["interop"]]
    assert _collected("main", ["-x"]) == ["-x"]  # the main tier's tests are everywhere else
    assert set(TIER_FOLDERS) < set(TIERS) and all(Path(folder).is_dir() for folder in TIER_FOLDERS.values())


def test_tests_named_on_the_command_line_are_collected_as_given() -> None:
    for named in (["tests/proxy"], ["-x", "tests/spark_audit/test_job.py::test_cli_run_writes_every_output"]):
        for tier in TIERS:
            assert _collected(tier, named) == named


def test_a_spark_test_is_in_the_spark_tier_wherever_the_interop_marker_is() -> None:
    assert tier_of(SPARK_FOLDER + "test_job.py", {"spark"}) == "spark"
    assert tier_of(SPARK_FOLDER + "test_job.py", {"spark", "interop"}) == "spark"
    assert tier_of(SPARK_FOLDER + "test_read.py", set()) == "main"
    assert tier_of(TIER_FOLDERS["interop"] + "test_quorum.py", {"interop"}) == "interop"
    assert tier_of("tests/deploy/test_deploy_guide.py", {"interop"}) == "main"


def test_every_file_naming_a_costly_shared_fixture_is_in_its_group() -> None:
    for fixture, group in SHARED_FIXTURE_FILES.items():
        naming = {
            path.as_posix()
            for path in Path("tests").rglob("test_*.py")
            if re.search(rf"\b{fixture}\b", path.read_text(encoding="utf-8"))
        }
        assert naming == set(group), fixture
        assert {work_unit(path) for path in group} == {fixture}
    assert work_unit("tests/interop/test_reads.py") == "tests/interop/test_reads.py"


def test_the_files_of_a_group_run_on_one_worker(tmp_path: Path) -> None:
    # two files and two workers: pytest-xdist's loadfile hands one file to each, unless they are one group
    (tmp_path / "conftest.py").write_text(
        "import devkit.test_tiers as tiers\n"
        "tiers._UNIT_OF_FILE.update({'test_a.py': 'shared', 'test_b.py': 'shared'})\n"
        "from tests.conftest import pytest_xdist_make_scheduler\n"
    )
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "import os, pathlib\n"
            f"def test_{name}():\n"
            f"    pathlib.Path('{name}.worker').write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
        )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        # the caller's PYTEST_ADDOPTS (plugins, -x) are not this inner run's
        env={**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (tmp_path / "a.worker").read_text() == (tmp_path / "b.worker").read_text()
