"""One entry per admin API the proxy forwards: the resources it touches, its error answer, how to read its results,
what it changes.

Adding an API means adding its entry here (and a handler to the embedded
controller): the proxy serves exactly the APIs listed, names their resources in
the audit from `resources`, answers with `error_answer` when the controller
cannot (unreachable, envelope refused), reads each resource's error code
from the controller's answer with `results`, and records what the request asks to
change in its intent record's `request` with `parameters`. The interop suite checks every
entry's operations against a real Kafka controller.

The parameters are read from the body the forwarding path has already decoded, never from bytes again, and never
hold a secret: a config value the caller's `hidden` says Kafka hides reads `[hidden]`; SCRAM upsertions keep the
user, mechanism and iterations, never the salt or the salted password; token requests keep owners, renewers,
lifetimes and periods, never the HMAC. Each list keeps at most the bounds' entries, the rest counted by path.
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from authz.actions import (
    CLUSTER_OPERATIONS,
    CONFIG_BROKER,
    CONFIG_BROKER_LOGGER,
    CONFIG_TOPIC,
    ResourceAccess,
    acl_target,
    cluster,
    config_resource,
    token_owner,
    topics,
)
from authz.model import Operation, PatternType, PermissionType, ResourceType
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import response_schema
from envelope.errors import ProtocolError
from envelope.responses import ResourceError, ResultReader, deleted_topics, field_results, partition_results, quota_entity
from envelope.served import Serving, check_served

ErrorAnswer = Callable[[Any, dict[str, Any]], dict[str, Any]]
"""(request body, {"error_code", "error_message"}) -> the response's values answering every resource with that error."""
Parameters = Callable[[Any, "ParameterBounds"], dict[str, Any]]
"""(decoded request body, bounds) -> what the request asks to change, as its intent record's `request` object."""


@dataclass(frozen=True, slots=True)
class AdminApi:
    resources: Callable[[Any], list[ResourceAccess]]
    error_answer: ErrorAnswer
    results: ResultReader
    parameters: "Parameters"


def _cluster_api(key: ApiKey, error_answer: ErrorAnswer, results: ResultReader, parameters: "Parameters") -> AdminApi:
    """A cluster-level API: one operation on CLUSTER (authz.actions.CLUSTER_OPERATIONS)."""
    return AdminApi(lambda _: cluster(CLUSTER_OPERATIONS[key]), error_answer, results, parameters)


def _deleted_names(body: Any) -> list[str]:
    names = getattr(body, "topic_names", None)
    if names is None:
        names = [t.name or str(t.topic_id) for t in body.topics]
    return [str(n) for n in names]


def _configs(operation: Operation) -> Callable[[Any], list[ResourceAccess]]:
    return lambda body: [config_resource(int(r.resource_type), str(r.resource_name), operation) for r in body.resources]


def _config_errors(body: Any, error: dict[str, Any]) -> dict[str, Any]:
    return {"responses": [{**error, "resource_type": r.resource_type, "resource_name": r.resource_name} for r in body.resources]}


def _java_order(text: str) -> bytes:
    """The key that sorts strings as Java's String.compareTo does (by UTF-16 code unit)."""
    return text.encode("utf-16-be", "surrogatepass")


_CONFIG_RESULTS = field_results("responses", lambda r: str(r.resource_name))
_NO_ENTRIES: ErrorAnswer = lambda _, error: {**error, "topics": [], "nodes": []}  # noqa: E731
_NO_RESULTS: ResultReader = lambda _: []  # noqa: E731
_NO_RESOURCES: Callable[[Any], list[ResourceAccess]] = lambda _: []  # noqa: E731

ERROR_TIMESTAMP = -1
"""DelegationTokenManager.ERROR_TIMESTAMP: the times of a token answer that holds no token."""


