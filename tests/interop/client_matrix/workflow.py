"""One ordinary admin workflow, the same for every client, and the form its outcomes are compared in.

Each client runs the steps of a phase and reports, per step, what it saw in its own words (its
error names, its config sources). The matrix compares those words with what the same client saw
against Kafka directly, so only what must differ between two clusters is taken out: the topic's
name, node ids, hosts and ports, and the cluster id (checked on its own against the upstream's).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

FIRST_PHASE = ("create_topic", "describe_topic", "describe_configs", "alter_config", "read_back")
"""Before the quorum loses its leader."""
SECOND_PHASE = (
    "add_partitions",
    "describe_partitions",
    "create_acl",
    "describe_acls",
    "delete_acls",
    "acls_after_delete",
    "describe_cluster",
    "refused",
    "delete_topic",
    "after_delete",
)
"""After the quorum lost its leader: the same client, a new session."""

TOPIC_CONFIG = ("retention.ms", "3600000")
"""Set when the topic is created."""
ALTERED_CONFIG = ("retention.ms", "7200000")
"""Set by the incremental alter, then read back."""
SHOWN_CONFIGS = ("retention.ms", "cleanup.policy", "min.insync.replicas", "max.message.bytes", "segment.bytes")
"""What describe_configs shows: the set value, defaults, and the cluster-level min.insync.replicas a fresh cluster holds."""
ACL_PRINCIPAL = "User:bob"
PARTITIONS_AFTER = 3
CLUSTER_ID_SEEN = "<cluster-id>"


@dataclass
class WorkflowSpec:
    bootstrap: str
    topic: str
    admin: tuple[str, str]
    """A super user: does the work."""
    outsider: tuple[str, str]
    """A user without ACLs: refused."""
    steps: tuple[str, ...]
    security_protocol: str = "SASL_PLAINTEXT"
    extra: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkflowSpec:
        raw = json.loads(text)
        return cls(
            raw["bootstrap"],
            raw["topic"],
            tuple(raw["admin"]),  # type: ignore[arg-type]
            tuple(raw["outsider"]),  # type: ignore[arg-type]
            tuple(raw["steps"]),
            raw.get("security_protocol", "SASL_PLAINTEXT"),
            dict(raw.get("extra", {})),
        )


def cluster_id_shape(cluster_id: object) -> str:
    """What a client may see of a cluster id: Kafka's 22-character Uuid text, or what went wrong."""
    if cluster_id is None:
        return "null"
    text = str(cluster_id)
    if not text:
        return "empty"
    return "kafka-uuid" if re.fullmatch(r"[A-Za-z0-9_-]{22}", text) else f"not a Kafka Uuid: {text!r}"


def normalised(outcomes: dict[str, Any], *, topic: str, cluster_id: str | None) -> dict[str, Any]:
    """Outcomes with the topic's name and the cluster id taken out (the id is compared on its own)."""
    text = json.dumps(outcomes, sort_keys=True).replace(topic, "<topic>")
    if cluster_id:
        text = text.replace(cluster_id, CLUSTER_ID_SEEN)
    result: dict[str, Any] = json.loads(text)
    return result


__all__ = [
    "ACL_PRINCIPAL",
    "ALTERED_CONFIG",
    "CLUSTER_ID_SEEN",
    "FIRST_PHASE",
    "PARTITIONS_AFTER",
    "SECOND_PHASE",
    "SHOWN_CONFIGS",
    "TOPIC_CONFIG",
    "WorkflowSpec",
    "cluster_id_shape",
    "normalised",
]
