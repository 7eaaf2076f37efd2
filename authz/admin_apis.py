"""One entry per admin API the proxy forwards: the resources it touches, its error answer, how to read its results,
what it changes.

Adding an API means adding its entry here (and a handler to the embedded
controller): the proxy serves exactly the APIs listed, names their resources in
the audit from `resources`, answers with `error_answer` when the controller
cannot (unreachable, envelope refused), reads each resource's error code
from the controller's answer with `results`, and records what the request asks to
change in its intent record's `request` with `parameters`. The interop suite checks every
entry's operations against a real Kafka controller.

Each entry's `parameters` reader is in change_parameters.py: it reads the body the forwarding path has already
decoded, never bytes again, and never keeps a secret.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from authz import change_parameters
from authz.actions import (
    CLUSTER_OPERATIONS,
    ResourceAccess,
    acl_target,
    cluster,
    config_resource,
    token_owner,
    topics,
)
from authz.change_parameters import ParameterBounds as ParameterBounds  # the audit imports it from here
from authz.change_parameters import Parameters
from authz.model import Operation
from envelope.answer_scan import AnswerPlan, ResultFields, answer_plan
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import response_schema
from envelope.errors import ProtocolError
from envelope.responses import ResourceError, ResultReader, deleted_topics, field_results, partition_results, quota_entity
from envelope.served import Serving, check_served

ErrorAnswer = Callable[[Any, dict[str, Any]], dict[str, Any]]
"""(request body, {"error_code", "error_message"}) -> the response's values answering every resource with that error."""


@dataclass(frozen=True, slots=True)
class AdminApi:
    resources: Callable[[Any], list[ResourceAccess]]
    error_answer: ErrorAnswer
    results: ResultReader
    parameters: Parameters
    scan: ResultFields | None = None
    """Where `results` reads, for the outcome's one-pass scan of an answer (envelope/answer_scan.py); None: the answer
    is decoded fully (results named from several fields, or nested per partition)."""


