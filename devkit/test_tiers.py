"""`make test`'s pytest run: the suite in three tiers side by side, each its own pytest process.

Most of the suite's wall time is waiting, not computing: on Spark's JVM (marker `spark`), on Kafka nodes, a KDC
and Keycloak (marker `interop` under tests/interop), and on loopback and timers (everything else, with the
deploy and image tests, which start their own JVMs and containers). Run one after the other the tiers took about
their sum; side by side on two cores, about the longest of them. `tier_of` says which tier a test is in;
tests/conftest.py applies it to `pytest --tier NAME`. They share nothing a test writes:
each tier has its own `--basetemp` and no cache, and the session fixtures (Kafka nodes, the KDC, Keycloak) pick
free ports, so a node the interop tier starts is never one the main tier uses.

The main tier's output streams as it runs; the others' are printed whole when all are done. Arguments are passed
to every pytest run; the exit status is the first non-zero one.
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

TIERS = ("main", "interop", "spark")
STREAMED = "main"
INTEROP_FOLDER = "tests/interop/"


def tier_of(path: str, markers: set[str]) -> str:
    """The tier of a test at `path` (relative to the checkout, with `/`) carrying `markers`."""
    if "spark" in markers:
        return "spark"
    if "interop" in markers and path.startswith(INTEROP_FOLDER):
        return "interop"
    return "main"


def _command(tier: str, basetemp: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={basetemp / tier}", f"--tier={tier}", *extra]


def main(argv: list[str]) -> int:
    started = time.monotonic()
    codes: dict[str, int] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="envelope-proxy-tests-") as scratch:
        root = Path(scratch)
        logs: dict[str, IO[bytes]] = {}
        running: dict[str, subprocess.Popen[bytes]] = {}
        try:
            for tier in TIERS:
                if tier == STREAMED:
                    continue
                logs[tier] = (root / f"{tier}.log").open("wb")
                running[tier] = subprocess.Popen(_command(tier, root, argv), stdout=logs[tier], stderr=subprocess.STDOUT)
            codes[STREAMED] = subprocess.call(_command(STREAMED, root, argv))
            seconds[STREAMED] = time.monotonic() - started
            for tier, process in running.items():
                codes[tier] = process.wait()
                seconds[tier] = time.monotonic() - started  # an upper bound: when it was seen to be done
        except BaseException:
            for process in running.values():
                process.kill()
                process.wait()
            raise
        finally:
            for log in logs.values():
                log.close()
        for tier in running:
            print(f"\n===== the {tier} tier, run beside the main tier =====", flush=True)
            sys.stdout.write((root / f"{tier}.log").read_text(errors="replace"))
    total = time.monotonic() - started
    summary = ", ".join(f"{tier} exit {codes[tier]} by {seconds[tier]:.0f} s" for tier in TIERS)
    print(f"\ntiers: {summary}; {total:.0f} s in all", flush=True)
    return next((code for code in codes.values() if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