def token_error_answer(_: Any, error: dict[str, Any]) -> dict[str, Any]:
    """CreateDelegationTokenRequest.getErrorResponse: owner and requester User:ANONYMOUS, no token (times -1)."""
    return {
        "error_code": error["error_code"],
        "principal_type": "User",
        "principal_name": "ANONYMOUS",
        "token_requester_principal_type": "User",
        "token_requester_principal_name": "ANONYMOUS",
        "issue_timestamp": ERROR_TIMESTAMP,
        "expiry_timestamp": ERROR_TIMESTAMP,
        "max_timestamp": ERROR_TIMESTAMP,
        "token_id": "",
        "hmac": b"",
    }


# Renew/ExpireDelegationTokenRequest.getErrorResponse: the code, and the expiry left at its default, 0.
_TOKEN_TIME_ERROR: ErrorAnswer = lambda _, error: {"error_code": error["error_code"], "expiry_timestamp": 0}  # noqa: E731




# -- what a change changes: each API's parameters, for its intent record's `request` (docs/audit-schema.md) -----------

CONFIG_CLIENT_METRICS = 16  # ConfigResource.Type, beside authz/actions.py's TOPIC, BROKER and BROKER_LOGGER
CONFIG_GROUP = 32
HIDDEN = "[hidden]"
"""What a sensitive config value reads as (Kafka's Password.HIDDEN)."""
CONFIG_RESOURCE_TYPE_NAMES = {
    CONFIG_TOPIC: "TOPIC",
    CONFIG_BROKER: "BROKER",
    CONFIG_BROKER_LOGGER: "BROKER_LOGGER",
    CONFIG_CLIENT_METRICS: "CLIENT_METRICS",
    CONFIG_GROUP: "GROUP",
}
T = TypeVar("T")

# IncrementalAlterConfigs' OpType, ScramMechanism, UpdateFeatures' UpgradeType, ElectLeaders' ElectionType.
CONFIG_OPERATIONS = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}
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
        operation = _code_name(CONFIG_OPERATIONS, config.config_operation) if incremental else "SET"
        return {"name": bounds.text(name), "operation": operation, "value": value, "sensitive": hidden}

    return row


def _config_resources(incremental: bool) -> Parameters:
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