def _cluster_api(key: ApiKey, error_answer: ErrorAnswer, results: ResultReader, parameters: Parameters, scan: ResultFields | None = None) -> AdminApi:
    """A cluster-level API: one operation on CLUSTER (authz.actions.CLUSTER_OPERATIONS)."""
    return AdminApi(lambda _: cluster(CLUSTER_OPERATIONS[key]), error_answer, results, parameters, scan)


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
_CONFIG_SCAN = ResultFields("responses", "resource_name")
_NO_ENTRIES: ErrorAnswer = lambda _, error: {**error, "topics": [], "nodes": []}  # noqa: E731
_NO_RESULTS: ResultReader = lambda _: []  # noqa: E731
_NO_RESOURCES: Callable[[Any], list[ResourceAccess]] = lambda _: []  # noqa: E731
_TOP_CODE_ONLY = ResultFields(None)

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
        change_parameters.create_topics,
        ResultFields("topics", "name"),
    ),
    ApiKey.DELETE_TOPICS: AdminApi(
        lambda body: topics(_deleted_names(body), Operation.DELETE),
        lambda body, error: {"responses": [{"name": name, "topic_id": topic_id, **error} for name, topic_id in deleted_topics(body)]},
        field_results("responses", lambda t: str(t.name)),
        change_parameters.delete_topics,
        ResultFields("responses", "name"),
    ),
    ApiKey.CREATE_PARTITIONS: AdminApi(
        lambda body: topics([str(t.name) for t in body.topics], Operation.ALTER),
        lambda body, error: {"results": [{"name": t.name, **error} for t in body.topics]},
        field_results("results", lambda t: str(t.name)),
        change_parameters.create_partitions,
        ResultFields("results", "name"),
    ),
    ApiKey.ALTER_CONFIGS: AdminApi(
        _configs(Operation.ALTER_CONFIGS), _config_errors, _CONFIG_RESULTS, change_parameters.config_resources(incremental=False), _CONFIG_SCAN
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: AdminApi(
        _configs(Operation.ALTER_CONFIGS), _config_errors, _CONFIG_RESULTS, change_parameters.config_resources(incremental=True), _CONFIG_SCAN
    ),
    ApiKey.CREATE_ACLS: AdminApi(
        lambda body: [acl_target(c, "resource_pattern_type") for c in body.creations],
        lambda body, error: {"results": [error for _ in body.creations]},
        field_results("results", lambda _: "acl"),
        change_parameters.create_acls,
        ResultFields("results", constant="acl"),
    ),
    ApiKey.DELETE_ACLS: AdminApi(
        lambda body: [acl_target(f, "pattern_type_filter") for f in body.filters],
        lambda body, error: {"filter_results": [{**error, "matching_acls": []} for _ in body.filters]},
        field_results("filter_results", lambda _: "acl-filter"),
        change_parameters.delete_acls,
        ResultFields("filter_results", constant="acl-filter"),
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
        change_parameters.elect_leaders,
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
        change_parameters.alter_reassignments,
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster_api(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        # Kafka's getErrorResponse lists the partitions asked about, each with no replicas.
        lambda body, error: {
            **error,
            "topics": [{"name": t.name, "partitions": [{"partition_index": p} for p in t.partition_indexes]} for t in body.topics or ()],
        },
        lambda _: [],
        change_parameters.list_reassignments,
        _TOP_CODE_ONLY,
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: _cluster_api(
        ApiKey.ALTER_CLIENT_QUOTAS,
        lambda body, error: {
            "entries": [
                {**error, "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]} for entry in body.entries
            ]
        },
        field_results("entries", quota_entity),
        change_parameters.alter_quotas,
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
        change_parameters.alter_scram,
        ResultFields("results", "user"),
    ),
    ApiKey.DESCRIBE_QUORUM: _cluster_api(
        ApiKey.DESCRIBE_QUORUM, _NO_ENTRIES, partition_results("topics", "topic_name", "partitions", "partition_index"), change_parameters.describe_quorum
    ),
    ApiKey.UPDATE_FEATURES: _cluster_api(
        ApiKey.UPDATE_FEATURES,
        # UpdateFeaturesResponse.createWithErrors: per-feature results only when the request as a whole succeeded
        lambda body, error: {
            **error,
            "results": [{"feature": u.feature, **error} for u in body.feature_updates] if not error["error_code"] else [],
        },
        lambda body: field_results("results", lambda r: str(r.feature))(body) if hasattr(body, "results") else [],
        change_parameters.update_features,
    ),
    # The token APIs carry one top-level code. Renewing and expiring are decided on the token (owner or renewer),
    # which the request names by its HMAC, a secret: no resource is named for them.
    ApiKey.CREATE_DELEGATION_TOKEN: AdminApi(token_owner, token_error_answer, _NO_RESULTS, change_parameters.create_token, _TOP_CODE_ONLY),
    ApiKey.RENEW_DELEGATION_TOKEN: AdminApi(_NO_RESOURCES, _TOKEN_TIME_ERROR, _NO_RESULTS, change_parameters.renew_token, _TOP_CODE_ONLY),
    ApiKey.EXPIRE_DELEGATION_TOKEN: AdminApi(_NO_RESOURCES, _TOKEN_TIME_ERROR, _NO_RESULTS, change_parameters.expire_token, _TOP_CODE_ONLY),
    # UnregisterBroker, AddRaftVoter and RemoveRaftVoter: getErrorResponse is the code and its message.
    ApiKey.UNREGISTER_BROKER: _cluster_api(
        ApiKey.UNREGISTER_BROKER, lambda _, error: dict(error), _NO_RESULTS, change_parameters.unregister_broker, _TOP_CODE_ONLY
    ),
    ApiKey.ADD_RAFT_VOTER: _cluster_api(ApiKey.ADD_RAFT_VOTER, lambda _, error: dict(error), _NO_RESULTS, change_parameters.add_voter, _TOP_CODE_ONLY),
    ApiKey.REMOVE_RAFT_VOTER: _cluster_api(
        ApiKey.REMOVE_RAFT_VOTER, lambda _, error: dict(error), _NO_RESULTS, change_parameters.remove_voter, _TOP_CODE_ONLY
    ),
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


@cache
def answer_scan(api_key: int, api_version: int) -> AnswerPlan | None:
    """The outcome's one-pass scan of this API version's answer (envelope/answer_scan.py); None: decode it fully."""
    api = ADMIN_APIS.get(api_key)
    return None if api is None or api.scan is None else answer_plan(api_key, api_version, api.scan)


def response_errors(api_key: int, response_body: Any) -> tuple[int, list[ResourceError]]:
    """(top-level error code, every per-resource result) of an admin response."""
    top = int(getattr(response_body, "error_code", 0))
    api = ADMIN_APIS.get(api_key)
    return top, [] if api is None else api.results(response_body)
