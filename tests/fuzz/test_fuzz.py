"""The decoders under the structure-aware fuzzer: a deterministic slice, and every input that once killed a worker."""

import json
import subprocess
import sys
from pathlib import Path

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.bin"))
ROOT = Path(__file__).parents[2]


def test_fuzz_slice_has_no_crash_hang_or_traceback() -> None:
    # 20,000 inputs over every served API, the Envelope path and the responses the proxy reads,
    # each decoded in worker processes under an address-space limit.
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--inputs", "20000", "--seed", "20261122", "--hang-seconds", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    result = json.loads(run.stdout)
    assert result["inputs"] == 20000
    assert (result["crashes"], result["hangs"], result["errors"]) == (0, 0, 0), result
    # The mutations reach both sides: refused inputs and inputs that still decode.
    assert result["refused"] > 5000 and result["accepted"] > 2000


def test_controller_slice_has_no_crash_hang_or_traceback() -> None:
    # 20,000 requests through the embedded controller's handlers (every API and version it serves), each
    # handled as a super user, as a user with some ACLs and as one with none, the answers encoded:
    # no assert, KeyError or enum error may stand between a client and its answer.
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--family", "controller", "--inputs", "20000", "--seed", "20261125", "--hang-seconds", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    result = json.loads(run.stdout)
    assert result["inputs"] == 20000 and result["family"] == "controller"
    assert (result["crashes"], result["hangs"], result["errors"]) == (0, 0, 0), result
    assert result["refused"] > 5000 and result["accepted"] > 5000


def test_saved_crashes_are_refusals_now() -> None:
    assert len(REGRESSIONS) >= 40
    run = subprocess.run([sys.executable, "-m", "fuzz.replay", *map(str, REGRESSIONS)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    outcomes = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(outcomes) == len(REGRESSIONS)
    # Each of them aborted the process through kio before the bounded pre-pass; now each is a refusal or a clean decode.
    assert all(o["outcome"].startswith("refused") for o in outcomes), [o for o in outcomes if not o["outcome"].startswith("refused")]


def test_raw_kio_still_aborts_on_a_saved_input() -> None:
    """The regression inputs are real: without the pre-pass, kio's reader kills the process on one of them."""
    sample = next(p for p in REGRESSIONS if p.name.startswith("request-3-v"))
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))\n"
        "from kio.serial import entity_reader\n"
        "from envelope.codec import request_schema\n"
        "from envelope.header import peek_request_header\n"
        f"frame = open({str(sample)!r}, 'rb').read()\n"
        "h = peek_request_header(frame)\n"
        "try:\n"
        "    entity_reader(request_schema(h.api_key, h.api_version))(frame, h.header_size)\n"
        "except Exception:\n"
        "    sys.exit(3)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=120)
    assert run.returncode not in (0,), "kio decoded the input"
