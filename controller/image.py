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
    # Partitions whose replicas were reassigned; the others follow the default placement.
    assignments: dict[int, list[int]] = field(default_factory=dict)

    def replicas(self, partition: int, broker_ids: list[int]) -> list[int]:
        """Kafka's round-robin placement over the registered brokers unless reassigned."""
        if partition in self.assignments:
            return list(self.assignments[partition])
        count = len(broker_ids)
        return [broker_ids[(partition + r) % count] for r in range(min(self.replication_factor, count))]


@dataclass(frozen=True)
class Change:
    """Who changed what, as seen by the controller (the forwarded identity)."""

    api: str
    principal: str
    client_address: str
    forwarded_by: str | None
    resource: str
    error_code: int


QuotaEntity = tuple[tuple[str, str | None], ...]
"""A client-quota entity: sorted (entity type, name or None for the default) pairs."""


@dataclass(frozen=True)
class StoredScramCredential:
    """What AlterUserScramCredentials stores: the salted password, never the password."""

    salt: bytes
    salted_password: bytes
    iterations: int


@dataclass
class MetadataImage:
    topics: dict[str, Topic] = field(default_factory=dict)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    # user -> mechanism name (SCRAM-SHA-256 / SCRAM-SHA-512) -> credential
    scram_credentials: dict[str, dict[str, StoredScramCredential]] = field(default_factory=dict)
    finalized_features: dict[str, int] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
