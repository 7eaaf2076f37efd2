"""The PROXY protocol reader under the fuzzer (family `proxy-header`): a deterministic slice."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_proxy_header_slice_has_no_crash_hang_or_traceback() -> None:
    # 10,000 headers broken at their lengths, type bytes and ends, each read in four listener modes, whole, byte by
    # byte and in pieces: the readings agree, the header plus the leftover is the input, and only ProxyHeaderError refuses.
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--family", "proxy-header", "--inputs", "10000", "--seed", "20260512", "--workers", "1", "--hang-seconds", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    result = json.loads(run.stdout)
    assert result["inputs"] == 10000 and result["family"] == "proxy-header" and result["targets"] == 1
    assert (result["crashes"], result["hangs"], result["errors"]) == (0, 0, 0), result
    # The mutations reach both sides: refused headers and headers still read.
    assert result["refused"] > 3000 and result["accepted"] > 3000
