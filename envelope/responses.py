"""Reading admin responses: per-resource results and error names; the pieces authz/admin_apis.py builds each API's entry from."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from envelope.java_types import INT_MIN

AUTHORIZED_OPERATIONS_OMITTED = INT_MIN
"""An `authorized_operations` field the client did not ask for: Integer.MIN_VALUE, the schemas' default."""
NO_NODE = -1
"""The node id an answer gives where it names none: no controller (Metadata, DescribeCluster), no quorum leader."""


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


def deleted_topics(body: Any) -> list[tuple[str | None, uuid.UUID | None]]:
    """(name, id) per DeleteTopics entry; v6+ may name a topic by id only (kio writes None as the zero id)."""
    if hasattr(body, "topic_names"):
        return [(str(name), None) for name in body.topic_names]
    return [(topic.name, topic.topic_id) for topic in body.topics]


ResultReader = Callable[[Any], list[ResourceError]]


def field_results(field: str, name: Callable[[Any], str]) -> ResultReader:
    """Per-resource results listed in one field of the response, each named by `name`."""

    def results(body: Any) -> list[ResourceError]:
        return [ResourceError(name(item), int(item.error_code), getattr(item, "error_message", None)) for item in getattr(body, field)]

    return results


def partition_results(topics: str, topic_name: str, partitions: str, index: str) -> ResultReader:
    """Per-partition results nested in per-topic ones, named `topic-partition` as Kafka logs them."""

    def results(body: Any) -> list[ResourceError]:
        return [
            ResourceError(f"{getattr(t, topic_name)}-{getattr(p, index)}", int(p.error_code), getattr(p, "error_message", None))
            for t in getattr(body, topics)
            for p in getattr(t, partitions)
        ]

    return results


def quota_entity(entry: Any) -> str:
    return ",".join(f"{e.entity_type}={'<default>' if e.entity_name is None else e.entity_name}" for e in entry.entity)


def metadata_topic_error(name: str, code: int) -> dict[str, Any]:
    """A Metadata topic entry that only carries an error (unknown, or not DESCRIBE-able)."""
    return {
        "error_code": code,
        "name": name,
        "topic_id": None,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
