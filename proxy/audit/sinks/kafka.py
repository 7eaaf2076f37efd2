"""The Kafka sink: records produced to a topic (idempotent, acks=all), spooled locally while Kafka is away.

A batch is committed when Kafka acknowledged every record, or when the records it
did not take are in the spool (as durable as `audit.durability` says). Once anything
is spooled, later records go to the spool too, behind it, until a drainer task has
delivered the spool in order; only then are records produced directly again. So
records reach the topic in the order they were written (per key: the request id),
at least once: a record whose delivery timed out may still have reached Kafka and
is sent again from the spool. Consumers de-duplicate on the record's `id`.
"""

import functools
import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from proxy.audit.pipeline import AuditEntry, AuditSink
from proxy.audit.sink_kinds import SinkContext
from proxy.audit.sinks.file import last_line_of
from proxy.audit.sinks.spool import Spool
from proxy.ops.metrics import ProxyMetrics
from proxy.properties import ConfigError, Properties

log = logging.getLogger(__name__)

HEADERS = [("content-type", b"application/cloudevents+json; charset=UTF-8")]
PRODUCER_PREFIX = "audit.kafka.producer."
# librdkafka keys the sink sets itself, because its guarantees rest on them (or a dedicated key says it).
_RESERVED_PRODUCER_KEYS = {
    "bootstrap.servers": "set audit.kafka.bootstrap.servers instead",
    "metadata.broker.list": "set audit.kafka.bootstrap.servers instead",
    "enable.idempotence": "the audit sink always produces idempotently (enable.idempotence=true)",
    "acks": "the audit sink always waits for all in-sync replicas (acks=all)",
    "request.required.acks": "the audit sink always waits for all in-sync replicas (acks=all)",
    "message.timeout.ms": "set audit.kafka.delivery.timeout.ms instead",
    "delivery.timeout.ms": "set audit.kafka.delivery.timeout.ms instead",
    "transactional.id": "the audit sink does not use transactions",
}
_SECRET_MARKERS = ("password", "secret", "jaas", "key.pem", "token")
LAST_RECORD_FILE = "chain-last-record"
"""In the spool directory: the last record committed (delivered or spooled), which the next run's chain continues."""
_LAST_RECORD_MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class KafkaSinkSettings:
    bootstrap_servers: str
    topic: str
    spool_dir: Path
    delivery_timeout: float = 10.0
    """Seconds Kafka may take to acknowledge a record before it is spooled (librdkafka's message.timeout.ms)."""
    retry_backoff: float = 1.0
    """Seconds between attempts to deliver the spool while Kafka does not take it."""
    producer: dict[str, str] = field(default_factory=dict)
    """`audit.kafka.producer.<key>` passthrough, keys without the prefix."""

    def effective(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "topic": self.topic,
            "spool.dir": str(self.spool_dir),
            "delivery.timeout.ms": int(self.delivery_timeout * 1000),
            "spool.retry.backoff.ms": int(self.retry_backoff * 1000),
            "producer": {key: "[hidden]" if any(m in key for m in _SECRET_MARKERS) else value for key, value in sorted(self.producer.items())},
        }


class _LibrdkafkaLog:
    """librdkafka's own log lines, one level down: while Kafka is away it logs every reconnect attempt as an
    error, and the proxy already says (once, as a warning) that it spools."""

    def __init__(self) -> None:
        self.logger = logging.getLogger("proxy.audit.sinks.kafka.librdkafka")

    def log(self, level: int, message: str, *args: object) -> None:
        self.logger.log(logging.INFO if level >= logging.WARNING else logging.DEBUG, message, *args)


@dataclass(frozen=True)
class Message:
    key: bytes
    value: bytes
    stage: str
    line: bytes

    @classmethod
    def of_line(cls, line: bytes) -> "Message":
        """A spooled line back into a message (key and stage come from the record itself)."""
        try:
            record = json.loads(line)
            data = record.get("data") or {}
            key, stage = str(data.get("requestId") or record.get("id")), str(data.get("stage"))
        except (ValueError, AttributeError):
            key, stage = "", "unknown"  # unreadable line: still delivered, consumers see what the disk held
        return cls(key.encode(), line.rstrip(b"\n"), stage, line)


