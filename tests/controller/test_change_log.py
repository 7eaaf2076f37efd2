"""The controller's change log keeps the newest MAX_CHANGES entries; DescribeQuorum's offset keeps counting them all."""

import ipaddress
from typing import Any

from authz import RequestContext
from controller.changes import MAX_CHANGES, Change
from controller.handlers import Handlers
from controller.image import MetadataImage
from controller.leadership import Leadership
from controller.server import AllowEverything
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import request_schema
from envelope.principal import Principal

CONTEXT = RequestContext(
    principal=Principal("User", "admin"),
    client_address=ipaddress.ip_address("127.0.0.1"),
    listener="CONTROLLER",
    security_protocol="PLAINTEXT",
)


def _change(number: int) -> Change:
    return Change("CreateTopics", "User:admin", "127.0.0.1", None, f"topic:t{number}", 0)


def _log_end_offset(handlers: Handlers) -> Any:
    body = build_entity(
        request_schema(ApiKey.DESCRIBE_QUORUM, 2),
        {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
    )
    answer = handlers.by_key[ApiKey.DESCRIBE_QUORUM](body, CONTEXT)
    return answer["topics"][0]["partitions"][0]["high_watermark"]


def test_the_log_keeps_the_newest_changes_and_the_count_keeps_growing() -> None:
    image = MetadataImage()
    handlers = Handlers(image, AllowEverything(), leadership=Leadership(1, active_id=1), default_partitions=1, default_replication_factor=1, broker_count=1)
    for number in range(MAX_CHANGES + 5):
        image.record(_change(number))
    assert len(image.changes) == MAX_CHANGES
    assert next(iter(image.changes)) == _change(5) and image.changes[-1] == _change(MAX_CHANGES + 4)
    assert image.change_count == MAX_CHANGES + 5
    assert _log_end_offset(handlers) == MAX_CHANGES + 5


def test_handlers_record_through_the_image() -> None:
    image = MetadataImage()
    handlers = Handlers(image, AllowEverything(), leadership=Leadership(1, active_id=1), default_partitions=1, default_replication_factor=1, broker_count=1)
    body = build_entity(
        request_schema(ApiKey.CREATE_TOPICS, 7),
        {
            "topics": [{"name": "t1", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 1000,
            "validate_only": False,
        },
    )
    handlers.by_key[ApiKey.CREATE_TOPICS](body, CONTEXT)
    (change,) = image.changes
    assert (change.api, change.resource, change.error_code, type(change.error_code)) == ("CreateTopics", "topic:t1", 0, int)
    assert image.change_count == 1 and _log_end_offset(handlers) == 1
