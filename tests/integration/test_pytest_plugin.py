"""The pytest11 plug-in's fixture, as an authorizer author uses it (loaded through the installed entry point)."""

import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from envelope_proxy.embedded import client_config

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.fixture
def examples_on_path() -> Any:
    sys.path.insert(0, str(EXAMPLES))
    yield
    sys.path.remove(str(EXAMPLES))
    sys.modules.pop("forwarding_guard", None)


def test_the_plugin_is_registered_under_pytest11(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.has_plugin("kafka_envelope_proxy")


async def test_an_author_drives_the_stack_with_a_real_client(envelope_proxy_stack: Any, examples_on_path: Any) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    stack = await envelope_proxy_stack(authorizer="forwarding_guard:ForwardingGuard")
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW)

    def work() -> str:
        admin = AdminClient(client_config(stack.sasl_address, "admin"))
        try:
            admin.create_acls([binding])[binding].result(timeout=30)
        except Exception as exc:
            return str(exc.args[0].name())
        return "OK"

    assert await trio.to_thread.run_sync(work) == "CLUSTER_AUTHORIZATION_FAILED"  # impersonated via the proxy
    assert [(c.api, c.principal, c.forwarded_by) for c in stack.controller.image.changes][-1:] == [
        ("CreateAcls", "User:admin", "User:proxy")
    ]
