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
    raise ValueError(f"no error answer for api key {api_key}")


def error_response(api_key: int, api_version: int, request_body: Any, code: int, message: str | None = None) -> Any:
    """The embedded API's response with `code` for every resource of the request."""
    values = {"throttle_time": 0, **_error_answer(api_key, request_body, code, message)}
    return build_entity(response_schema(api_key, api_version), values)


def _items(body: Any, field: str, name: Callable[[Any], str]) -> list[ResourceError]:
    return [ResourceError(name(item), int(item.error_code), getattr(item, "error_message", None)) for item in getattr(body, field)]


_RESPONSE_ITEMS: dict[int, tuple[str, Callable[[Any], str]]] = {
    19: ("topics", lambda t: str(t.name)),
    20: ("responses", lambda t: str(t.name)),
    37: ("results", lambda t: str(t.name)),
    33: ("responses", lambda r: str(r.resource_name)),
    44: ("responses", lambda r: str(r.resource_name)),
    30: ("results", lambda _: "acl"),
    31: ("filter_results", lambda _: "acl-filter"),
}


def response_errors(api_key: int, response_body: Any) -> tuple[int, list[ResourceError]]:
    """(top-level error code, every per-resource result) of an admin response."""
    top = int(getattr(response_body, "error_code", 0))
    spec = _RESPONSE_ITEMS.get(api_key)
    if spec is None:
        return top, []
    return top, _items(response_body, *spec)


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
