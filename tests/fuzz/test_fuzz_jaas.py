"""The JAAS parsers under the fuzzer (family `jaas`): a deterministic slice."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_jaas_slice_has_no_crash_hang_or_traceback() -> None:
    # 20,000 broken JAAS files, sasl.jaas.config values and KAFKA_OPTS lines: each accepted (and rendered back to
    # the same login modules) or refused with a JaasError, within the hang bound.
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--family", "jaas", "--inputs", "20000", "--seed", "20261126", "--hang-seconds", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    result = json.loads(run.stdout)
    assert result["inputs"] == 20000 and result["family"] == "jaas" and result["targets"] == 3
    assert (result["crashes"], result["hangs"], result["errors"]) == (0, 0, 0), result
    # The mutations reach both sides: refusals and texts that still parse.
    assert result["refused"] > 5000 and result["accepted"] > 3000
