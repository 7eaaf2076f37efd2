"""Run N structure-aware inputs through the real decoders in worker processes and print JSON.

    python -m fuzz.run --inputs 1000000 [--seed 1] [--workers 2] [--address-space-mb 2048] [--family decoders|controller]

Each worker is a separate process under an address-space limit (RLIMIT_AS), so
an abort or an out-of-memory in a native decoder kills only the worker: the
parent counts it as a crash, writes the input to `--crash-dir`, and starts a new
worker after it. A decode that takes longer than `--hang-seconds` is a hang
(measured by the worker; a worker that stops making progress at all is killed
by the parent's watchdog and counted too). Inputs are derived from (seed, index),
so every run and every finding can be replayed exactly.
"""

import argparse
import json
import multiprocessing
import multiprocessing.connection
import os
import random
import resource
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envelope.apis import FORWARDABLE
from envelope.errors import ProtocolError
from fuzz.mutate import mutate
from fuzz.target import saved_input_name
from fuzz.targets import FAMILIES, Target, decode_client_request, envelope_of

_PROGRESS_EVERY = 256


def make_input(all_targets: list[Target], seed: int, index: int) -> tuple[Target, bytes]:
    """The input number `index` of a run: a target and the mutated bytes for it."""
    rng = random.Random(seed * 1_000_003 + index)
    target = all_targets[rng.randrange(len(all_targets))]
    prefix, generated = target.valid(rng)
    data = mutate(prefix, generated, rng) if rng.random() < 0.9 else prefix + bytes(generated.out)
    if target.decode is decode_client_request and data[:2] and int.from_bytes(data[:2], "big") in FORWARDABLE and rng.random() < 0.2:
        data = envelope_of(data)  # the controller's path: the same bytes inside an Envelope
    return target, data


def warm_up(all_targets: list[Target]) -> None:
    """Load every schema once, so the slowest decode measures decoding, not kio's first import."""
    rng = random.Random(0)
    for target in all_targets:
        prefix, generated = target.valid(rng)
        try:
            target.decode(prefix + bytes(generated.out))
        except ProtocolError:
            pass


@dataclass
class WorkerReport:
    inputs: int = 0
    refused: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)  # exceptions other than ProtocolError
    hangs: list[dict[str, Any]] = field(default_factory=list)
    slowest_ms: float = 0.0
    slowest: str = ""
    max_rss_kb: int = 0


def _worker(family: str, seed: int, start: int, stop: int, hang_seconds: float, address_space: int, progress: Any, out: Any) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    all_targets = FAMILIES[family]()
    warm_up(all_targets)
    report = WorkerReport()
    for index in range(start, stop):
        if index % _PROGRESS_EVERY == 0:
            progress.value = index
        target, data = make_input(all_targets, seed, index)
        began = time.perf_counter()
        try:
            target.decode(data)
        except ProtocolError:
            report.refused += 1
        except Exception as exc:  # a traceback where a refusal belongs: the finding
            if len(report.errors) < 20:
                report.errors.append({"index": index, "target": target.name, "error": f"{type(exc).__name__}: {exc}"[:300]})
        elapsed = time.perf_counter() - began
        report.inputs += 1
        if elapsed > report.slowest_ms / 1000:
            report.slowest_ms, report.slowest = elapsed * 1000, f"{target.name} (index {index}, {len(data)} bytes)"
        if elapsed > hang_seconds:
            report.hangs.append({"index": index, "target": target.name, "seconds": round(elapsed, 3)})
    report.max_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.send(report)
    out.close()


@dataclass
class Totals:
    inputs: int = 0
    refused: int = 0
    crashes: list[dict[str, Any]] = field(default_factory=list)
    hangs: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    slowest_ms: float = 0.0
    slowest: str = ""
    peak_rss_kb: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, report: WorkerReport) -> None:
        with self.lock:
            self._add(report)

    def _add(self, report: WorkerReport) -> None:
        self.inputs += report.inputs
        self.refused += report.refused
        self.errors += report.errors
        self.hangs += report.hangs
        if report.slowest_ms > self.slowest_ms:
            self.slowest_ms, self.slowest = report.slowest_ms, report.slowest
        self.peak_rss_kb = max(self.peak_rss_kb, report.max_rss_kb)


def _save(crash_dir: Path | None, family: str, seed: int, index: int, kind: str) -> str | None:
    if crash_dir is None:
        return None
    target, data = make_input(FAMILIES[family](), seed, index)
    crash_dir.mkdir(parents=True, exist_ok=True)
    path = crash_dir / saved_input_name(target.name, kind, seed, index)
    path.write_bytes(data)
    return str(path)


