"""`python -m fuzz.replay` reads back what `python -m fuzz.run --crash-dir` saves, for every family."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.run import make_input
from fuzz.target import saved_input_name, saved_target_label
from fuzz.targets import FAMILIES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_an_input_saved_for_any_family_replays_through_its_target(family: str, tmp_path: Path) -> None:
    target, data = make_input(FAMILIES[family](), 11, 3)
    saved = tmp_path / saved_input_name(target.name, "crash", 11, 3)
    saved.write_bytes(data)

    run = subprocess.run([sys.executable, "-m", "fuzz.replay", str(saved)], cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, run.stdout + run.stderr
    (outcome,) = [json.loads(line) for line in run.stdout.splitlines()]
    assert outcome["input"] == saved.name and outcome["outcome"].split(":")[0] in ("accepted", "refused")


def test_file_names_old_and_new_name_their_target() -> None:
    assert saved_target_label("request-19-v6-seed1-index1576.bin") == "request-19-v6"  # the regressions' names
    assert saved_target_label(saved_input_name("jaas kafka-opts", "hang", 5, 3)) == "jaas-kafka-opts"
    assert saved_target_label(saved_input_name("proxy header", "crash", 1, 0)) == "proxy-header"
    assert saved_target_label("notes.txt") is None


def test_a_file_that_names_no_target_is_refused_by_name(tmp_path: Path) -> None:
    stray = tmp_path / "no-such-target-crash-seed1-index2.bin"
    stray.write_bytes(b"")
    run = subprocess.run([sys.executable, "-m", "fuzz.replay", str(stray)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and stray.name in run.stderr
