"""An --output folder the job cannot write is one line naming its owner and the job's uid, before Spark starts.

Found by a newcomer following docs/deploy.md: the audit image runs as uid 10001, and a mounted /reports owned by
another user failed deep in Spark with a bare "Permission denied"."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder every user may read (pytest's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="audit-perms-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to run the job as another user")
def test_an_output_folder_of_another_user_is_named_with_both_uids(shared_dir: Path) -> None:
    audit = shared_dir / "audit"
    audit.mkdir(mode=0o755)
    shutil.copy(REPO_ROOT / "tests" / "fixtures" / "audit-sample.jsonl", audit / "audit-1.jsonl")
    (audit / "audit-1.jsonl").chmod(0o644)
    reports = shared_dir / "reports"
    reports.mkdir(mode=0o755)  # root's, as a volume mounted without a chown
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            "-m",
            "spark_audit",
            "--input",
            str(audit),
            "--output",
            str(reports),
        ],
        cwd=shared_dir,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "HOME": str(shared_dir)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{reports} is owned by uid 0 and not writable by this process (uid {NOBODY})" in done.stderr
    assert f"chown -R {NOBODY} {reports}" in done.stderr
    assert list(reports.iterdir()) == []
