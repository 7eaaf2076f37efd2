"""The controller's in-memory metadata image."""

import uuid
from collections import deque
from dataclasses import dataclass, field

from controller.changes import MAX_CHANGES, Change
from envelope.principal import Principal


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


QuotaEntity = tuple[tuple[str, str | None], ...]
"""A client-quota entity: sorted (entity type, name or None for the default) pairs."""


@dataclass(frozen=True)
class StoredScramCredential:
    """What AlterUserScramCredentials stores: the salted password, never the password."""

    salt: bytes
    salted_password: bytes
    iterations: int


@dataclass(frozen=True)
class DelegationToken:
    """Kafka's TokenInformation: the HMAC is not kept, it is the secret key's HMAC of the id."""

    token_id: str
    owner: Principal
    requester: Principal
    renewers: tuple[Principal, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int


@dataclass
class MetadataImage:
    topics: dict[str, Topic] = field(default_factory=dict)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Dynamic broker configs by broker resource name; "" holds the cluster-wide defaults."""
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    client_metrics_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Client metrics subscriptions (KIP-714) by name."""
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    # user -> mechanism name (SCRAM-SHA-256 / SCRAM-SHA-512) -> credential
    scram_credentials: dict[str, dict[str, StoredScramCredential]] = field(default_factory=dict)
    finalized_features: dict[str, int] = field(default_factory=dict)
    delegation_tokens: dict[str, DelegationToken] = field(default_factory=dict)
    """By token id."""
    # The newest MAX_CHANGES changes, oldest first; add with `record`, which also counts.
    changes: deque[Change] = field(default_factory=lambda: deque(maxlen=MAX_CHANGES))
    change_count: int = 0
    """Every change ever recorded, including those the bounded log has dropped."""

    def record(self, change: Change) -> None:
        self.changes.append(change)
        self.change_count += 1
