"""What the audit names for the token and membership APIs: what Kafka's authorizer is asked, nothing more."""

import uuid
from typing import Any

from authz import Operation, PatternType, ResourceType
from authz.actions import ResourceAccess
from authz.admin_apis import resources_of
from authz.model import CLUSTER_NAME
from envelope.build import build_entity
from envelope.codec import request_schema

CLUSTER_ALTER = [ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, Operation.ALTER)]


def _create(owner_type: str | None, owner_name: str | None, version: int = 3) -> list[ResourceAccess]:
    values: dict[str, Any] = {"owner_principal_type": owner_type, "owner_principal_name": owner_name, "renewers": [], "max_lifetime": -1}
    return resources_of(38, build_entity(request_schema(38, version), values))


def test_a_token_for_another_owner_is_create_tokens_on_that_user() -> None:
    assert _create("User", "bob") == [ResourceAccess(ResourceType.USER, "User:bob", PatternType.LITERAL, Operation.CREATE_TOKENS)]
    assert _create(None, "bob")[0].name == "null:bob"  # Kafka fails on it before any ACL; named as Java prints a null


def test_a_token_for_oneself_asks_no_acl() -> None:
    assert _create(None, None) == []
    assert _create("User", "") == []
    assert _create(None, None, version=1) == []  # v1/v2 cannot name an owner


def test_renew_and_expire_name_nothing_the_hmac_is_a_secret() -> None:
    assert resources_of(39, build_entity(request_schema(39, 2), {"hmac": b"secret", "renew_period": 1})) == []
    assert resources_of(40, build_entity(request_schema(40, 2), {"hmac": b"secret", "expiry_time_period": 1})) == []


def test_membership_changes_are_alter_on_the_cluster() -> None:
    assert resources_of(64, build_entity(request_schema(64, 0), {"broker_id": 3})) == CLUSTER_ALTER
    voter = {"cluster_id": None, "voter_id": 2, "voter_directory_id": uuid.uuid4()}
    assert resources_of(81, build_entity(request_schema(81, 0), voter)) == CLUSTER_ALTER
    assert resources_of(80, build_entity(request_schema(80, 1), {**voter, "timeout": 1, "listeners": []})) == CLUSTER_ALTER
