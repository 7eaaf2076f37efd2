"""The ACLs in force asked of the controller: DescribeAcls through the proxy, as `--acl-from-controller` does."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from authz import AclBinding, Operation, PatternType, PermissionType, ResourceType
from envelope_proxy.embedded import client_config
from spark_audit.acl_source import AclSourceError, from_controller

#: Seconds a refused login may take to come back as an error (it ends the wait at once; this bounds a regression).
REFUSAL_TIMEOUT = 20.0


def _admin_settings(address: str, user: str, password: str | None = None) -> dict[str, str]:
    settings = client_config(address, user, password)
    del settings["bootstrap.servers"]
    return settings


async def test_the_controllers_acls_come_through_the_proxy(envelope_proxy_stack: Any) -> None:
    from confluent_kafka.admin import AclBinding as ClientBinding
    from confluent_kafka.admin import AclOperation, AclPermissionType, AdminClient, ResourcePatternType
    from confluent_kafka.admin import ResourceType as ClientType

    stack = await envelope_proxy_stack()
    created = [
        ClientBinding(
            ClientType.TOPIC, "orders-", ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.CREATE, AclPermissionType.ALLOW
        ),
        ClientBinding(
            ClientType.BROKER,
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            "User:bob",
            "10.0.0.2",
            AclOperation.ALTER,
            AclPermissionType.DENY,
        ),
    ]

    def work() -> list[AclBinding]:
        admin = AdminClient(client_config(stack.sasl_address, "admin"))
        for future in admin.create_acls(created).values():
            future.result(timeout=30)
        return from_controller(stack.sasl_address, _admin_settings(stack.sasl_address, "admin"))

    found = await trio.to_thread.run_sync(work)
    assert sorted(found, key=str) == sorted(
        [
            AclBinding(ResourceType.TOPIC, "orders-", PatternType.PREFIXED, "User:alice", "*", Operation.CREATE, PermissionType.ALLOW),
            AclBinding(
                ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:bob", "10.0.0.2", Operation.ALTER, PermissionType.DENY
            ),
        ],
        key=str,
    )


async def test_a_refused_login_is_an_error_naming_the_address(envelope_proxy_stack: Any) -> None:
    stack = await envelope_proxy_stack()

    def work() -> None:
        from_controller(stack.sasl_address, _admin_settings(stack.sasl_address, "admin", "wrong"), timeout=REFUSAL_TIMEOUT)

    with pytest.raises(AclSourceError, match=f"DescribeAcls through {stack.sasl_address}: _AUTHENTICATION: .*Invalid username or password"):
        await trio.to_thread.run_sync(work)
