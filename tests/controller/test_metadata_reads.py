"""The embedded controller's Metadata, which the proxy reads when no broker listener is given for reads, in a broker's order.

KafkaApis.handleTopicMetadataRequest lists the topics that exist, then the unknown ones, then those the caller may not
describe, each name once; v0's [] asks for every topic; topic ids (v12+, KIP-516) are looked up as such, the names
beside them ignored, unknown ids first (UNKNOWN_TOPIC_ID), denied ones last by id alone.
"""

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Operation
from envelope.apis import ApiKey
from tests.controller.test_kafka_rules import ORDERS_ID, SECRET_ID, acl, call, controller, ctx

UNKNOWN_ID = uuid.UUID(int=99)
FLAGS = {"allow_auto_topic_creation": False, "include_topic_authorized_operations": False}


def _topics(answer: dict[str, Any]) -> list[tuple[str | None, uuid.UUID | None, int]]:
    return [(t["name"], t["topic_id"], int(t["error_code"])) for t in answer["topics"]]


def test_named_topics_in_kafkas_order_each_once() -> None:
    handlers = controller(acl("User:alice", Operation.DESCRIBE, "orders"))
    names = [{"name": n, "topic_id": None} for n in ("secret", "nope", "orders", "orders")]
    answer = call(handlers, ApiKey.METADATA, 12, {**FLAGS, "topics": names}, ctx("alice"))
    assert [(name, code) for name, _, code in _topics(answer)] == [
        ("orders", ErrorCode.none),
        ("secret", ErrorCode.topic_authorization_failed),
        ("nope", ErrorCode.topic_authorization_failed),
    ]
    answer = call(handlers, ApiKey.METADATA, 12, {**FLAGS, "topics": names}, ctx("admin"))
    assert [(name, code) for name, _, code in _topics(answer)] == [
        ("secret", ErrorCode.none),
        ("orders", ErrorCode.none),
        ("nope", ErrorCode.unknown_topic_or_partition),
    ]


def test_v0_empty_list_is_every_topic() -> None:
    answer = call(controller(), ApiKey.METADATA, 0, {"topics": []}, ctx("admin"))
    assert [name for name, _, _ in _topics(answer)] == ["orders", "secret"]


def test_topics_by_id() -> None:
    handlers = controller(acl("User:alice", Operation.DESCRIBE, "orders"))
    asked = [{"name": None, "topic_id": i} for i in (SECRET_ID, UNKNOWN_ID, ORDERS_ID, ORDERS_ID)] + [{"name": "secret", "topic_id": None}]
    answer = call(handlers, ApiKey.METADATA, 13, {**FLAGS, "topics": asked}, ctx("alice"))
    assert _topics(answer) == [
        (None, UNKNOWN_ID, ErrorCode.unknown_topic_id),
        ("orders", ORDERS_ID, ErrorCode.none),
        (None, SECRET_ID, ErrorCode.topic_authorization_failed),
    ]


def test_a_null_name_or_a_topic_id_before_v12_is_an_invalid_request_for_every_topic() -> None:
    """KafkaApis refuses topic ids below v12; MetadataRequest.getErrorResponse repeats each topic asked, a null name as ""."""
    zero = uuid.UUID(int=0)
    for version in (10, 11):
        asked = [{"name": None, "topic_id": ORDERS_ID}, {"name": "secret", "topic_id": None}]
        values = {**FLAGS, "include_cluster_authorized_operations": False, "topics": asked}
        answer = call(controller(), ApiKey.METADATA, version, values, ctx("admin"))
        assert _topics(answer) == [("", ORDERS_ID, ErrorCode.invalid_request), ("secret", zero, ErrorCode.invalid_request)]
        assert (answer["brokers"], answer["cluster_id"], answer["controller_id"]) == ([], None, -1)
        assert all(t["partitions"] == [] for t in answer["topics"])
