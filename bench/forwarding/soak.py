"""Does the proxy's memory stay flat under sustained load? Prints JSON.

    python bench/forwarding/soak.py [--minutes 10] [--connections 32] [--durability flush]

(or `make bench-soak`; the JSON also goes to bench/forwarding/last-soak.json). The proxy forwards to the zero-work upstream, so it runs at its own
ceiling the whole time: every request makes and drops its audit records, Envelope, metrics
samples and tasks. RSS (VmRSS from /proc) is sampled every `--interval` seconds; growth is
measured from the first sample after the warm-up, when the allocator, the caches (principals,
advertised ranges, schemas, metric children) and the audit file's buffers have reached their
size, to the last sample. The target is at most 5 % growth over 10 minutes. Memory that grows
with the count of requests (a list, a dict, a task nobody reaps) shows up here as a steady slope.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from processes import Processes, cpu_seconds, peak_rss_mb, rss_kb  # noqa: E402
from run import LOADGEN, LOADGEN_GRACE  # noqa: E402
from stack import client_login, probe, start_announcing, start_proxy  # noqa: E402

OUTPUT = HERE / "last-soak.json"
GROWTH_WANTED_PERCENT = 5.0


def rss_mb(pid: int) -> float:
    return round(rss_kb(pid) / 1024, 2)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="measured minutes (default %(default)s)")
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds of load before the first counted sample (default %(default)s)")
    parser.add_argument("--connections", type=int, default=32, help="load generator connections (default %(default)s)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between RSS samples (default %(default)s)")
    parser.add_argument("--durability", choices=("flush", "fsync"), default="flush", help="audit.durability (default %(default)s)")
    parser.add_argument("--loadgen", type=Path, default=LOADGEN, help="the Go load generator (built by make bench-soak)")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where the JSON is written too (default %(default)s)")
    return parser.parse_args(argv)


def soak(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    if not args.loadgen.exists():
        raise SystemExit(f"{args.loadgen} not found: build it with `make bench-soak` (go build in bench/forwarding/loadgen)")
    measured = args.minutes * 60
    with Processes(workdir) as procs:
        zero, _ = start_announcing(procs, "zero-work-upstream", [str(args.loadgen), "upstream", "--listen", "127.0.0.1:0"])
        proxy, (pid,) = start_proxy(procs, "proxy-soak", zero, args.durability, None)
        probe(args.loadgen, proxy, client_login())
        argv = [
            str(args.loadgen), "client", "--target", proxy, "--connections", str(args.connections),
            "--duration", f"{measured}s", "--warmup", f"{args.warmup}s", "--topic-prefix", "soak", *client_login(),
        ]  # fmt: skip
        load = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        samples: list[tuple[float, float]] = []
        try:
            time.sleep(args.warmup)
            began, cpu_before = time.monotonic(), cpu_seconds(pid)
            # Bounded: one sample per interval until the measured time is over (or the generator stops early).
            for tick in range(int(measured // args.interval) + 1):
                samples.append((round(time.monotonic() - began, 1), rss_mb(pid)))
                print(f"bench-soak: {samples[-1][0]:>6.0f} s  RSS {samples[-1][1]} MB", file=sys.stderr, flush=True)
                if load.poll() is not None:
                    break
                time.sleep(max(0.0, began + (tick + 1) * args.interval - time.monotonic()))
            stdout, stderr = load.communicate(timeout=measured + LOADGEN_GRACE)
            cpu = cpu_seconds(pid) - cpu_before
        finally:
            if load.poll() is None:
                load.kill()
                load.wait(10)
        report = json.loads(stdout) if stdout.strip() else {"error": stderr.decode(errors="replace")[-1000:]}
        first, last = samples[0][1], samples[-1][1]
        growth = round((last - first) * 100 / first, 2)
        return {
            "benchmark": "forwarding-soak",
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "rps": round(report.get("rps", 0.0), 1),
            "requests": report.get("requests"),
            "errors": report.get("errors"),
            "proxy_cpu_us_per_request": round(cpu * 1e6 / report["requests"], 1) if report.get("requests") else None,
            "rss_first_mb": first,
            "rss_last_mb": last,
            "rss_max_mb": max(rss for _, rss in samples),
            "rss_growth_percent": growth,
            "rss_growth_ok": growth <= GROWTH_WANTED_PERCENT,
            "peak_rss_mb": peak_rss_mb(pid),
            "samples": samples,
        }


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as folder:
        result = soak(args, Path(folder))
    text = json.dumps(result, indent=2)
    args.output.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
