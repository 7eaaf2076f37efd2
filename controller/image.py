"""The controller's in-memory metadata image."""

import uuid
from dataclasses import dataclass, field


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """Who changed what, as seen by the controller (the forwarded identity)."""

    api: str
    principal: str
    client_address: str
    forwarded_by: str | None
    resource: str
    error_code: int


@dataclass
class MetadataImage:
    topics: dict[str, Topic] = field(default_factory=dict)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
