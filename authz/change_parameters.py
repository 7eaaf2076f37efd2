"""What each forwarded admin API asks to change, read from its decoded body for its intent record's `request`.

docs/audit-schema.md describes the record. Each reader here takes a decoded
request body and the record's ParameterBounds and gives a JSON-ready object:
config changes by resource, topics and partitions, ACL bindings and filters,
quotas, SCRAM upsertions and deletions, token owners and renewers, feature and
voter changes. No reader ever returns a secret: a config value the bounds'
`hidden` says Kafka hides reads `[hidden]`; SCRAM upsertions keep the user,
mechanism and iterations, never the salt or the salted password; token
requests keep owners, renewers, lifetimes and periods, never the HMAC. Each
list keeps at most the bounds' entries, the rest counted by path. Pure: no IO.
"""

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from authz.model import Operation, PatternType, PermissionType, ResourceType
from envelope.config_resources import CONFIG_RESOURCE_TYPE_NAMES, CONFIG_TOPIC, OP_NAMES

Parameters = Callable[[Any, "ParameterBounds"], dict[str, Any]]
"""(decoded request body, bounds) -> what the request asks to change, as its intent record's `request` object."""

HIDDEN = "[hidden]"
"""What a sensitive config value reads as (Kafka's Password.HIDDEN)."""
T = TypeVar("T")

# ScramMechanism, UpdateFeatures' UpgradeType, ElectLeaders' ElectionType (IncrementalAlterConfigs' OpType: OP_NAMES).
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
UPGRADE_TYPES = {1: "UPGRADE", 2: "SAFE_DOWNGRADE", 3: "UNSAFE_DOWNGRADE"}
ELECTION_TYPES = {0: "PREFERRED", 1: "UNCLEAN"}


class ParameterBounds:
    """The limits one request's parameters are built under (a record's), what they left out, which config values hide."""

    def __init__(self, max_chars: int, per_list: int, total: int, hidden: Callable[[int, str], bool]) -> None:
        self.max_chars = max_chars
        self.per_list = per_list
        self.budget = total
        """List entries the whole of the parameters may still hold."""
        self.hidden = hidden
        """(ConfigResource.Type, config name) -> whether its value is hidden."""
        self.omitted: dict[str, int] = {}
        self.within = True
        """No list was cut and no string is longer than the limit: the record needs no capping copy."""

    def rows(self, items: Iterable[T] | None, where: str, row: Callable[[T], Any]) -> list[Any]:
        """The first entries of `items` (as many as the list and the whole request may still hold), each made by `row`."""
        entries = tuple(items or ())  # a decoded list is a tuple already: not copied
        keep = min(len(entries), self.per_list, max(self.budget, 0))
        self.budget -= keep
        if keep < len(entries):
            self.omitted[f"request.{where}"] = self.omitted.get(f"request.{where}", 0) + len(entries) - keep
            self.within = False
        return [row(entry) for entry in entries[:keep]]

    def text(self, value: Any) -> str | None:
        """A client's string as it is; noted when it is longer than the record's limit (cut when written)."""
        if value is None:
            return None
        text = str(value)
        if len(text) > self.max_chars:
            self.within = False
        return text


def _code_name(table: dict[int, str], code: Any) -> str:
    value = int(code)
    return table.get(value, f"UNKNOWN({value})")


def _acl_name(kind: type[ResourceType] | type[PatternType] | type[Operation] | type[PermissionType], code: Any) -> str:
    value = int(code)
    try:
        return kind(value).name
    except ValueError:
        return f"UNKNOWN({value})"


def _uuid_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _principal(kind: Any, name: Any, bounds: ParameterBounds) -> str | None:
    if name is None or name == "":
        return None
    return bounds.text(f"{'null' if kind is None else kind}:{name}")


# -- parameters: configs ----------------------------------------------------------------------------------


def _config(resource_type: int, bounds: ParameterBounds, incremental: bool) -> Callable[[Any], dict[str, Any]]:
    def row(config: Any) -> dict[str, Any]:
        name = str(config.name)
        hidden = bounds.hidden(resource_type, name)
        value = None if config.value is None else HIDDEN if hidden else bounds.text(config.value)
        operation = _code_name(OP_NAMES, config.config_operation) if incremental else "SET"
        return {"name": bounds.text(name), "operation": operation, "value": value, "sensitive": hidden}

    return row


