"""CPU work of a large request, moved off the event loop.

Decoding, authorizing and answering a Metadata request that names 100,000
topics takes seconds of Python; on the event loop that would stall every other
connection. Work on a large request runs in a worker thread instead, one at a
time (a CapacityLimiter of 1 bounds the CPU and memory big requests can take
together); the interpreter hands the lock back to the event loop every
`sys.getswitchinterval()` (5 ms). kio's native reader holds the lock for a whole
call (about 60 ms for 100,000 topics on 2 cores): that is the floor.
Small requests stay inline, where a thread handoff would cost more than the work.
"""

import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import trio

_BUSY_SWITCH_INTERVAL = 0.001

# Frames and entry counts above these go to the worker thread.
LARGE_FRAME_BYTES = 64 * 1024
LARGE_ENTRY_COUNT = 2000

P = ParamSpec("P")
T = TypeVar("T")


class CpuOffload:
    def __init__(self, *, large_frame_bytes: int = LARGE_FRAME_BYTES, large_entry_count: int = LARGE_ENTRY_COUNT) -> None:
        self.large_frame_bytes = large_frame_bytes
        self.large_entry_count = large_entry_count
        self._limiter: trio.CapacityLimiter | None = None

    def _thread_limiter(self) -> trio.CapacityLimiter:
        if self._limiter is None:  # created inside trio.run, where the first large request arrives
            self._limiter = trio.CapacityLimiter(1)
        return self._limiter

    async def frame(self, size: int, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(*args)` for a frame of `size` bytes: in the worker thread when the frame is large."""
        if size < self.large_frame_bytes:
            return work(*args, **kwargs)
        return await self._in_thread(lambda: work(*args, **kwargs))

    async def entries(self, count: int, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(*args)` over `count` entries (topics, ACL decisions, resources): in the worker thread when many."""
        if count < self.large_entry_count:
            return work(*args, **kwargs)
        return await self._in_thread(lambda: work(*args, **kwargs))

    async def _in_thread(self, work: Callable[[], T]) -> T:
        async with self._thread_limiter():
            # While the worker computes, it hands the interpreter lock back every millisecond instead of every
            # five, so the event loop's turns come sooner; the default comes back when the work is done.
            interval = sys.getswitchinterval()
            sys.setswitchinterval(min(interval, _BUSY_SWITCH_INTERVAL))
            try:
                return await trio.to_thread.run_sync(work)
            finally:
                sys.setswitchinterval(interval)