def _run_shard(seed: int, start: int, stop: int, args: argparse.Namespace, totals: Totals) -> None:
    """One worker over [start, stop); after a crash or a stuck worker, a new one resumes past the input."""
    context = multiprocessing.get_context("fork")
    while start < stop:
        progress = context.RawValue("q", start)
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(
            target=_worker, args=(args.family, seed, start, stop, args.hang_seconds, args.address_space_mb * 2**20, progress, sender), daemon=True
        )
        process.start()
        sender.close()
        last, last_change = progress.value, time.monotonic()
        report: WorkerReport | None = None
        stuck = False
        while report is None:
            if receiver.poll(0.5):
                try:
                    report = receiver.recv()
                except EOFError:
                    break  # the worker died
                continue
            if not process.is_alive() and not receiver.poll(0):
                break
            if progress.value != last:
                last, last_change = progress.value, time.monotonic()
            elif time.monotonic() - last_change > args.hang_seconds * _PROGRESS_EVERY + 30:
                stuck = True
                process.kill()
                break
        process.join()
        if report is not None:
            totals.add(report)
            return
        # The worker died or stuck somewhere in [progress, progress + _PROGRESS_EVERY): find the input alone.
        culprit = _isolate(seed, int(progress.value), min(stop, int(progress.value) + _PROGRESS_EVERY), args)
        kind = "hang" if stuck else "crash"
        entry = {"index": culprit, "exitcode": process.exitcode, "saved": _save(args.crash_dir, args.family, seed, culprit, kind), "batch_start": int(progress.value)}
        with totals.lock:
            totals.inputs += culprit + 1 - start
            (totals.hangs if stuck else totals.crashes).append(entry)
        start = culprit + 1


def _isolate(seed: int, start: int, stop: int, args: argparse.Namespace) -> int:
    """The first input in [start, stop) that kills (or stalls) a worker on its own; `stop - 1` when none
    does alone (the batch is then counted as one crash at its end, and the run resumes after it)."""
    context = multiprocessing.get_context("fork")
    for index in range(start, stop):
        receiver, sender = context.Pipe(duplex=False)
        progress = context.RawValue("q", index)
        process = context.Process(
            target=_worker, args=(args.family, seed, index, index + 1, args.hang_seconds, args.address_space_mb * 2**20, progress, sender), daemon=True
        )
        process.start()
        sender.close()
        process.join(args.hang_seconds + 30)
        if process.is_alive():
            process.kill()
            process.join()
            return index
        if process.exitcode != 0 or not receiver.poll(0):
            return index
    return stop - 1


def run(args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    totals = Totals()
    workers = max(1, args.workers)
    bounds = [args.inputs * n // workers for n in range(workers + 1)]
    # One thread per shard: each supervises its own worker process.
    threads = [
        threading.Thread(target=_run_shard, args=(args.seed, bounds[n], bounds[n + 1], args, totals)) for n in range(workers) if bounds[n] < bounds[n + 1]
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "inputs": totals.inputs,
        "refused": totals.refused,
        "accepted": totals.inputs - totals.refused - len(totals.errors),
        "crashes": len(totals.crashes),
        "hangs": len(totals.hangs),
        "errors": len(totals.errors),
        "slowest_decode_ms": round(totals.slowest_ms, 3),
        "slowest_input": totals.slowest,
        "peak_rss_mb": round(max(totals.peak_rss_kb, children) / 1024, 1),
        "address_space_limit_mb": args.address_space_mb,
        "hang_bound_seconds": args.hang_seconds,
        "seed": args.seed,
        "workers": workers,
        "family": args.family,
        "targets": len(FAMILIES[args.family]()),
        "seconds": round(time.monotonic() - began, 1),
        "crash_details": totals.crashes[:20],
        "hang_details": totals.hangs[:20],
        "error_details": totals.errors[:20],
    }


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="python -m fuzz.run", description=__doc__.splitlines()[0])
    parse.add_argument("--inputs", type=int, default=1_000_000)
    parse.add_argument("--seed", type=int, default=1)
    parse.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parse.add_argument("--address-space-mb", type=int, default=2048, help="RLIMIT_AS of each worker")
    parse.add_argument("--hang-seconds", type=float, default=1.0, help="a decode slower than this is a hang")
    parse.add_argument("--crash-dir", type=Path, default=None, help="where crashing inputs are written")
    parse.add_argument(
        "--family", choices=sorted(FAMILIES), default="decoders", help="decoders: what the proxy reads; controller: the embedded controller's handlers"
    )
    return parse


def main(argv: list[str] | None = None) -> int:
    result = run(parser().parse_args(argv))
    print(json.dumps(result, indent=2))
    return 1 if result["crashes"] or result["hangs"] or result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
