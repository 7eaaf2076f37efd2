"""bench/forwarding/breakdown.py runs the proxy's own request-path steps: it must keep running as they change."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "forwarding" / "breakdown.py"


def test_the_breakdown_times_every_step_of_a_forwarded_request() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--repeat", "5", "--rounds", "1"], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout)

    steps = report["steps"]
    assert {"intent record: build, bound, encode, write, count", "outcome record: build, bound, encode, write, count", "envelope wrap"} <= set(steps)
    assert all(value > 0 for value in steps.values()), steps
    assert report["sum"] == round(sum(steps.values()), 1)


def test_the_breakdown_times_the_steps_back_to_back_too() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--repeat", "5", "--rounds", "1"], capture_output=True, text=True, timeout=120, check=True)

    assert json.loads(done.stdout)["whole_request"] > 0
