"""What bench/audit's steps share: one measured process (its time, CPU and the peak memory of its tree), and ratios."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import measure

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 6 * 3600.0


def _mb(value: int) -> float:
    return round(value / 1024 / 1024, 1)


def step(name: str, command: list[str], records: int, env: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    print(f"bench: {name} ...", file=sys.stderr, flush=True)
    result = measure.run(command, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    summary: dict[str, Any] = {
        "seconds": round(result.seconds, 2),
        "records_per_second": round(records / result.seconds) if result.seconds else None,
        "peak_rss_mb": _mb(result.peak_rss_bytes),
        "peak_rss_plain_sum_mb": _mb(result.peak_rss_plain_bytes),
        "cpu_seconds": result.cpu_seconds,
    }
    if result.returncode != 0:
        summary["error"] = f"exit {result.returncode}: {result.stderr.strip()[-2000:]}"
        return summary, None
    try:
        output = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else None
    except json.JSONDecodeError:
        output = None
    return summary, output


def ratio(a: dict[str, Any], b: dict[str, Any], key: str = "seconds") -> float | None:
    if "error" in a or "error" in b or not b.get(key) or a.get(key) is None:
        return None
    return round(float(a[key]) / float(b[key]), 2)