def _create_topics(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
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


def _delete_topics(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    names = getattr(body, "topic_names", None)
    if names is not None:  # v1-v5: by name
        return {"topics": bounds.rows(names, "topics", lambda n: {"name": bounds.text(n), "topicId": None})}
    return {"topics": bounds.rows(body.topics, "topics", lambda t: {"name": bounds.text(t.name), "topicId": _uuid_or_none(t.topic_id)})}


def _create_partitions(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def topic(item: Any) -> dict[str, Any]:
        assignments = None
        if item.assignments is not None:
            assignments = bounds.rows(
                item.assignments, "topics.assignments", lambda a: {"brokerIds": bounds.rows(a.broker_ids, "topics.assignments.brokerIds", int)}
            )
        return {"name": bounds.text(item.name), "count": int(item.count), "assignments": assignments}

    return {"topics": bounds.rows(body.topics, "topics", topic), "validateOnly": bool(body.validate_only)}


def _elect_leaders(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    partitions = None
    if body.topic_partitions is not None:
        partitions = bounds.rows(
            body.topic_partitions,
            "topicPartitions",
            lambda t: {"topic": bounds.text(t.topic), "partitions": bounds.rows(t.partitions, "topicPartitions.partitions", int)},
        )
    # v0 has no election type: it elects the preferred leader
    return {"electionType": _code_name(ELECTION_TYPES, getattr(body, "election_type", 0)), "topicPartitions": partitions}


def _alter_reassignments(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def partition(item: Any) -> dict[str, Any]:
        replicas = None if item.replicas is None else bounds.rows(item.replicas, "topics.partitions.replicas", int)
        return {"partitionIndex": int(item.partition_index), "replicas": replicas}

    return {
        "topics": bounds.rows(
            body.topics, "topics", lambda t: {"name": bounds.text(t.name), "partitions": bounds.rows(t.partitions, "topics.partitions", partition)}
        ),
        "allowReplicationFactorChange": bool(getattr(body, "allow_replication_factor_change", True)),  # v1+; true before
    }


def _list_reassignments(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
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


_create_acls = _acl_entries("creations", "resource_pattern_type", "")
_delete_acls = _acl_entries("filters", "pattern_type_filter", "_filter")


# -- parameters: quotas, SCRAM credentials, tokens ---------------------------------------------------------


def _alter_quotas(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
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


def _alter_scram(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
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


def _create_token(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {
        "owner": _principal(getattr(body, "owner_principal_type", None), getattr(body, "owner_principal_name", None), bounds),  # v3+
        "renewers": bounds.rows(body.renewers, "renewers", lambda r: _principal(r.principal_type, r.principal_name, bounds)),
        "maxLifetimeMs": int(body.max_lifetime),
    }


# Renew and expire name their token by its HMAC, a secret: never recorded.
def _renew_token(body: Any, _: ParameterBounds) -> dict[str, Any]:
    return {"renewPeriodMs": int(body.renew_period)}


def _expire_token(body: Any, _: ParameterBounds) -> dict[str, Any]:
    return {"expiryTimePeriodMs": int(body.expiry_time_period)}


# -- parameters: the quorum and the cluster ------------------------------------------------------------------


def _update_features(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    def update(item: Any) -> dict[str, Any]:
        if hasattr(item, "upgrade_type"):
            upgrade = _code_name(UPGRADE_TYPES, item.upgrade_type)
        else:  # v0: allowDowngrade reads as SAFE_DOWNGRADE (UpdateFeaturesRequest.upgradeType)
            upgrade = "SAFE_DOWNGRADE" if item.allow_downgrade else "UPGRADE"
        return {"feature": bounds.text(item.feature), "maxVersionLevel": int(item.max_version_level), "upgradeType": upgrade}

    return {"featureUpdates": bounds.rows(body.feature_updates, "featureUpdates", update), "validateOnly": bool(getattr(body, "validate_only", False))}


def _add_voter(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {
        "clusterId": bounds.text(body.cluster_id),
        "voterId": int(body.voter_id),
        "voterDirectoryId": _uuid_or_none(body.voter_directory_id),
        "listeners": bounds.rows(
            body.listeners, "listeners", lambda e: {"name": bounds.text(e.name), "host": bounds.text(e.host), "port": int(e.port)}
        ),
        "ackWhenCommitted": bool(getattr(body, "ack_when_committed", True)),  # v1+; true before
    }


def _remove_voter(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {"clusterId": bounds.text(body.cluster_id), "voterId": int(body.voter_id), "voterDirectoryId": _uuid_or_none(body.voter_directory_id)}


def _describe_quorum(body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    return {
        "topics": bounds.rows(
            body.topics,
            "topics",
            lambda t: {"topicName": bounds.text(t.topic_name), "partitions": bounds.rows(t.partitions, "topics.partitions", lambda p: int(p.partition_index))},
        )
    }


def _unregister_broker(body: Any, _: ParameterBounds) -> dict[str, Any]:
    return {"brokerId": int(body.broker_id)}


def _json_number(value: float) -> float | str:
    """A quota value as JSON can hold it: NaN and the infinities (a client may send them; Kafka refuses them) as
    Java prints them, "NaN", "Infinity", "-Infinity", rather than the null a JSON encoder would write."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


ADMIN_APIS: dict[int, AdminApi] = {
    ApiKey.CREATE_TOPICS: AdminApi(
        lambda body: topics([str(t.name) for t in body.topics], Operation.CREATE),
        lambda body, error: {
            "topics": [
                {"name": t.name, **error, "topic_id": None, "num_partitions": -1, "replication_factor": -1, "configs": None}
                for t in body.topics
            ]
        },
        field_results("topics", lambda t: str(t.name)),
        _create_topics,
    ),
    ApiKey.DELETE_TOPICS: AdminApi(
        lambda body: topics(_deleted_names(body), Operation.DELETE),
        lambda body, error: {"responses": [{"name": name, "topic_id": topic_id, **error} for name, topic_id in deleted_topics(body)]},
        field_results("responses", lambda t: str(t.name)),
        _delete_topics,
    ),
    ApiKey.CREATE_PARTITIONS: AdminApi(
        lambda body: topics([str(t.name) for t in body.topics], Operation.ALTER),
        lambda body, error: {"results": [{"name": t.name, **error} for t in body.topics]},
        field_results("results", lambda t: str(t.name)),
        _create_partitions,
    ),
    ApiKey.ALTER_CONFIGS: AdminApi(_configs(Operation.ALTER_CONFIGS), _config_errors, _CONFIG_RESULTS, _config_resources(incremental=False)),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: AdminApi(
        _configs(Operation.ALTER_CONFIGS), _config_errors, _CONFIG_RESULTS, _config_resources(incremental=True)
    ),
    ApiKey.CREATE_ACLS: AdminApi(
        lambda body: [acl_target(c, "resource_pattern_type") for c in body.creations],
        lambda body, error: {"results": [error for _ in body.creations]},
        field_results("results", lambda _: "acl"),
        _create_acls,
    ),
    ApiKey.DELETE_ACLS: AdminApi(
        lambda body: [acl_target(f, "pattern_type_filter") for f in body.filters],
        lambda body, error: {"filter_results": [{**error, "matching_acls": []} for _ in body.filters]},
        field_results("filter_results", lambda _: "acl-filter"),
        _delete_acls,
    ),
    ApiKey.ELECT_LEADERS: _cluster_api(
        ApiKey.ELECT_LEADERS,
        lambda body, error: {
            "error_code": error["error_code"],
            "replica_election_results": [
                {"topic": t.topic, "partition_result": [{"partition_id": p, **error} for p in t.partitions]} for t in body.topic_partitions or ()
            ],
        },
        partition_results("replica_election_results", "topic", "partition_result", "partition_id"),
        _elect_leaders,
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _cluster_api(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        lambda body, error: {
            **error,  # allow_replication_factor_change (v1+) keeps its default, true, as in Kafka's getErrorResponse
            "responses": [
                {"name": t.name, "partitions": [{"partition_index": p.partition_index, **error} for p in t.partitions]} for t in body.topics
            ],
        },
        partition_results("responses", "name", "partitions", "partition_index"),
        _alter_reassignments,
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster_api(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        # Kafka's getErrorResponse lists the partitions asked about, each with no replicas.
        lambda body, error: {
            **error,
            "topics": [{"name": t.name, "partitions": [{"partition_index": p} for p in t.partition_indexes]} for t in body.topics or ()],
        },
        lambda _: [],
        _list_reassignments,
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: _cluster_api(
        ApiKey.ALTER_CLIENT_QUOTAS,
        lambda body, error: {
            "entries": [
                {**error, "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]} for entry in body.entries
            ]
        },
        field_results("entries", quota_entity),
        _alter_quotas,
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _cluster_api(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        lambda body, error: {
            # each user once, sorted as Java sorts strings (UTF-16 code units)
            "results": [
                {"user": user, **error}
                for user in sorted({d.name for d in body.deletions} | {u.name for u in body.upsertions}, key=_java_order)
            ]
        },
        field_results("results", lambda r: str(r.user)),
        _alter_scram,
    ),
    ApiKey.DESCRIBE_QUORUM: _cluster_api(
        ApiKey.DESCRIBE_QUORUM, _NO_ENTRIES, partition_results("topics", "topic_name", "partitions", "partition_index"), _describe_quorum
    ),
    ApiKey.UPDATE_FEATURES: _cluster_api(
        ApiKey.UPDATE_FEATURES,
        # UpdateFeaturesResponse.createWithErrors: per-feature results only when the request as a whole succeeded
        lambda body, error: {
            **error,
            "results": [{"feature": u.feature, **error} for u in body.feature_updates] if not error["error_code"] else [],
        },
        lambda body: field_results("results", lambda r: str(r.feature))(body) if hasattr(body, "results") else [],
        _update_features,
    ),
    # The token APIs carry one top-level code. Renewing and expiring are decided on the token (owner or renewer),
    # which the request names by its HMAC, a secret: no resource is named for them.
    ApiKey.CREATE_DELEGATION_TOKEN: AdminApi(token_owner, token_error_answer, _NO_RESULTS, _create_token),
    ApiKey.RENEW_DELEGATION_TOKEN: AdminApi(_NO_RESOURCES, _TOKEN_TIME_ERROR, _NO_RESULTS, _renew_token),
    ApiKey.EXPIRE_DELEGATION_TOKEN: AdminApi(_NO_RESOURCES, _TOKEN_TIME_ERROR, _NO_RESULTS, _expire_token),
    # UnregisterBroker, AddRaftVoter and RemoveRaftVoter: getErrorResponse is the code and its message.
    ApiKey.UNREGISTER_BROKER: _cluster_api(ApiKey.UNREGISTER_BROKER, lambda _, error: dict(error), _NO_RESULTS, _unregister_broker),
    ApiKey.ADD_RAFT_VOTER: _cluster_api(ApiKey.ADD_RAFT_VOTER, lambda _, error: dict(error), _NO_RESULTS, _add_voter),
    ApiKey.REMOVE_RAFT_VOTER: _cluster_api(ApiKey.REMOVE_RAFT_VOTER, lambda _, error: dict(error), _NO_RESULTS, _remove_voter),
}

SERVED_ADMIN_APIS: frozenset[int] = frozenset(ADMIN_APIS)
check_served("authz/admin_apis.py ADMIN_APIS", SERVED_ADMIN_APIS, Serving.FORWARD)


def resources_of(api_key: int, body: Any) -> list[ResourceAccess]:
    """What a decoded admin request touches, with the operation Kafka checks.

    Raises ProtocolError for a body whose resources cannot be named (the caller
    refuses it: a mutation is never forwarded without its resources)."""
    api = ADMIN_APIS.get(api_key)
    if api is None:
        return []
    try:
        return api.resources(body)
    except (TypeError, AttributeError, ValueError) as exc:
        raise ProtocolError(f"cannot name the resources of api key {api_key}: {exc}") from exc


def request_parameters(api_key: int, body: Any, bounds: ParameterBounds) -> dict[str, Any]:
    """What a decoded admin request asks to change (its intent record's `request`), built within `bounds`.

    A body whose parameters cannot be read (it decoded, so this would be a bug) gives `{"unreadable": <why>}`:
    its resources were named, so it is still recorded and forwarded."""
    api = ADMIN_APIS.get(api_key)
    if api is None:
        return {}
    try:
        return api.parameters(body, bounds)
    except (TypeError, AttributeError, ValueError, KeyError) as exc:
        return {"unreadable": bounds.text(f"{type(exc).__name__}: {exc}")}


def error_response(api_key: int, api_version: int, request_body: Any, code: int, message: str | None = None) -> Any:
    """The embedded API's response with `code` for every resource of the request."""
    api = ADMIN_APIS.get(api_key)
    if api is None:
        raise ValueError(f"no error answer for api key {api_key}")
    values = {"throttle_time": 0, **api.error_answer(request_body, {"error_code": code, "error_message": message})}
    return build_entity(response_schema(api_key, api_version), values)


def response_errors(api_key: int, response_body: Any) -> tuple[int, list[ResourceError]]:
    """(top-level error code, every per-resource result) of an admin response."""
    top = int(getattr(response_body, "error_code", 0))
    api = ADMIN_APIS.get(api_key)
    return top, [] if api is None else api.results(response_body)
