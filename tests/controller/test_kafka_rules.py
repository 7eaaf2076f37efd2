"""Kafka 4.3's decision rules in the embedded controller's handlers, without Kafka (the differential suite checks them against it).

Each test names the rule and the Kafka code it comes from.
"""

from __future__ import annotations

import ipaddress
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from authz import AclAuthorizer, AclBinding, Operation, PatternType, PermissionType, RequestContext, ResourceType
from authz.model import CLUSTER_NAME
from controller.acls import UnreadableRequest
from controller.handlers import Handlers
from controller.image import MetadataImage, Topic
from controller.leadership import Leadership
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import request_schema
from envelope.principal import Principal

ZERO = uuid.UUID(int=0)
ORDERS_ID, SECRET_ID = uuid.UUID(int=1), uuid.UUID(int=2)


def ctx(user: str, host: str = "127.0.0.1") -> RequestContext:
    return RequestContext(principal=Principal("User", user), client_address=ipaddress.ip_address(host), listener="CONTROLLER", security_protocol="SASL_PLAINTEXT")


def acl(principal: str, operation: Operation, name: str = "*", *, resource_type: ResourceType = ResourceType.TOPIC, deny: bool = False) -> AclBinding:
    return AclBinding(resource_type, name, PatternType.LITERAL, principal, "*", operation, PermissionType.DENY if deny else PermissionType.ALLOW)


def controller(*acls: AclBinding) -> Handlers:
    image = MetadataImage()
    image.topics["orders"] = Topic("orders", ORDERS_ID, 1, 1)
    image.topics["secret"] = Topic("secret", SECRET_ID, 1, 1)
    return Handlers(image, AclAuthorizer(["User:admin"], acls=acls), leadership=Leadership(1, active_id=1), default_partitions=1, default_replication_factor=1, broker_count=1)


