"""Per-API knowledge of admin responses: their error codes, and error answers.

A forwarder must sometimes answer a request itself with an error in the
embedded API's own shape (controller unreachable, envelope refused), and the
audit trail needs each resource's error code from the controller's answer.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from envelope.build import build_entity
from envelope.codec import response_schema


@dataclass(frozen=True, slots=True)
class ResourceError:
    resource: str
    error_code: int
    message: str | None

    @property
    def error_name(self) -> str:
        return error_name(self.error_code)


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def _deleted_topics(body: Any) -> list[tuple[str | None, uuid.UUID | None]]:
    """(name, id) per DeleteTopics entry; v6+ may name a topic by id only (kio writes None as the zero id)."""
    if hasattr(body, "topic_names"):
        return [(str(name), None) for name in body.topic_names]
    return [(topic.name, topic.topic_id) for topic in body.topics]


def _error_answer(api_key: int, body: Any, code: int, message: str | None) -> dict[str, Any]:
    error = {"error_code": code, "error_message": message}
    match api_key:
        case 19:
            return {
                "topics": [
                    {"name": t.name, **error, "topic_id": None, "num_partitions": -1, "replication_factor": -1, "configs": None}
                    for t in body.topics
                ]
            }
        case 20:
            return {"responses": [{"name": name, "topic_id": topic_id, **error} for name, topic_id in _deleted_topics(body)]}
        case 37:
            return {"results": [{"name": t.name, **error} for t in body.topics]}
        case 33 | 44:
            return {"responses": [{**error, "resource_type": r.resource_type, "resource_name": r.resource_name} for r in body.resources]}
        case 30:
            return {"results": [error for _ in body.creations]}
        case 31:
            return {"filter_results": [{**error, "matching_acls": []} for _ in body.filters]}
        case 43:
            return {
                "error_code": code,
                "replica_election_results": [
                    {"topic": t.topic, "partition_result": [{"partition_id": p, **error} for p in t.partitions]}
                    for t in body.topic_partitions or ()
                ],
            }
        case 45:
            return {
                **error,
                "allow_replication_factor_change": getattr(body, "allow_replication_factor_change", True),
                "responses": [
                    {"name": t.name, "partitions": [{"partition_index": p.partition_index, **error} for p in t.partitions]} for t in body.topics
                ],
            }
        case 46 | 55:
            return {**error, "topics": [], "nodes": []}
        case 49:
            return {
                "entries": [
                    {**error, "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
                    for entry in body.entries
                ]
            }
        case 51:
            users = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
            return {"results": [{"user": user, **error} for user in users]}
        case 57:
            return {**error, "results": [{"feature": u.feature, **error} for u in body.feature_updates]}
    raise ValueError(f"no error answer for api key {api_key}")


def error_response(api_key: int, api_version: int, request_body: Any, code: int, message: str | None = None) -> Any:
    """The embedded API's response with `code` for every resource of the request."""
    values = {"throttle_time": 0, **_error_answer(api_key, request_body, code, message)}
    return build_entity(response_schema(api_key, api_version), values)


def _items(field: str, name: Callable[[Any], str]) -> Callable[[Any], list[ResourceError]]:
    def items(body: Any) -> list[ResourceError]:
        return [ResourceError(name(item), int(item.error_code), getattr(item, "error_message", None)) for item in getattr(body, field)]

    return items


def _partitions(topics: str, topic_name: str, partitions: str, index: str) -> Callable[[Any], list[ResourceError]]:
    """Per-partition results nested in per-topic ones, named `topic-partition` as Kafka logs them."""

    def items(body: Any) -> list[ResourceError]:
        return [
            ResourceError(f"{getattr(t, topic_name)}-{getattr(p, index)}", int(p.error_code), getattr(p, "error_message", None))
            for t in getattr(body, topics)
            for p in getattr(t, partitions)
        ]

    return items


def _quota_entity(entry: Any) -> str:
    return ",".join(f"{e.entity_type}={'<default>' if e.entity_name is None else e.entity_name}" for e in entry.entity)


_RESPONSE_ITEMS: dict[int, Callable[[Any], list[ResourceError]]] = {
    19: _items("topics", lambda t: str(t.name)),
    20: _items("responses", lambda t: str(t.name)),
    37: _items("results", lambda t: str(t.name)),
    33: _items("responses", lambda r: str(r.resource_name)),
    44: _items("responses", lambda r: str(r.resource_name)),
    30: _items("results", lambda _: "acl"),
    31: _items("filter_results", lambda _: "acl-filter"),
    43: _partitions("replica_election_results", "topic", "partition_result", "partition_id"),
    45: _partitions("responses", "name", "partitions", "partition_index"),
    46: lambda _: [],
    49: _items("entries", _quota_entity),
    51: _items("results", lambda r: str(r.user)),
    55: _partitions("topics", "topic_name", "partitions", "partition_index"),
    57: lambda body: _items("results", lambda r: str(r.feature))(body) if hasattr(body, "results") else [],
}


def response_errors(api_key: int, response_body: Any) -> tuple[int, list[ResourceError]]:
    """(top-level error code, every per-resource result) of an admin response."""
    top = int(getattr(response_body, "error_code", 0))
    items = _RESPONSE_ITEMS.get(api_key)
    if items is None:
        return top, []
    return top, items(response_body)


SERVED_ADMIN_APIS: frozenset[int] = frozenset(_RESPONSE_ITEMS)


def metadata_topic_error(name: str, code: int) -> dict[str, Any]:
    """A Metadata topic entry that only carries an error (unknown, or not DESCRIBE-able)."""
    return {
        "error_code": code,
        "name": name,
        "topic_id": None,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": -(2**31),  # "not requested", as Kafka encodes it
    }
