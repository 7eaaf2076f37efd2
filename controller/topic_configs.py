"""Topic config names and value types the controller validates (Kafka's LogConfig subset)."""

from collections.abc import Callable


def _long(value: str) -> bool:
    try:
        return -(2**63) <= int(value) < 2**63
    except ValueError:
        return False


def _non_negative(value: str) -> bool:
    return _long(value) and int(value) >= 0


def _positive(value: str) -> bool:
    return _long(value) and int(value) > 0


def _boolean(value: str) -> bool:
    return value.lower() in ("true", "false")


def _ratio(value: str) -> bool:
    try:
        return 0.0 <= float(value) <= 1.0
    except ValueError:
        return False


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda value: value in choices


def _list_of(*choices: str) -> Callable[[str], bool]:
    return lambda value: all(item.strip() in choices for item in value.split(",")) and bool(value.strip())


TOPIC_CONFIGS: dict[str, Callable[[str], bool]] = {
    "cleanup.policy": _list_of("delete", "compact"),
    "compression.type": _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "delete.retention.ms": _non_negative,
    "file.delete.delay.ms": _non_negative,
    "flush.messages": _positive,
    "flush.ms": _non_negative,
    "index.interval.bytes": _non_negative,
    "max.compaction.lag.ms": _positive,
    "max.message.bytes": _non_negative,
    "message.timestamp.type": _one_of("CreateTime", "LogAppendTime"),
    "min.cleanable.dirty.ratio": _ratio,
    "min.compaction.lag.ms": _non_negative,
    "min.insync.replicas": _positive,
    "preallocate": _boolean,
    "retention.bytes": _long,
    "retention.ms": lambda v: _long(v) and int(v) >= -1,
    "segment.bytes": lambda v: _long(v) and int(v) >= 1048576,
    "segment.index.bytes": _non_negative,
    "segment.jitter.ms": _non_negative,
    "segment.ms": _positive,
    "unclean.leader.election.enable": _boolean,
    "message.downconversion.enable": _boolean,
    "local.retention.ms": lambda v: _long(v) and int(v) >= -2,
    "local.retention.bytes": lambda v: _long(v) and int(v) >= -2,
    "remote.storage.enable": _boolean,
}

LIST_CONFIGS = frozenset({"cleanup.policy"})


def config_problem(name: str, value: str | None) -> str | None:
    """Why Kafka would reject this topic config, or None."""
    check = TOPIC_CONFIGS.get(name)
    if check is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return f"Null value not supported for topic configs: {name}"
    if not check(value):
        return f"Invalid value {value} for configuration {name}"
    return None