def call(handlers: Handlers, api: ApiKey, version: int, values: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    return handlers.by_key[api](build_entity(request_schema(api, version), values), context)


def delete(handlers: Handlers, context: RequestContext, *topics: tuple[str | None, uuid.UUID]) -> list[tuple[str | None, uuid.UUID, int, str | None]]:
    answer = call(handlers, ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": n, "topic_id": i} for n, i in topics], "timeout": 30000}, context)
    return sorted(((r["name"], r["topic_id"], int(r["error_code"]), r["error_message"]) for r in answer["responses"]), key=str)


def test_delete_needs_describe_and_a_deny_wins_over_a_wildcard_allow() -> None:
    """ControllerApis.deleteTopics: a topic named by a caller who may not DESCRIBE it is TOPIC_AUTHORIZATION_FAILED."""
    handlers = controller(acl("User:alice", Operation.ALL), acl("User:alice", Operation.DESCRIBE, "secret", deny=True))
    assert delete(handlers, ctx("alice"), ("secret", ZERO)) == [("secret", ZERO, ErrorCode.topic_authorization_failed, "Topic authorization failed.")]
    assert "secret" in handlers.image.topics
    # By id, the name of a topic the caller may not describe is not revealed ...
    assert delete(handlers, ctx("bob"), (None, SECRET_ID)) == [(None, SECRET_ID, ErrorCode.topic_authorization_failed, "Topic authorization failed.")]
    assert delete(handlers, ctx("alice"), (None, uuid.UUID(int=9))) == [(None, uuid.UUID(int=9), ErrorCode.unknown_topic_id, "This server does not host this topic ID.")]
    assert delete(handlers, ctx("alice"), ("orders", ZERO)) == [("orders", ORDERS_ID, ErrorCode.none, None)]
    # ... and by id only DELETE counts (Kafka asks DESCRIBE only to decide whether to name it).
    assert delete(handlers, ctx("alice"), (None, SECRET_ID)) == [("secret", SECRET_ID, ErrorCode.none, None)]


def test_delete_on_the_cluster_allows_every_topic() -> None:
    handlers = controller(acl("User:alice", Operation.DELETE, CLUSTER_NAME, resource_type=ResourceType.CLUSTER))
    assert delete(handlers, ctx("alice"), ("secret", ZERO), (None, ORDERS_ID)) == sorted(
        [("secret", SECRET_ID, ErrorCode.none, None), ("orders", ORDERS_ID, ErrorCode.none, None)], key=str
    )


@pytest.mark.parametrize(
    ("topics", "expected"),
    [
        ([(None, ZERO)], [(None, ZERO, ErrorCode.invalid_request, "Neither topic name nor id were specified.")]),
        ([("orders", ORDERS_ID)], [("orders", ORDERS_ID, ErrorCode.invalid_request, "You may not specify both topic name and topic id.")]),
        ([(None, ORDERS_ID), (None, ORDERS_ID)], [(None, ORDERS_ID, ErrorCode.invalid_request, "Duplicate topic id.")]),
        ([("orders", ZERO), ("orders", ZERO)], [("orders", ZERO, ErrorCode.invalid_request, "Duplicate topic name.")]),
        ([("orders", ZERO), (None, ORDERS_ID)], [("orders", ORDERS_ID, ErrorCode.invalid_request, "The provided topic name maps to an ID that was already supplied.")]),
    ],
)
def test_delete_input_kafka_refuses_is_refused_per_topic(topics: list[tuple[str | None, uuid.UUID]], expected: list[Any]) -> None:
    handlers = controller()
    assert delete(handlers, ctx("admin"), *topics) == expected
    assert set(handlers.image.topics) == {"orders", "secret"}


def test_create_refuses_the_metadata_topic_and_hides_details_without_describe_configs() -> None:
    handlers = controller(acl("User:alice", Operation.CREATE))
    topics = [{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []} for n in ("__cluster_metadata", "fresh")]
    answer = call(handlers, ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout": 30000, "validate_only": True}, ctx("alice"))
    by_name = {r["name"]: r for r in answer["topics"]}
    assert (by_name["__cluster_metadata"]["error_code"], by_name["__cluster_metadata"]["error_message"]) == (
        ErrorCode.invalid_request,
        "Creation of internal topic __cluster_metadata is prohibited.",
    )
    fresh = by_name["fresh"]
    assert (fresh["error_code"], fresh["topic_config_error_code"], fresh["num_partitions"], fresh["replication_factor"], fresh["configs"]) == (
        ErrorCode.none,
        ErrorCode.topic_authorization_failed,
        -1,
        -1,
        [],
    )
    assert fresh["topic_id"] != ZERO


def test_delete_acls_reports_a_binding_under_every_filter_that_matches() -> None:
    read = acl("User:carol", Operation.READ, "orders")
    handlers = controller(read)
    any_filter = {"resource_name_filter": None, "pattern_type_filter": PatternType.ANY, "principal_filter": "User:carol", "host_filter": None, "permission_type": PermissionType.ANY}
    filters = [{**any_filter, "resource_type_filter": ResourceType.TOPIC, "operation": Operation.READ}, {**any_filter, "resource_type_filter": ResourceType.ANY, "operation": Operation.ANY}]
    answer = call(handlers, ApiKey.DELETE_ACLS, 3, {"filters": filters}, ctx("admin"))
    assert [[m["resource_name"] for m in r["matching_acls"]] for r in answer["filter_results"]] == [["orders"], ["orders"]]
    assert handlers.acl_store is not None and handlers.acl_store.acls == []


def test_create_acls_with_an_unknown_code_cannot_be_read() -> None:
    """CreateAclsRequest's constructor throws on UNKNOWN (0) codes: inside an Envelope, UNSUPPORTED_VERSION."""
    creation = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:x", "host": "*", "operation": 0, "permission_type": 3}
    with pytest.raises(UnreadableRequest):
        call(controller(), ApiKey.CREATE_ACLS, 3, {"creations": [creation]}, ctx("admin"))


def test_update_features_v0_has_no_validate_only() -> None:
    """Found by the controller fuzz slice: v0 of UpdateFeatures has no validate_only field."""
    values = {"timeout": 30000, "feature_updates": [{"feature": "metadata.version", "max_version_level": 1, "allow_downgrade": False}]}
    answer = call(controller(), ApiKey.UPDATE_FEATURES, 0, values, ctx("admin"))
    assert "error_code" in answer
