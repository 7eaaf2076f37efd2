"""Counts trio's task steps in a bench process (`run.py --task-steps`); Python imports it at start-up.

When BENCH_TASK_STEPS names a folder, every `trio.run` of the process gets an instrument that
counts task steps and the time spent inside them, and on SIGUSR1 the process writes its totals
to `<folder>/<pid>.json`. run.py signals the measured processes as a window begins and ends, and
divides by the window's requests: two forwarders with the same steps per request differ only in
what each step costs.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

FOLDER = os.environ.get("BENCH_TASK_STEPS")

if FOLDER:
    import trio

    folder = Path(FOLDER)

    class StepCounter(trio.abc.Instrument):
        def __init__(self) -> None:
            self.steps = 0
            self.seconds = 0.0
            self.began = 0.0

        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            self.began = time.perf_counter()

        def after_task_step(self, task: trio.lowlevel.Task) -> None:
            self.steps += 1
            self.seconds += time.perf_counter() - self.began

    counter = StepCounter()
    plain_run = trio.run

    def counted_run(*args: Any, **kwargs: Any) -> Any:
        kwargs["instruments"] = [*kwargs.get("instruments", ()), counter]
        return plain_run(*args, **kwargs)

    setattr(trio, "run", counted_run)  # noqa: B010 (before any module binds trio.run to a name of its own)

    def write_totals(signum: int, frame: FrameType | None) -> None:
        target = folder / f"{os.getpid()}.json"
        partial = target.with_suffix(".partial")
        partial.write_text(json.dumps({"steps": counter.steps, "seconds": counter.seconds}))
        os.replace(partial, target)

    signal.signal(signal.SIGUSR1, write_totals)