def config_resources(incremental: bool) -> Parameters:
    def extract(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
        def resource(item: Any) -> dict[str, Any]:
            kind = int(item.resource_type)
            return {
                "resourceType": CONFIG_RESOURCE_TYPE_NAMES.get(kind, f"UNKNOWN({kind})"),
                "resourceName": bounds.text(item.resource_name),
                "configs": bounds.rows(item.configs, "resources.configs", _config(kind, bounds, incremental)),
            }

        return {"resources": bounds.rows(body.resources, "resources", resource), "validateOnly": bool(body.validate_only)}

    return extract


# -- parameters: topics and partitions --------------------------------------------------------------------


def create_topics(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def topic(item: Any) -> dict[str, Any]:
        return {
            "name": bounds.text(item.name),
            "numPartitions": int(item.num_partitions),
            "replicationFactor": int(item.replication_factor),
            "assignments": bounds.rows(
                item.assignments,
                "topics.assignments",
                lambda a: {"partitionIndex": int(a.partition_index), "brokerIds": bounds.rows(a.broker_ids, "topics.assignments.brokerIds", int)},
            ),
            "configs": bounds.rows(item.configs, "topics.configs", _config(CONFIG_TOPIC, bounds, False)),
        }

    return {"topics": bounds.rows(body.topics, "topics", topic), "validateOnly": bool(body.validate_only)}


def delete_topics(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    names = getattr(body, "topic_names", None)
    if names is not None:  # v1-v5: by name
        return {"topics": bounds.rows(names, "topics", lambda n: {"name": bounds.text(n), "topicId": None})}
    return {"topics": bounds.rows(body.topics, "topics", lambda t: {"name": bounds.text(t.name), "topicId": _uuid_or_none(t.topic_id)})}


def create_partitions(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def topic(item: Any) -> dict[str, Any]:
        assignments = None
        if item.assignments is not None:
            assignments = bounds.rows(
                item.assignments, "topics.assignments", lambda a: {"brokerIds": bounds.rows(a.broker_ids, "topics.assignments.brokerIds", int)}
            )
        return {"name": bounds.text(item.name), "count": int(item.count), "assignments": assignments}

    return {"topics": bounds.rows(body.topics, "topics", topic), "validateOnly": bool(body.validate_only)}


def elect_leaders(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    partitions = None
    if body.topic_partitions is not None:
        partitions = bounds.rows(
            body.topic_partitions,
            "topicPartitions",
            lambda t: {"topic": bounds.text(t.topic), "partitions": bounds.rows(t.partitions, "topicPartitions.partitions", int)},
        )
    # v0 has no election type: it elects the preferred leader
    return {"electionType": _code_name(ELECTION_TYPES, getattr(body, "election_type", 0)), "topicPartitions": partitions}


def alter_reassignments(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def partition(item: Any) -> dict[str, Any]:
        replicas = None if item.replicas is None else bounds.rows(item.replicas, "topics.partitions.replicas", int)
        return {"partitionIndex": int(item.partition_index), "replicas": replicas}

    return {
        "topics": bounds.rows(
            body.topics, "topics", lambda t: {"name": bounds.text(t.name), "partitions": bounds.rows(t.partitions, "topics.partitions", partition)}
        ),
        "allowReplicationFactorChange": bool(getattr(body, "allow_replication_factor_change", True)),  # v1+; true before
    }


def list_reassignments(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    if body.topics is None:
        return {"topics": None}
    return {
        "topics": bounds.rows(
            body.topics,
            "topics",
            lambda t: {"name": bounds.text(t.name), "partitionIndexes": bounds.rows(t.partition_indexes, "topics.partitionIndexes", int)},
        )
    }


# -- parameters: ACLs ---------------------------------------------------------------------------------------


def _acl_entries(field: str, pattern_field: str, suffix: str) -> Callable[[Any, ParameterBounds], dict[str, Any]]:
    """CreateAcls' bindings and DeleteAcls' filters, one shape: a filter's fields carry `_filter` (but for the
    operation and permission), and v0 has no pattern type, which Kafka reads as LITERAL."""

    def parameters(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
        version = int(body.__version__)

        def entry(item: Any) -> dict[str, Any]:
            pattern = getattr(item, pattern_field) if version >= 1 else PatternType.LITERAL
            return {
                "resourceType": _acl_name(ResourceType, getattr(item, f"resource_type{suffix}")),
                "resourceName": bounds.text(getattr(item, f"resource_name{suffix}")),
                "patternType": _acl_name(PatternType, pattern),
                "principal": bounds.text(getattr(item, f"principal{suffix}")),
                "host": bounds.text(getattr(item, f"host{suffix}")),
                "operation": _acl_name(Operation, item.operation),
                "permissionType": _acl_name(PermissionType, item.permission_type),
            }

        return {field: bounds.rows(getattr(body, field), field, entry)}

    return parameters


create_acls = _acl_entries("creations", "resource_pattern_type", "")
delete_acls = _acl_entries("filters", "pattern_type_filter", "_filter")


# -- parameters: quotas, SCRAM credentials, tokens ---------------------------------------------------------


def alter_quotas(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def entry(item: Any) -> dict[str, Any]:
        return {
            "entity": bounds.rows(
                item.entity, "entries.entity", lambda e: {"entityType": bounds.text(e.entity_type), "entityName": bounds.text(e.entity_name)}
            ),
            "ops": bounds.rows(
                item.ops, "entries.ops", lambda o: {"key": bounds.text(o.key), "value": _json_number(float(o.value)), "remove": bool(o.remove)}
            ),
        }

    return {"entries": bounds.rows(body.entries, "entries", entry), "validateOnly": bool(body.validate_only)}


def alter_scram(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    # Never the salt or the salted password: the user, the mechanism and the iterations only.
    return {
        "deletions": bounds.rows(
            body.deletions, "deletions", lambda d: {"name": bounds.text(d.name), "mechanism": _code_name(SCRAM_MECHANISMS, d.mechanism)}
        ),
        "upsertions": bounds.rows(
            body.upsertions,
            "upsertions",
            lambda u: {"name": bounds.text(u.name), "mechanism": _code_name(SCRAM_MECHANISMS, u.mechanism), "iterations": int(u.iterations)},
        ),
    }


def create_token(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {
        "owner": _principal(getattr(body, "owner_principal_type", None), getattr(body, "owner_principal_name", None), bounds),  # v3+
        "renewers": bounds.rows(body.renewers, "renewers", lambda r: _principal(r.principal_type, r.principal_name, bounds)),
        "maxLifetimeMs": int(body.max_lifetime),
    }


# Renew and expire name their token by its HMAC, a secret: never recorded.
def renew_token(body: Any, _: ParameterBounds) -> dict[str, Any]:
    return {"renewPeriodMs": int(body.renew_period)}


def expire_token(body: Any, _: ParameterBounds) -> dict[str, Any]:
    return {"expiryTimePeriodMs": int(body.expiry_time_period)}


# -- parameters: the quorum and the cluster ------------------------------------------------------------------


def update_features(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def update(item: Any) -> dict[str, Any]:
        if hasattr(item, "upgrade_type"):
            upgrade = _code_name(UPGRADE_TYPES, item.upgrade_type)
        else:  # v0: allowDowngrade reads as SAFE_DOWNGRADE (UpdateFeaturesRequest.upgradeType)
            upgrade = "SAFE_DOWNGRADE" if item.allow_downgrade else "UPGRADE"
        return {"feature": bounds.text(item.feature), "maxVersionLevel": int(item.max_version_level), "upgradeType": upgrade}

    return {"featureUpdates": bounds.rows(body.feature_updates, "featureUpdates", update), "validateOnly": bool(getattr(body, "validate_only", False))}


def add_voter(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {
        "clusterId": bounds.text(body.cluster_id),
        "voterId": int(body.voter_id),
        "voterDirectoryId": _uuid_or_none(body.voter_directory_id),
        "listeners": bounds.rows(
            body.listeners, "listeners", lambda e: {"name": bounds.text(e.name), "host": bounds.text(e.host), "port": int(e.port)}
        ),
        "ackWhenCommitted": bool(getattr(body, "ack_when_committed", True)),  # v1+; true before
    }


def remove_voter(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {"clusterId": bounds.text(body.cluster_id), "voterId": int(body.voter_id), "voterDirectoryId": _uuid_or_none(body.voter_directory_id)}


def describe_quorum(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {
        "topics": bounds.rows(
            body.topics,
            "topics",
            lambda t: {"topicName": bounds.text(t.topic_name), "partitions": bounds.rows(t.partitions, "topics.partitions", lambda p: int(p.partition_index))},
        )
    }


def unregister_broker(body: Any, _: ParameterBounds) -> dict[str, Any]:
    return {"brokerId": int(body.broker_id)}


def _json_number(value: float) -> float | str:
    """A quota value as JSON can hold it: NaN and the infinities (a client may send them; Kafka refuses them) as
    Java prints them, "NaN", "Infinity", "-Infinity", rather than the null a JSON encoder would write."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
