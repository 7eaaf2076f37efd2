"""The pipeline that commits audit records (CloudEvents 1.0, see docs/audit-schema.md) to sinks, and the sink contract.

Callers hand a record to `AuditLog.write`, which returns once every sink has
committed it. One writer task drains a bounded channel and commits whatever has
queued up as one batch (group commit), so concurrent requests share one flush,
one fsync or one Kafka delivery round instead of paying for their own.

When nothing is queued or being committed and every sink can commit on the spot (the file
sink at `flush` or `none`, with its file open), `write` commits the record itself instead:
one small write into the page cache costs less than the two task switches of the hand-off,
and with nothing queued there is no batch to share anyway. A failure there falls back to
the writer, whose retries follow `audit.on.failure` as for any batch.

What a sink that fails does to the caller is `audit.on.failure`: `block` retries
until the sink takes the batch (callers wait, nothing is lost), `reject` gives up
on the batch (a forwarded request whose intent was not written is answered with an
error and not forwarded; any other record is counted as lost).
"""

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

import trio

from proxy.audit.chain import CHAIN_SUFFIX_MAX_BYTES, AuditChain, FileStarter
from proxy.audit.chain_format import REASON_CLOSE
from proxy.audit.cloudevents import (
    CONNECTION_EVENT_TYPE,
    DEFAULT_LEVEL,
    DEFAULT_LIMITS,
    LEVELS,
    METADATA,
    REQUEST,
    AuditEntry,
    AuditLevels,
    RecordLimits,
)
from proxy.backoff import Backoff
from proxy.ops.metrics import ProxyMetrics

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_LEVEL", "DEFAULT_LIMITS", "LEVELS", "METADATA", "REQUEST", "AuditEntry", "AuditLevels", "AuditLog"]

# Stages of request records an excluded principal does not get; refusals of a request stay (protocol abuse).
EXCLUDABLE_STAGES = frozenset({"intent", "outcome", "local", "read"})
# What `audit.connection.events=failures` keeps.
FAILURE_STAGES = frozenset({"refused", "authentication-failed"})

ON_FAILURE_BLOCK = "block"
ON_FAILURE_REJECT = "reject"
_MAX_BATCH = 512
_QUEUE_SIZE = 4096
_SINK_RETRY = Backoff.doubling(0.05, 2.0)
"""A sink that cannot take records is tried again after 50 ms, doubling to 2 s."""
_STILL_FAILING_LOG_INTERVAL = 30.0


class AuditUnavailable(Exception):
    """A record the caller must not go on without (an intent) could not be written."""


class AuditSinkError(Exception):
    """A sink could not take a batch for a reason other than an OSError."""


class AuditSink(Protocol):
    name: str

    async def start(self, nursery: trio.Nursery) -> None:
        """Start helper tasks (the Kafka sink's spool drainer) in `nursery`, which lives as long as the writer."""
        ...

    async def commit(self, batch: Sequence[AuditEntry]) -> None:
        """Make the batch as durable as the sink promises, in order; raise OSError or AuditSinkError when it cannot."""
        ...

    def commit_now(self, batch: Sequence[AuditEntry]) -> bool:
        """True when it committed the batch on the caller's turn (no thread, no network); False when the batch needs
        the writer, as every batch does for a sink that cannot commit without waiting. Raises like `commit`."""
        ...

    def deadline(self) -> float:
        """trio time at which `tick` wants to run (time-based rotation), math.inf for never."""
        ...

    async def tick(self) -> None: ...

    async def aclose(self) -> None:
        """Publish, flush or spool what is left; called once the queue is empty."""
        ...

    def close_now(self) -> None:
        """Last resort when `aclose` was cut short: publish what can be published, without waiting."""
        ...


