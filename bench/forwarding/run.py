"""How fast the proxy forwards, next to a Kafka broker forwarding the same requests. Prints JSON.

    python bench/forwarding/run.py [--connections 1,8,32] [--duration 10] [--warmup 2] [--quick]

(or `make bench-forwarding`, which builds the Go load generator first). In one run, at each
connection count, each connection sends CreateTopics v7 (validate_only, a new topic name each
time) one at a time, and the rows are measured in turn:

  a. direct_envelopes_to_controller: Envelopes straight to a real Kafka 4.3 controller;
  b. kafka_broker_forwarding: CreateTopics to the broker of the same (combined) node, which
     forwards each in an Envelope to its controller, as KIP-590 brokers do;
  c. proxy_to_kafka_flush: the proxy in front of that controller (audit.durability=flush);
  d. proxy_to_zero_work_flush / _fsync: the proxy in front of a zero-work controller stand-in;
  e. loadgen_to_zero_work: the load generator straight to the stand-in (its own ceiling);
  f. trio_relay_to_zero_work: a bare trio TCP relay in front of the stand-in (the Python floor);
  g. proxy_processes_to_kafka_flush / _to_zero_work_flush: c and d with --proxy-processes proxies (default one
     per core) sharing one port with socket.reuse.port, as a proxy scales out on one host.

Each row gives requests per second and p50/p99/max latency; rows with a proxy, the relay or the
Kafka JVM give that process's CPU microseconds per request (/proc/<pid>/stat) and the proxy's peak
RSS (VmHWM). Ratios compare the proxy with the broker and with direct Envelopes. The JSON also goes
to bench/forwarding/last-run.json.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from processes import Processes, cpu_seconds, peak_rss_mb  # noqa: E402
from stack import Row, error_names, kafka_rows, zero_work_rows  # noqa: E402

from devkit.kafka_jars import KAFKA_VERSION  # noqa: E402
from devkit.kafka_node import KafkaNode  # noqa: E402

LOADGEN = HERE / "bin" / "loadgen"
OUTPUT = HERE / "last-run.json"
TASK_STEPS = HERE / "task_steps"
TASK_STEPS_WAIT = 5.0
"""How long a signalled process may take to write its task-step totals (run.py --task-steps)."""
#: Measured roles that are trio processes, so they count task steps (the Kafka JVM is not).
TRIO_ROLES = ("proxy", "relay")
LOADGEN_GRACE = 90.0
"""Beyond warm-up and duration, how long a load-generator run may take before it is killed (its I/O deadline is 60 s)."""
HEADROOM_WANTED = 10.0


def _parse_counts(text: str) -> list[int]:
    counts = [int(part) for part in text.split(",") if part.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("connection counts are positive integers, comma-separated")
    return counts


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=_parse_counts, default=[1, 8, 32], help="comma-separated connection counts (default 1,8,32)")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per row and count (default %(default)s)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 s measured after 1 s of warm-up")
    parser.add_argument("--controller-connections", type=int, default=None, help="the proxy's controller.connections (default: the proxy's)")
    parser.add_argument("--no-kafka", action="store_true", help="only the zero-work rows (no Java needed)")
    parser.add_argument("--no-relay", action="store_true", help="leave out the relay rows")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every row this many times, the rows interleaved in each round (relay, proxy, relay, proxy, ...), and report each figure's median (default %(default)s)",
    )
    parser.add_argument("--only", default=None, help="comma-separated row names to measure (default: all)")
    parser.add_argument(
        "--proxy-processes",
        type=int,
        default=os.cpu_count() or 1,
        help="proxies sharing one port (socket.reuse.port) in the proxy_processes_* rows; 1 leaves them out (default: one per core, %(default)s)",
    )
    parser.add_argument("--loadgen", type=Path, default=LOADGEN, help="the Go load generator (built by make bench-forwarding)")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where the JSON is written too (default %(default)s)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (configs, logs, audit files)")
    parser.add_argument("--profile", type=Path, default=None, help="record a py-spy flame graph of every proxy row into this folder (pip install -e '.[bench]')")
    parser.add_argument(
        "--task-steps",
        action="store_true",
        help="count trio's task steps in the proxies and relays (bench/forwarding/task_steps): steps per request and the time of each",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.warmup = 2.0, 1.0
    return args


def _progress(message: str) -> None:
    print(f"bench-forwarding: {message}", file=sys.stderr, flush=True)


def _profiler(row: Row, connections: int, duration: float, folder: Path | None) -> subprocess.Popen[bytes] | None:
    """With --profile, py-spy records the proxy over the measured window (its sampling costs CPU: such figures are not comparable)."""
    if folder is None or "proxy" not in row.measured:
        return None
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    # PROFILE_FORMAT=raw writes collapsed stacks (one line per stack and its count), for summing by function.
    raw = os.environ.get("PROFILE_FORMAT") == "raw"
    output = folder / f"{row.name}-{connections}.{'txt' if raw else 'svg'}"
    argv = [py_spy, "record", "--pid", str(row.measured["proxy"][0]), "--duration", str(max(1, round(duration))), "--nonblocking", "-o", str(output)]
    argv += ["--format", "raw"] if raw else []
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _task_steps(pids: Sequence[int], folder: Path) -> tuple[int, float] | None:
    """The task steps `pids` took so far and the seconds spent inside them; None if one did not answer in time."""
    for pid in pids:
        (folder / f"{pid}.json").unlink(missing_ok=True)
        os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + TASK_STEPS_WAIT
    steps, seconds = 0, 0.0
    for pid in pids:
        totals = folder / f"{pid}.json"
        while not totals.exists():
            if time.monotonic() > deadline:
                return None
            time.sleep(0.01)
        found = json.loads(totals.read_text())
        steps, seconds = steps + int(found["steps"]), seconds + float(found["seconds"])
    return steps, seconds


def measure(
    loadgen: Path, row: Row, connections: int, duration: float, warmup: float, profile: Path | None = None, task_steps: Path | None = None
) -> dict[str, Any]:
    """One row at one connection count: the load generator's report and the measured processes' CPU over the window."""
    argv = [
        str(loadgen), "client", "--target", row.target, "--connections", str(connections),
        "--duration", f"{duration}s", "--warmup", f"{warmup}s",
        "--topic-prefix", f"{row.name}-{connections}-{uuid.uuid4().hex[:8]}", *row.loadgen_args,
    ]  # fmt: skip
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    profiler: subprocess.Popen[bytes] | None = None
    try:
        time.sleep(warmup)
        before = {role: sum(cpu_seconds(pid) for pid in pids) for role, pids in row.measured.items()}
        counted = {role: pids for role, pids in row.measured.items() if role in TRIO_ROLES} if task_steps is not None else {}
        steps_before = {role: _task_steps(pids, task_steps) for role, pids in counted.items() if task_steps is not None}
        profiler = _profiler(row, connections, duration, profile)
        began = time.monotonic()
        stdout, stderr = process.communicate(timeout=duration + LOADGEN_GRACE)
        elapsed = time.monotonic() - began
        after = {role: sum(cpu_seconds(pid) for pid in pids) for role, pids in row.measured.items()}
        steps_after = {role: _task_steps(pids, task_steps) for role, pids in counted.items() if task_steps is not None}
        if profiler is not None:
            profiler.wait(LOADGEN_GRACE)
    finally:
        for child in (process, profiler):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait(10)
    try:
        report = json.loads(stdout)
    except ValueError:
        return {"error": f"load generator exit {process.returncode}: {(stdout + stderr).decode(errors='replace').strip()[-1000:]}"}
    requests = int(report["requests"])
    latency = report["latency_us"]
    result: dict[str, Any] = {
        "rps": round(report["rps"], 1),
        "p50_us": round(latency["p50"]),
        "p99_us": round(latency["p99"]),
        "max_us": round(latency["max"]),
        "requests": requests,
        "errors": error_names(report["errors"]),
    }
    if report["connection_failures"]:
        result["connection_failures"] = report["connection_failures"][:5]
    for role in row.measured:
        spent = after[role] - before[role]
        result[f"{role}_cpu_us_per_request"] = round(spent * 1e6 / requests, 1) if requests else None
        result[f"{role}_cpu_percent"] = round(spent * 100 / elapsed, 1)
    for role in counted:
        first, last = steps_before[role], steps_after[role]
        if first is not None and last is not None and last[0] > first[0] and requests:
            result[f"{role}_task_steps_per_request"] = round((last[0] - first[0]) / requests, 2)
            result[f"{role}_us_per_task_step"] = round((last[1] - first[1]) * 1e6 / (last[0] - first[0]), 1)
    if "proxy" in row.measured:
        result["proxy_peak_rss_mb"] = max((peak_rss_mb(pid) or 0.0) for pid in row.measured["proxy"])
    return result


def median_result(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each numeric figure's median over the rounds of one row (errors summed); the rounds themselves kept."""
    if len(runs) == 1:
        return runs[0]
    good = [run for run in runs if "error" not in run]
    if not good:
        return runs[0]
    merged: dict[str, Any] = {}
    for key, value in good[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            merged[key] = round(statistics.median(run[key] for run in good if run.get(key) is not None), 1)
        elif key == "errors":
            merged[key] = dict(sum((collections.Counter(run["errors"]) for run in good), collections.Counter()))
        else:
            merged[key] = value
    merged["rounds"] = len(good)
    merged["rps_by_round"] = [run.get("rps") for run in runs]
    return merged


def _cpu_ratio(results: dict[str, dict[str, Any]], top: str, top_role: str, bottom: str, bottom_role: str) -> float | None:
    a = results.get(top, {}).get(f"{top_role}_cpu_us_per_request")
    b = results.get(bottom, {}).get(f"{bottom_role}_cpu_us_per_request")
    return round(a / b, 3) if a and b else None


def _ratio(results: dict[str, dict[str, Any]], top: str, bottom: str) -> float | None:
    a, b = results.get(top, {}).get("rps"), results.get(bottom, {}).get("rps")
    return round(a / b, 3) if a and b else None


def summary(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Each row's best rate over the connection counts, and the load generator's headroom: its best rate against
    the zero-work upstream over the proxy's best rate there (at one connection both are bound by round trips)."""
    best: dict[str, float] = {}
    for point in points:
        for name, result in point["results"].items():
            if result.get("rps"):
                best[name] = max(best.get(name, 0.0), result["rps"])
    found: dict[str, Any] = {"best_rps": best}
    generator, proxy = best.get("loadgen_to_zero_work"), best.get("proxy_to_zero_work_flush")
    if generator and proxy:
        found["loadgen_headroom"] = round(generator / proxy, 1)
        found["loadgen_headroom_ok"] = generator / proxy >= HEADROOM_WANTED
    return found


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """At one connection count: each ratio of rates (requests per second)."""
    found = {
        "proxy_over_broker": _ratio(results, "proxy_to_kafka_flush", "kafka_broker_forwarding"),
        "proxy_over_direct": _ratio(results, "proxy_to_kafka_flush", "direct_envelopes_to_controller"),
        "broker_over_direct": _ratio(results, "kafka_broker_forwarding", "direct_envelopes_to_controller"),
        "fsync_over_flush": _ratio(results, "proxy_to_zero_work_fsync", "proxy_to_zero_work_flush"),
        "relay_over_proxy": _ratio(results, "trio_relay_to_zero_work", "proxy_to_zero_work_flush"),
        "envelope_relay_over_proxy": _ratio(results, "envelope_relay_to_zero_work", "proxy_to_zero_work_flush"),
        "proxy_cpu_per_request_over_envelope_relay": _cpu_ratio(results, "proxy_to_zero_work_flush", "proxy", "envelope_relay_to_zero_work", "relay"),
        "proxy_cpu_per_request_over_broker": _cpu_ratio(results, "proxy_to_kafka_flush", "proxy", "kafka_broker_forwarding", "kafka"),
        "loadgen_over_proxy": _ratio(results, "loadgen_to_zero_work", "proxy_to_zero_work_flush"),
        "processes_over_broker": _ratio(results, "proxy_processes_to_kafka_flush", "kafka_broker_forwarding"),
        "processes_over_direct": _ratio(results, "proxy_processes_to_kafka_flush", "direct_envelopes_to_controller"),
        "processes_over_proxy_zero_work": _ratio(results, "proxy_processes_to_zero_work_flush", "proxy_to_zero_work_flush"),
    }
    return {key: value for key, value in found.items() if value is not None}


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    if not args.loadgen.exists():
        raise SystemExit(f"{args.loadgen} not found: build it with `make bench-forwarding` (go build in bench/forwarding/loadgen)")
    load_before = os.getloadavg()
    steps_folder: Path | None = None
    if args.task_steps:
        # every Python process started from here on imports task_steps/sitecustomize.py
        steps_folder = workdir / "task-steps"
        steps_folder.mkdir()
        os.environ["BENCH_TASK_STEPS"] = str(steps_folder)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TASK_STEPS), os.environ.get("PYTHONPATH")]))
    with Processes(workdir) as procs, contextlib.ExitStack() as stack:
        rows: list[Row] = []
        node: KafkaNode | None = None
        if not args.no_kafka:
            _progress(f"starting a Kafka {KAFKA_VERSION} node ...")
            node = stack.enter_context(KafkaNode(workdir=workdir / "kafka", startup_timeout=180.0, quick_compiler=False))
            rows += kafka_rows(procs, node, args.loadgen, args.controller_connections, args.proxy_processes)
        rows += zero_work_rows(procs, args.loadgen, args.controller_connections, relay=not args.no_relay, processes=args.proxy_processes)
        if args.only:
            wanted = {name.strip() for name in args.only.split(",")}
            rows = [row for row in rows if row.name in wanted]
        points = []
        for connections in args.connections:
            runs: dict[str, list[dict[str, Any]]] = {row.name: [] for row in rows}
            for round_index in range(args.rounds):
                for row in rows:
                    _progress(f"{connections:>3} connections, round {round_index + 1}/{args.rounds}: {row.name} ...")
                    runs[row.name].append(measure(args.loadgen, row, connections, args.duration, args.warmup, args.profile, steps_folder))
                    _progress(f"    {runs[row.name][-1].get('rps')} rps, p99 {runs[row.name][-1].get('p99_us')} us")
            results = {name: median_result(found) for name, found in runs.items()}
            points.append({"connections": connections, "results": results, "ratios": ratios(results)})
    return {
        "benchmark": "forwarding",
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average_before": [round(x, 2) for x in load_before]},
        "settings": {
            "request": "CreateTopics v7, one topic, validate_only=true, a new name each time; one request in flight per connection",
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "connections": args.connections,
            "proxy": "envelope-proxy run, SASL_PLAINTEXT/PLAIN both sides, client User:alice; "
            + (f"controller.connections={args.controller_connections}" if args.controller_connections else "controller.connections default (4)")
            + (f"; proxy_processes_* rows: {args.proxy_processes} processes on one port (socket.reuse.port=true)" if args.proxy_processes > 1 else ""),
            "kafka": None if node is None else f"Kafka {node.version} combined KRaft node (devkit/kafka_node.py: -Xmx{node.heap}, SerialGC, SASL_PLAINTEXT, StandardAuthorizer); User:alice may CREATE on the cluster",
            "zero_work_upstream": "bench/forwarding/loadgen upstream: ApiVersions as a Kafka 4.3.1 controller, any SASL/PLAIN login, DescribeCluster naming itself, every Envelope answered at once",
        },
        "rows": {row.name: row.what for row in rows},
        "summary": summary(points),
        "points": points,
    }


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    # SIGTERM unwinds like Ctrl-C, so every server is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    workdir = Path(tempfile.mkdtemp(prefix="bench-forwarding-"))
    try:
        report = run(args, workdir)
    finally:
        if args.keep:
            _progress(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    text = json.dumps(report, indent=2)
    args.output.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
