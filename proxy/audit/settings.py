"""The `audit.*` keys of the proxy, and the audit pipeline they describe (docs/configuration.md#audit)."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from proxy.audit.bounds import RecordLimits
from proxy.audit.pipeline import ON_FAILURE_BLOCK, ON_FAILURE_REJECT, AuditLog, AuditSink
from proxy.audit.sinks.file import DURABILITY_FLUSH, DURABILITY_MODES, FileSink
from proxy.properties import ConfigError, Properties

if TYPE_CHECKING:
    from proxy.ops.metrics import ProxyMetrics

SINKS = ("file", "kafka")
ON_FAILURE = (ON_FAILURE_BLOCK, ON_FAILURE_REJECT)
CONNECTION_EVENTS = ("all", "failures", "none")
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


@dataclass(frozen=True)
class AuditSettings:
    sinks: tuple[str, ...] = ("file",)
    durability: str = DURABILITY_FLUSH
    on_failure: str = ON_FAILURE_BLOCK
    file_max_bytes: int = 64 * 1024 * 1024
    file_rotate: float | None = 300.0
    """Seconds after its first record a file is published; None = only by size and at shutdown."""
    connection_events: str = "all"
    excluded_principals: frozenset[str] = frozenset()
    kafka: KafkaSinkSettings | None = None
    limits: RecordLimits = field(default_factory=RecordLimits)

    def effective(self) -> dict[str, Any]:
        return {
            "sinks": list(self.sinks),
            "durability": self.durability,
            "on.failure": self.on_failure,
            "file.max.bytes": self.file_max_bytes,
            "file.rotate.ms": int(self.file_rotate * 1000) if self.file_rotate else 0,
            "connection.events": self.connection_events,
            "excluded.principals": sorted(self.excluded_principals),
            "kafka": self.kafka.effective() if self.kafka else None,
            "record.max.string.chars": self.limits.max_string_chars,
            "record.max.resources": self.limits.max_resources,
            "record.max.bytes": self.limits.max_record_bytes,
        }


def _choice(props: Properties, key: str, choices: tuple[str, ...], default: str) -> str:
    text = props.get(key)
    if text is None or text == "":
        return default
    value = text.strip().lower()
    if value not in choices:
        raise ConfigError(key, text, f"expected one of {', '.join(choices)}")
    return value


def _sinks(props: Properties) -> tuple[str, ...]:
    text = props.get("audit.sinks")
    names = [name.lower() for name in props.list("audit.sinks", "file")]
    if not names:
        raise ConfigError("audit.sinks", text, "needs at least one of file, kafka")
    for name in names:
        if name not in SINKS:
            raise ConfigError("audit.sinks", text, f"unknown sink {name!r} (expected file, kafka or file,kafka)")
    return tuple(dict.fromkeys(names))


def _excluded_principals(props: Properties) -> frozenset[str]:
    """Comma-separated like Confluent's exclude list; `;`-separated (as super.users) when a DN holds commas."""
    key = "audit.excluded.principals"
    text = props.get(key) or ""
    separator = ";" if ";" in text else ","
    principals = [item.strip() for item in text.split(separator) if item.strip()]
    for principal in principals:
        kind, sep, name = principal.partition(":")
        if not sep or not kind.strip() or not name.strip():
            raise ConfigError(
                key, text, f"{principal!r} is not of the form Type:name (e.g. User:monitor); separate principals whose name holds ',' with ';'"
            )
    return frozenset(principals)


def _kafka(props: Properties, log_dir: Path, wanted: bool) -> KafkaSinkSettings | None:
    producer = {key.removeprefix(PRODUCER_PREFIX): value for key, value in props.raw.items() if key.startswith(PRODUCER_PREFIX)}
    bootstrap = props.get("audit.kafka.bootstrap.servers")
    if not wanted:
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


def _check_producer(settings: KafkaSinkSettings) -> None:
    """librdkafka judges its own keys: build a producer (it connects to nothing until asked) and name the key it refuses."""
    try:
        from confluent_kafka import KafkaException, Producer
    except ImportError:  # pragma: no cover - a runtime dependency, but a broken install should say what is missing
        raise ConfigError("audit.sinks", "kafka", "the Kafka sink needs the confluent-kafka package") from None
    from proxy.audit.sinks.kafka import producer_config

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


def parse_audit_settings(props: Properties, log_dir: Path) -> AuditSettings:
    sinks = _sinks(props)
    rotate_ms = props.int("audit.file.rotate.ms", 300000, minimum=0)
    return AuditSettings(
        sinks=sinks,
        durability=_choice(props, "audit.durability", DURABILITY_MODES, DURABILITY_FLUSH),
        on_failure=_choice(props, "audit.on.failure", ON_FAILURE, ON_FAILURE_BLOCK),
        file_max_bytes=props.int("audit.file.max.bytes", 64 * 1024 * 1024, minimum=1),
        file_rotate=rotate_ms / 1000 if rotate_ms else None,
        connection_events=_choice(props, "audit.connection.events", CONNECTION_EVENTS, "all"),
        excluded_principals=_excluded_principals(props),
        kafka=_kafka(props, log_dir, "kafka" in sinks),
        limits=RecordLimits(
            max_string_chars=props.int("audit.record.max.string.chars", 1024, minimum=64),
            max_resources=props.int("audit.record.max.resources", 1000, minimum=1),
            max_record_bytes=props.int("audit.record.max.bytes", 1_048_576, minimum=4096),
        ),
    )


def open_audit_log(settings: AuditSettings, log_dir: Path, node_id: int, metrics: "ProxyMetrics | None" = None) -> AuditLog:
    """The pipeline with its sinks; files left in staging by a crash are published here."""
    sinks: list[AuditSink] = []
    if "file" in settings.sinks:
        sinks.append(
            FileSink(
                log_dir,
                node_id,
                durability=settings.durability,
                max_file_bytes=settings.file_max_bytes,
                rotate_seconds=settings.file_rotate,
                metrics=metrics,
            )
        )
    if settings.kafka is not None:
        from proxy.audit.sinks.kafka import KafkaSink

        sinks.append(KafkaSink(settings.kafka, durability=settings.durability, metrics=metrics))
    return AuditLog(
        sinks,
        on_failure=settings.on_failure,
        connection_events=settings.connection_events,
        excluded_principals=settings.excluded_principals,
        metrics=metrics,
        limits=settings.limits,
    )


@asynccontextmanager
async def audit_running(audit: AuditLog, shutdown_timeout: float) -> AsyncIterator[AuditLog]:
    """The writer runs for the body; on the way out (even when cancelled) queued records are committed
    for at most `shutdown_timeout` seconds and the sinks are closed (files published)."""
    async with trio.open_nursery() as nursery:
        await nursery.start(audit.run)
        try:
            yield audit
        finally:
            await audit.aclose(shutdown_timeout)
