"""OAUTHBEARER under the fuzzer (family `oauthbearer`): a deterministic slice."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_oauthbearer_slice_has_no_crash_hang_or_traceback() -> None:
    # 20,000 broken client-first messages, tokens and JWK sets: each accepted or refused (malformed message,
    # invalid_token then the failure after %x01, JWKS without a usable key), never another exception, within the hang bound.
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--family", "oauthbearer", "--inputs", "20000", "--seed", "20261126", "--hang-seconds", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    result = json.loads(run.stdout)
    assert result["inputs"] == 20000 and result["family"] == "oauthbearer" and result["targets"] == 3
    assert (result["crashes"], result["hangs"], result["errors"]) == (0, 0, 0), result
    # The mutations reach both sides: refusals and inputs that still validate.
    assert result["refused"] > 10000 and result["accepted"] > 300
