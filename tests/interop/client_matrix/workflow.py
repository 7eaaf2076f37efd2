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

FIRST_PHASE = (
    "create_topic",
    "describe_topic",
    "describe_configs",
    "alter_config",
    "read_back",
    "broker_list",
    "broker_configs",
    "elect_leaders",
    "list_reassignments",
)
"""Before the quorum loses its leader (so every broker is up and the topic's one partition has its preferred leader)."""
SECOND_PHASE = (
    "add_partitions",
    "describe_partitions",
    "create_acl",
    "describe_acls",
    "delete_acls",
    "acls_after_delete",
    "client_quotas",
    "scram_credentials",
    "describe_cluster",
    "refused",
    "delete_topic",
    "after_delete",
)
"""After the quorum lost its leader: the same client, a new session."""
CLUSTER_STEPS = ("broker_list", "broker_configs", "elect_leaders", "list_reassignments", "client_quotas", "scram_credentials")
"""Steps a client runs only where its admin API has the call (test_client_matrix.CLIENT_STEPS):

- broker_list: the broker ids and controller id of every answer the client gets before a topic describe, of
  the topic describe itself where the client shows it, and after it (Metadata with no topics, Metadata with
  the topic, DescribeCluster), as `{"views": {name: {"brokers": [ids], "addresses": ["host:port"], "controller": id}
  or an error}}`;
- broker_configs: DescribeConfigs BROKER for every broker id those views list, as
  `{"by_id": {id: {"error", "has_configs", "min.insync.replicas"}}}`;
- elect_leaders: ElectLeaders PREFERRED for the topic's partition 0 (Kafka: ELECTION_NOT_NEEDED);
- list_reassignments: ListPartitionReassignments for that partition (none);
- client_quotas: AlterClientQuotas on user `<topic>-quota`, DescribeClientQuotas until seen, remove, describe;
- scram_credentials: AlterUserScramCredentials upserting SCRAM-SHA-256 for `<topic>-scram`, describe, delete,
  describe.
"""

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


def broker_views_seen(outcome: Any) -> Any:
    """What broker_list compares: not the ids (a proxy lists its own node id beside the cluster's brokers, all at
    its own address), but that every answer lists the same set, that it is not empty, and that each answer's
    controller is in it; the brokers' addresses (through the proxy, the proxy's own: a client told of another
    address would go round it), and which answers the client got, and which failed."""
    views = outcome.get("views") if isinstance(outcome, dict) else None
    if not isinstance(views, dict):
        return outcome
    listed = {name: tuple(view["brokers"]) for name, view in views.items() if isinstance(view, dict) and "brokers" in view}
    controllers = [view["controller"] for view in views.values() if isinstance(view, dict) and "controller" in view]
    addresses = {address for view in views.values() if isinstance(view, dict) for address in view.get("addresses", [])}
    return {
        "views": sorted(views),
        "addresses": sorted(addresses),
        "failed": {name: view for name, view in views.items() if isinstance(view, str) and view != "ok"},
        "same_brokers_in_every_view": len(set(listed.values())) <= 1,
        "brokers_listed": bool(listed) and all(listed.values()),
        "controller_is_listed": all(controller in ids for controller in controllers for ids in listed.values()),
    }


def broker_configs_seen(outcome: Any) -> Any:
    """What broker_configs compares: the distinct outcomes over every listed broker id (each id's own answer is in
    the raw outcome), so a cluster of one broker and a proxy that lists more compare alike when every id answers."""
    by_id = outcome.get("by_id") if isinstance(outcome, dict) else None
    if not isinstance(by_id, dict):
        return outcome
    distinct = {json.dumps(answer, sort_keys=True) for answer in by_id.values()}
    return {"described_any": bool(by_id), "every_listed_broker": [json.loads(answer) for answer in sorted(distinct)]}


SEEN = {"broker_list": broker_views_seen, "broker_configs": broker_configs_seen}


def normalised(outcomes: dict[str, Any], *, topic: str, cluster_id: str | None, bootstrap: str | None = None) -> dict[str, Any]:
    """Outcomes with the topic's name, the cluster id (compared on its own) and the address the client was given
    taken out, and the broker steps reduced to what they compare (SEEN)."""
    text = json.dumps(outcomes, sort_keys=True).replace(topic, "<topic>")
    if bootstrap:
        text = text.replace(f'"{bootstrap}"', '"<bootstrap>"')
    if cluster_id:
        text = text.replace(cluster_id, CLUSTER_ID_SEEN)
    result: dict[str, Any] = json.loads(text)
    return {step: SEEN[step](outcome) if step in SEEN else outcome for step, outcome in result.items()}


__all__ = [
    "ACL_PRINCIPAL",
    "ALTERED_CONFIG",
    "CLUSTER_ID_SEEN",
    "CLUSTER_STEPS",
    "FIRST_PHASE",
    "PARTITIONS_AFTER",
    "SECOND_PHASE",
    "SHOWN_CONFIGS",
    "TOPIC_CONFIG",
    "WorkflowSpec",
    "broker_configs_seen",
    "broker_views_seen",
    "cluster_id_shape",
    "normalised",
]
