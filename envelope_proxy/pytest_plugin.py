"""A pytest plug-in (entry point `pytest11`) for authorizer authors: the embedded controller and the proxy, in a few lines.

    async def test_my_authorizer(envelope_proxy_stack):
        stack = await envelope_proxy_stack(authorizer="my_package:MyAuthorizer")
        admin = AdminClient(client_config(stack.sasl_address, "admin"))   # envelope_proxy.embedded.client_config
        ...                                       # stack.controller.image.changes: who did what, as seen there

The stack runs on loopback ephemeral ports inside the test's trio nursery
(pytest-trio), with the users of envelope_proxy.embedded.DEFAULT_USERS; the chosen
authorizer decides on the controller, where forwarded requests carry
`RequestContext.forwarding_principal`.
"""

from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Protocol

import pytest

from envelope_proxy.embedded import EmbeddedStack, start_stack


class StartStack(Protocol):
    def __call__(
        self, *, authorizer: str | None = None, controller: dict[str, str] | None = None, proxy: dict[str, str] | None = None
    ) -> Awaitable[EmbeddedStack]: ...


@pytest.fixture
def envelope_proxy_stack(nursery: Any, tmp_path: Path) -> StartStack:
    """Call it (awaited) to start a controller with `authorizer` (entry point name or dotted path) and a proxy before it."""

    async def start(
        *, authorizer: str | None = None, controller: dict[str, str] | None = None, proxy: dict[str, str] | None = None
    ) -> EmbeddedStack:
        overrides = dict(controller or {})
        if authorizer is not None:
            overrides["authorizer.class.name"] = authorizer
        return await start_stack(nursery, tmp_path / "audit", controller_overrides=overrides, proxy_overrides=proxy)

    return start