class AuditLog:
    """The proxy's audit pipeline: filters, a bounded queue, one writer task, the sinks."""

    def __init__(
        self,
        sinks: Sequence[AuditSink],
        *,
        on_failure: str = ON_FAILURE_BLOCK,
        connection_events: str = "all",
        excluded_principals: frozenset[str] = frozenset(),
        metrics: ProxyMetrics | None = None,
        queue_size: int = _QUEUE_SIZE,
        limits: RecordLimits = DEFAULT_LIMITS,
        levels: AuditLevels | None = None,
        chain: AuditChain | None = None,
    ) -> None:
        if on_failure not in (ON_FAILURE_BLOCK, ON_FAILURE_REJECT):
            raise ValueError(f"on_failure must be block or reject, not {on_failure!r}")
        self.sinks = list(sinks)
        self.on_failure = on_failure
        self.connection_events = connection_events
        self.excluded_principals = excluded_principals
        self.metrics = metrics
        # Records are built and encoded this much smaller (the dict way and the spliced way alike), so that
        # sealing them keeps them within audit.record.max.bytes.
        self.limits = replace(limits, max_record_bytes=limits.max_record_bytes - CHAIN_SUFFIX_MAX_BYTES)
        self.chain = chain if chain is not None else AuditChain()
        """Seals every line in the order the sinks commit them (proxy/audit/chain.py)."""
        self.levels = levels if levels is not None else AuditLevels()
        """How much each forwarded request's intent keeps (audit.level and its overrides)."""
        self.records_written = 0
        self._send, self._receive = trio.open_memory_channel[AuditEntry](queue_size)
        self._scope: trio.CancelScope | None = None
        self._in_flight: list[AuditEntry] = []
        self._finished = trio.Event()
        self._started = False
        self._closed = False
        self._pending = 0
        """Entries handed to the writer and not yet done: while there are any, records go through the queue, in order."""
        self._ticking = False
        """True while the writer ticks the sinks (a rotation in a worker thread): no record is committed on the spot."""
        # One sink only: with several, a record one of them took and another refused would go to the first twice.
        self._on_the_spot = self.sinks[0].commit_now if len(self.sinks) == 1 else None
        # Its labelled series, looked up once: two records per forwarded request are committed on the spot.
        self._commit_time_on_the_spot = metrics.audit_commit_time.labels(self.sinks[0].name) if metrics is not None and self._on_the_spot else None
        self._commit_batch = metrics.audit_commit_batch.labels() if metrics is not None else None
        if metrics is not None:
            metrics.audit_queue_depth.set_function(lambda: float(self._send.statistics().current_buffer_used))

    # -- callers -----------------------------------------------------------------------

    def wanted(self, record: dict[str, Any]) -> bool:
        """False for records the configuration leaves out (audit.connection.events, audit.excluded.principals)."""
        data = record.get("data") or {}
        stage = data.get("stage")
        if record.get("type") == CONNECTION_EVENT_TYPE:
            return self.connection_events == "all" or (self.connection_events == "failures" and stage in FAILURE_STAGES)
        if stage in EXCLUDABLE_STAGES and self.excluded_principals:
            return (data.get("authenticationInfo") or {}).get("principal") not in self.excluded_principals
        return True

    async def write(self, record: dict[str, Any], *, required: bool = False, within: bool | None = None) -> None:
        """Queue the record and wait until every sink has committed it.

        With `required` (an intent: nothing may be forwarded without it) a record that cannot be
        written raises AuditUnavailable; any other record that cannot be written is counted as lost. `within`: see
        `encode_bounded`."""
        if self.wanted(record):
            await self._submit(AuditEntry.of(record, self.limits, within=within), required)

    async def write_line(self, line: bytes, request_id: str, stage: str, principal: str, *, required: bool = False) -> None:
        """`write` for a request record spliced within the limits (record_lines.py), wanted as `wanted` says."""
        if stage not in EXCLUDABLE_STAGES or principal not in self.excluded_principals:
            entry = AuditEntry(line, request_id, stage)
            if not self._commit_on_the_spot(entry):  # the usual case first, without awaiting `_submit` for it
                await self._submit(entry, required, tried=True)

    async def _submit(self, entry: AuditEntry, required: bool, *, tried: bool = False) -> None:
        if not tried and self._commit_on_the_spot(entry):
            return
        self._pending += 1
        try:
            await self._send.send(entry)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._pending -= 1
            entry.error = AuditUnavailable("the audit pipeline is closed")
            self._count_lost([entry])
        except BaseException:
            self._pending -= 1  # cancelled: a memory channel's send that raises has not delivered the entry
            raise
        else:
            await entry.done.wait()
        if entry.error is not None and required:
            if self.metrics is not None:
                self.metrics.audit_rejected_requests.inc()
            raise AuditUnavailable(str(entry.error)) from entry.error

    def _commit_on_the_spot(self, entry: AuditEntry) -> bool:
        """True when the entry was committed by every sink on the caller's turn (see the module's docstring)."""
        if self._on_the_spot is None or self._pending or self._ticking or not self._started or self._closed:
            return False
        now = trio.current_time()
        if self.chain.due(now) is not None:
            return False  # a checkpoint goes first: the writer commits the two together
        started = time.perf_counter()
        # Sealed now, on this turn: nothing else can be sealed before the sink has it or the seal is undone.
        unsealed, chain_state = entry.line, self.chain.state()
        entry.line = self.chain.seal(unsealed, now)
        try:
            if not self._on_the_spot([entry]):
                entry.line = unsealed
                self.chain.rewind(chain_state)
                return False
        except (OSError, AuditSinkError) as exc:
            entry.line = unsealed
            self.chain.rewind(chain_state)
            # The writer retries it as it does any batch, under audit.on.failure.
            if self.metrics is not None:
                self.metrics.audit_write_errors.labels(self.sinks[0].name).inc()
            log.warning("audit sink %s could not commit a record on the spot (%s): handing it to the writer", self.sinks[0].name, exc)
            return False
        if self._commit_time_on_the_spot is not None and self._commit_batch is not None:
            self._commit_batch.observe(1)
            self._commit_time_on_the_spot.observe(time.perf_counter() - started)
        self.records_written += 1
        return True

    # -- the writer --------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The writer task. Shielded: only `aclose` ends it, after the queue is empty, so that records
        written while the proxy shuts down (disconnects, outcomes of the last requests) are kept."""
        self._started = True
        with trio.CancelScope(shield=True) as self._scope:
            try:
                async with trio.open_nursery() as helpers:
                    for sink in self.sinks:
                        await sink.start(helpers)
                    task_status.started()
                    await self._write_loop()
                    if self.chain.signing and self.chain.seq:
                        await self._commit([], checkpoint=REASON_CLOSE)
                    helpers.cancel_scope.cancel()
                for sink in self.sinks:
                    await sink.aclose()
            finally:
                self._abandon_queue()
                for sink in self.sinks:
                    try:
                        sink.close_now()
                    except OSError as exc:
                        log.error("audit sink %s could not be closed: %s", sink.name, exc)
                self._finished.set()

    async def aclose(self, timeout: float) -> None:
        """Stop taking records, commit what is queued (for at most `timeout` seconds), close the sinks."""
        self._closed = True
        self._send.close()
        if not self._started:
            for sink in self.sinks:
                sink.close_now()
            return
        with trio.CancelScope(shield=True):
            with trio.move_on_after(timeout):
                await self._finished.wait()
                return
            log.error(
                "audit: %d records still queued %.0f s after shutdown began (a sink keeps failing); giving up on them",
                self._receive.statistics().current_buffer_used,
                timeout,
            )
            assert self._scope is not None
            self._scope.cancel()
            await self._finished.wait()

    async def _write_loop(self) -> None:
        while True:
            deadline = min(self.chain.deadline(), *(sink.deadline() for sink in self.sinks))
            entry: AuditEntry | None = None
            with trio.move_on_at(deadline):
                try:
                    entry = await self._receive.receive()
                except trio.EndOfChannel:
                    return
            if entry is None:
                # A tick may rotate the file in a worker thread: no record goes to the sink on the spot meanwhile.
                self._ticking = True
                try:
                    for sink in self.sinks:
                        await self._tick(sink)
                    if self.chain.due(trio.current_time()) is not None:
                        await self._commit([])  # the `time` checkpoint, with no record to go with
                finally:
                    self._ticking = False
                continue
            batch = [entry]
            while len(batch) < _MAX_BATCH:
                try:
                    batch.append(self._receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            self._in_flight = batch
            await self._commit(batch)
            self._in_flight = []

    async def _tick(self, sink: AuditSink) -> None:
        try:
            await sink.tick()
        except OSError as exc:
            # A failed rotation keeps writing to the current file; the next deadline tries again.
            log.error("audit sink %s: rotation failed: %s", sink.name, exc)

    async def _commit(self, batch: list[AuditEntry], *, checkpoint: str | None = None) -> None:
        if self.metrics is not None:
            self.metrics.audit_commit_batch.observe(len(batch))
        chain_state = self.chain.state()
        new_file = any(isinstance(sink, FileStarter) and sink.opens_new_file() for sink in self.sinks)
        sealed = self.chain.seal_batch(batch, trio.current_time(), new_file=new_file, reason=checkpoint)
        failure: BaseException | None = None
        for index, sink in enumerate(self.sinks):
            failure = await self._commit_to(sink, sealed)
            if failure is not None:
                if index == 0:
                    self.chain.rewind(chain_state)  # no sink holds the batch: the chain goes on as if it never was
                break
        if failure is None:
            self.records_written += len(batch)
        else:
            for entry in batch:
                entry.error = failure
            self._count_lost(batch)
        self._pending -= len(batch)
        for entry in batch:
            entry.done.set()

    async def _commit_to(self, sink: AuditSink, batch: list[AuditEntry]) -> BaseException | None:
        """None once committed; the failure when `reject` gives up. `block` only returns on success."""
        failures = 0
        failing_since: float | None = None
        last_log = 0.0
        while True:
            started = time.perf_counter()
            try:
                await sink.commit(batch)
            except (OSError, AuditSinkError) as exc:
                if self.metrics is not None:
                    self.metrics.audit_write_errors.labels(sink.name).inc(len(batch))
                if self.on_failure == ON_FAILURE_REJECT:
                    log.error("audit sink %s cannot take %d records (%s): audit.on.failure=reject gives up on them", sink.name, len(batch), exc)
                    return exc
                now = time.monotonic()
                if failing_since is None:
                    failing_since = last_log = now
                    log.error("audit sink %s cannot take %d records (%s): audit.on.failure=block, retrying; requests wait", sink.name, len(batch), exc)
                elif now - last_log >= _STILL_FAILING_LOG_INTERVAL:
                    last_log = now
                    log.error("audit sink %s still failing after %.0f s: %s", sink.name, now - failing_since, exc)
                failures += 1
                await trio.sleep(_SINK_RETRY.delay(failures))
                continue
            if self.metrics is not None:
                self.metrics.audit_commit_time.labels(sink.name).observe(time.perf_counter() - started)
            if failing_since is not None:
                log.warning("audit sink %s writes again after %.1f s", sink.name, time.monotonic() - failing_since)
            return None

    def _abandon_queue(self) -> None:
        """Entries not committed when the writer stops (shutdown timeout passed): wake their writers with an error."""
        left, self._in_flight = [entry for entry in self._in_flight if not entry.done.is_set()], []
        while True:
            try:
                left.append(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        self._pending -= len(left)
        for entry in left:
            entry.error = AuditUnavailable("the audit pipeline stopped before this record was written")
            entry.done.set()
        self._count_lost(left)

    def _count_lost(self, entries: Sequence[AuditEntry]) -> None:
        if not entries:
            return
        if self.metrics is not None:
            self.metrics.audit_records_lost.inc(len(entries))
        stages = sorted({entry.stage for entry in entries})
        log.error("audit: %d records lost (stages %s)", len(entries), ", ".join(stages))
