"""`make test`'s pytest run: the suite in two tiers side by side, each its own pytest process.

The Spark tier (marker `spark`: local Spark sessions, the audit job, its benchmark's smoke run) spends most of
its time in Spark's JVM and waiting on it; everything else (unit, integration, the Kafka interop tier, images,
deploy) spends most of its time in other JVMs and on loopback. Run one after the other they took about the sum;
side by side, on two cores, about the longer of the two. They share nothing a test writes: each tier has its own
`--basetemp` and no cache, and the session fixtures (Kafka nodes, the KDC, Keycloak) pick free ports.

The main tier's output streams as it runs; the Spark tier's is printed whole when both are done. Arguments are
passed to both pytest runs; the exit status is the first non-zero one.
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIERS: dict[str, list[str]] = {
    "main": ["-m", "not spark"],
    "spark": ["-m", "spark"],
}


def _command(tier: str, basetemp: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={basetemp / tier}", *TIERS[tier], *extra]


def main(argv: list[str]) -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="envelope-proxy-tests-") as scratch:
        root = Path(scratch)
        spark_log = root / "spark.log"
        with spark_log.open("wb") as log:
            spark = subprocess.Popen(_command("spark", root, argv), stdout=log, stderr=subprocess.STDOUT)
            try:
                main_code = subprocess.call(_command("main", root, argv))
                main_done = time.monotonic() - started
                spark_code = spark.wait()
            except BaseException:
                spark.kill()
                spark.wait()
                raise
        print("\n===== the Spark tier (marker spark), run beside the main tier =====", flush=True)
        sys.stdout.write(spark_log.read_text(errors="replace"))
    total = time.monotonic() - started
    print(f"\ntiers: main exit {main_code} in {main_done:.0f} s, spark exit {spark_code}; {total:.0f} s in all", flush=True)
    return next((code for code in (main_code, spark_code) if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
