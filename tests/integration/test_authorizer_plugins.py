"""An authorizer plug-in, loaded by entry point and by dotted path, sees who forwarded a request.

The example plug-in in docs/examples refuses a CreateAcls that arrives inside
an Envelope from an unlisted forwarder, and allows the same request sent
directly to the embedded controller by a super user.
"""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from proxy.properties import ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.fixture
def plugin_path(tmp_path: Path) -> Iterator[Path]:
    """docs/examples importable, and a dist-info that registers the example under an entry point name."""
    dist = tmp_path / "forwarding_guard_example-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: forwarding-guard-example\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[kafka_envelope_proxy.authorizers]\nforwarding-guard = forwarding_guard:ForwardingGuard\n")
    sys.path[:0] = [str(EXAMPLES), str(tmp_path)]
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(EXAMPLES))
        sys.path.remove(str(tmp_path))
        sys.modules.pop("forwarding_guard", None)


def _create_acl(address: str, user: str, name: str) -> int:
    creation = {"resource_type": 2, "resource_name": name, "resource_pattern_type": 3, "principal": "User:bob", "host": "*"}
    with wire.connect(address) as sock:
        assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
        body = wire.call(sock, ApiKey.CREATE_ACLS, 2, {"creations": [{**creation, "operation": 3, "permission_type": 3}]}, 3)
        return int(body.results[0].error_code)


@pytest.mark.parametrize("name", ["forwarding-guard", "forwarding_guard:ForwardingGuard", "forwarding_guard.ForwardingGuard"])
async def test_the_example_plugin_refuses_impersonated_acl_changes(plugin_path: Path, name: str, nursery: Any, tmp_path: Path) -> None:
    props = {**controller_properties(users=DEFAULT_USERS), "authorizer.class.name": name}
    controller = EmbeddedController(parse_controller_config(props))
    (bound,) = await nursery.start(controller.run)
    running = await nursery.start(run_proxy, parse_proxy_config(proxy_properties(bound.port, tmp_path / "audit")))
    through_proxy = f"127.0.0.1:{running.listener('CLIENT').port}"
    direct = f"127.0.0.1:{bound.port}"

    assert await trio.to_thread.run_sync(_create_acl, through_proxy, "admin", "forwarded") == ErrorCode.cluster_authorization_failed
    assert await trio.to_thread.run_sync(_create_acl, direct, "admin", "direct") == 0
    assert [b.resource_name for b in controller.handlers.acl_store.acls] == ["direct"]  # type: ignore[union-attr]


async def test_a_listed_forwarder_may_change_acls(plugin_path: Path, nursery: Any, tmp_path: Path) -> None:
    props = {
        **controller_properties(),
        "authorizer.class.name": "forwarding-guard",
        "forwarding.guard.allowed.forwarders": "User:proxy",
    }
    controller = EmbeddedController(parse_controller_config(props))
    (bound,) = await nursery.start(controller.run)
    running = await nursery.start(run_proxy, parse_proxy_config(proxy_properties(bound.port, tmp_path / "audit")))
    assert await trio.to_thread.run_sync(_create_acl, f"127.0.0.1:{running.listener('CLIENT').port}", "admin", "ok") == 0


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("no_such_module:Thing", "module no_such_module cannot be imported"),
        ("forwarding_guard:Missing", "module forwarding_guard has no attribute Missing"),
        ("justaword", "not an entry point of group kafka_envelope_proxy.authorizers and not a dotted path"),
        ("builtins:dict", "the plug-in has no authorize(context, actions) method"),
    ],
)
def test_a_bad_plugin_name_is_a_config_error(plugin_path: Path, name: str, reason: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_controller_config({**controller_properties(), "authorizer.class.name": name})
    assert error.value.key == "authorizer.class.name"
    assert reason in str(error.value)