def producer_config(settings: KafkaSinkSettings) -> dict[str, Any]:
    """librdkafka settings: the operator's passthrough keys, then what the sink's guarantees need."""
    return {
        **settings.producer,
        "bootstrap.servers": settings.bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        "message.timeout.ms": int(settings.delivery_timeout * 1000),
    }


class KafkaSink:
    name = "kafka"

    def __init__(self, settings: KafkaSinkSettings, *, durability: str, metrics: ProxyMetrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics
        self.spool = Spool(settings.spool_dir, durability=durability)
        self.spooling = not self.spool.empty
        self._lock = trio.Lock()
        self._wakeup = trio.Event()
        self._fatal: str | None = None
        self._producer: Any = self._new_producer()
        # Long enough for librdkafka to report on every message (it times them out at message.timeout.ms).
        self._flush_timeout = settings.delivery_timeout + 2.0
        if metrics is not None:
            metrics.audit_spool_records.set_function(lambda: float(self.spool.records))
            metrics.audit_spool_bytes.set_function(lambda: float(self.spool.size))
            metrics.audit_spooling.set_function(lambda: 1.0 if self.spooling else 0.0)

    def _new_producer(self) -> Any:
        from confluent_kafka import Producer

        return Producer(
            {**producer_config(self.settings), "error_cb": self._on_error, "logger": _LibrdkafkaLog()}
        )

    def _on_error(self, error: Any) -> None:
        """librdkafka's global errors (brokers down, authentication): delivery reports say what matters per record."""
        if error.fatal():
            self._fatal = str(error)
            log.error("audit: the Kafka producer hit a fatal error (%s); it is recreated", error)
        else:
            log.debug("audit: Kafka producer: %s", error)

    # -- AuditSink ---------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        if self.spooling:
            log.warning(
                "audit: %d records spooled in %s by a previous run; delivering them to Kafka topic %s first",
                self.spool.records,
                self.spool.directory,
                self.settings.topic,
            )
            self._wakeup.set()
        await nursery.start(self._drain_loop)

    def commit_now(self, batch: Sequence[AuditEntry]) -> bool:
        """Never: a message is committed when the cluster acknowledges it (or the spool has it), which is a wait."""
        return False

    def last_line(self) -> bytes | None:
        """The record a run before this one committed last: the spool's newest, else the one it noted."""
        paths = [segment.path for segment in self.spool.segments] + [self.settings.spool_dir / LAST_RECORD_FILE]
        for path in reversed(paths):
            try:
                line = last_line_of(path, _LAST_RECORD_MAX_BYTES)
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("audit: cannot read %s (%s); the chain starts afresh", path, exc)
                return None
            if line is not None:
                return line
        return None

    def _note_last(self, batch: Sequence[AuditEntry]) -> None:
        """Remember the batch's last record for the next run's chain: replaced whole, never torn."""
        if not batch:
            return
        path = self.settings.spool_dir / LAST_RECORD_FILE
        try:
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_bytes(batch[-1].line)
            temporary.replace(path)
        except OSError as exc:  # the records are committed; only the next run's link to them is at stake
            log.warning("audit: cannot note the last record in %s (%s)", path, exc)

    async def commit(self, batch: Sequence[AuditEntry]) -> None:
        await self._commit(batch)
        self._note_last(batch)

    async def _commit(self, batch: Sequence[AuditEntry]) -> None:
        async with self._lock:
            if self.spooling:
                await self._spool([Message(entry.key.encode(), entry.line.rstrip(b"\n"), entry.stage, entry.line) for entry in batch])
                return
        messages = [Message(entry.key.encode(), entry.line.rstrip(b"\n"), entry.stage, entry.line) for entry in batch]
        failed, reason = await trio.to_thread.run_sync(self._deliver, messages)
        self._count_delivered([m for i, m in enumerate(messages) if i not in failed])
        if not failed:
            return
        async with self._lock:
            if not self.spooling:
                self.spooling = True
                log.warning(
                    "audit: Kafka %s did not take %d records (%s): spooling records to %s until it does",
                    self.settings.bootstrap_servers,
                    len(failed),
                    reason,
                    self.spool.directory,
                )
            await self._spool([messages[i] for i in sorted(failed)])
            self._wakeup.set()

    def deadline(self) -> float:
        return math.inf

    async def tick(self) -> None:
        return None

    async def aclose(self) -> None:
        await trio.to_thread.run_sync(self.close_now)

    def close_now(self) -> None:
        self.spool.close()
        left = self._producer.flush(0)
        if left:
            log.info("audit: %d spooled records were being sent when the proxy stopped; they stay spooled (Kafka may see them twice)", left)
        if not self.spool.empty:
            log.warning(
                "audit: %d records remain spooled in %s; they are delivered to Kafka after the next start",
                self.spool.records,
                self.spool.directory,
            )

    # -- spool -------------------------------------------------------------------------

    async def _spool(self, messages: list[Message]) -> None:
        await trio.to_thread.run_sync(self.spool.append, [message.line for message in messages])
        if self.metrics is not None:
            self.metrics.audit_spooled.inc(len(messages))
            for message in messages:
                self.metrics.audit_records_of("spool", message.stage).inc()

    async def _drain_loop(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Deliver the spool, oldest segment first, whenever there is one; then hand back to direct delivery."""
        task_status.started()
        delivered = 0
        while True:
            await self._wakeup.wait()
            async with self._lock:
                segment = await trio.to_thread.run_sync(self.spool.oldest)
                if segment is None:
                    self.spooling = False
                    self._wakeup = trio.Event()
                    log.info("audit: spool drained (%d records delivered); records go to Kafka directly again", delivered)
                    delivered = 0
                    continue
            lines = await trio.to_thread.run_sync(self.spool.read, segment)
            messages = [Message.of_line(line) for line in lines]
            # Abandoned on shutdown: the segment stays and is sent again after the next start.
            failed, reason = await trio.to_thread.run_sync(self._deliver, messages, abandon_on_cancel=True)
            self._count_delivered([m for i, m in enumerate(messages) if i not in failed])
            delivered += len(messages) - len(failed)
            async with self._lock:
                if not failed:
                    await trio.to_thread.run_sync(self.spool.remove, segment)
                elif len(failed) < len(messages):
                    await trio.to_thread.run_sync(self.spool.keep_only, segment, [messages[i].line for i in sorted(failed)])
            if failed:
                log.info("audit: Kafka still does not take spooled records (%s); next try in %.1f s", reason, self.settings.retry_backoff)
                await trio.sleep(self.settings.retry_backoff)

    # -- delivery (worker thread) ------------------------------------------------------

    def _deliver(self, messages: list[Message]) -> tuple[set[int], str | None]:
        """Produce and wait for every delivery report; the indexes Kafka did not acknowledge, and why."""
        if self._fatal is not None:
            self._fatal = None
            self._producer.flush(0)
            self._producer = self._new_producer()
        producer = self._producer
        acknowledged = [False] * len(messages)
        errors: list[str] = []

        def report(index: int, error: Any, _message: Any) -> None:
            if error is None:
                acknowledged[index] = True
            elif not errors:
                errors.append(str(error))

        deadline = time.monotonic() + self._flush_timeout
        for index, message in enumerate(messages):
            while True:
                try:
                    producer.produce(
                        self.settings.topic, value=message.value, key=message.key, headers=HEADERS, on_delivery=functools.partial(report, index)
                    )
                    break
                except BufferError:
                    # librdkafka's queue is full (Kafka slow or away): let it make room, within the deadline.
                    if time.monotonic() >= deadline:
                        errors.append("the producer queue stayed full")
                        break
                    producer.poll(0.05)
                except Exception as exc:  # KafkaException: unknown topic, fatal state, ...
                    errors.append(str(exc))
                    break
        producer.flush(max(0.0, deadline - time.monotonic()))
        failed = {index for index, ok in enumerate(acknowledged) if not ok}
        if failed and not errors:
            errors.append(f"no delivery report within {self._flush_timeout:.0f} s")
        return failed, errors[0] if errors else None

    def _count_delivered(self, messages: list[Message]) -> None:
        if self.metrics is not None:
            for message in messages:
                self.metrics.audit_records_of(self.name, message.stage).inc()


# -- the kind: audit.kafka.* ---------------------------------------------------------------


class KafkaSinkKind:
    name = "kafka"

    def parse(self, props: Properties, log_dir: Path, *, enabled: bool) -> KafkaSinkSettings | None:
        producer = {key.removeprefix(PRODUCER_PREFIX): value for key, value in props.raw.items() if key.startswith(PRODUCER_PREFIX)}
        bootstrap = props.get("audit.kafka.bootstrap.servers")
        if not enabled:
            if bootstrap or producer:
                raise ConfigError("audit.sinks", props.get("audit.sinks", "file"), "audit.kafka.* keys are set but kafka is not among the sinks")
            return None
        bootstrap = props.require("audit.kafka.bootstrap.servers")
        for key in producer:
            if not key:
                raise ConfigError(PRODUCER_PREFIX, producer[key], "names no librdkafka property")
            if key in _RESERVED_PRODUCER_KEYS:
                raise ConfigError(PRODUCER_PREFIX + key, producer[key], _RESERVED_PRODUCER_KEYS[key])
        topic = props.get("audit.kafka.topic") or "envelope-proxy-audit"
        if len(topic) > 249 or not all(c.isalnum() or c in "._-" for c in topic):
            raise ConfigError("audit.kafka.topic", topic, "a Kafka topic name: at most 249 of a-z, A-Z, 0-9, '.', '_', '-'")
        settings = KafkaSinkSettings(
            bootstrap_servers=bootstrap,
            topic=topic,
            spool_dir=Path(props.get("audit.kafka.spool.dir") or log_dir / ".kafka-spool"),
            delivery_timeout=props.int("audit.kafka.delivery.timeout.ms", 10000, minimum=1) / 1000,
            retry_backoff=props.int("audit.kafka.spool.retry.backoff.ms", 1000, minimum=1) / 1000,
            producer=producer,
        )
        _check_producer(settings)
        return settings

    def effective(self, settings: KafkaSinkSettings | None) -> dict[str, Any]:
        return {"kafka": settings.effective() if settings else None}

    def open(self, settings: KafkaSinkSettings, context: SinkContext) -> AuditSink:
        return KafkaSink(settings, durability=context.durability, metrics=context.metrics)


def _check_producer(settings: KafkaSinkSettings) -> None:
    """librdkafka judges its own keys: build a producer (it connects to nothing until asked) and name the key it refuses."""
    # confluent-kafka (librdkafka) is loaded only when this sink is configured: a file-only proxy starts without it.
    try:
        from confluent_kafka import KafkaException, Producer
    except ImportError:  # pragma: no cover - a runtime dependency, but a broken install should say what is missing
        raise ConfigError("audit.sinks", "kafka", "the Kafka sink needs the confluent-kafka package") from None

    quiet = logging.getLogger("proxy.audit.settings.librdkafka")
    quiet.disabled = True

    def refused(config: dict[str, Any]) -> str | None:
        try:
            Producer({**config, "logger": quiet})
        except KafkaException as exc:
            return str(exc.args[0].str()) if exc.args else str(exc)
        return None

    reason = refused(producer_config(settings))
    if reason is None:
        return
    core = {key: value for key, value in producer_config(settings).items() if key not in settings.producer}
    for key, value in settings.producer.items():
        if refused({**core, key: value}) is not None:
            raise ConfigError(PRODUCER_PREFIX + key, value, f"librdkafka: {reason}")
    raise ConfigError(PRODUCER_PREFIX + "*", ", ".join(sorted(settings.producer)), f"librdkafka refuses the combination: {reason}")


KIND = KafkaSinkKind()
