"""The proxy's own authorization decisions for reads it sends under its own identity.

Reads (Metadata with topics, DescribeConfigs, DescribeAcls) are not
forwardable, so the controller would see the proxy, not the client. The
proxy therefore decides first. Two policies:

- `deny` (the default): no client read reaches the upstream.
- a plug-in named by entry point or dotted path (see authz.plugin) decides alone.
- `acl`: Kafka's ACL semantics over a mirror of the upstream's own ACLs,
  fetched with DescribeAcls under the proxy's identity, plus the proxy's
  `super.users` and `allow.everyone.if.no.acl.found`. The mirror is
  refreshed when older than `edge.acl.refresh.ms` and dropped after every
  forwarded ACL change, so a grant made through the proxy counts at once.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import trio
from kio.schema.errors import ErrorCode

from authz import (
    AclAuthorizer,
    AclBinding,
    Action,
    Authorizer,
    Decision,
    Operation,
    PatternType,
    PermissionType,
    RequestContext,
    ResourceType,
)
from authz.actions import ResourceAccess
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from proxy.forward.offload import CpuOffload
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import ControllerPool

log = logging.getLogger(__name__)

_DESCRIBE_ACLS_VERSION = 1  # v1 has pattern types; every Kafka 2.0+ controller serves it


@dataclass(frozen=True)
class EdgeSettings:
    policy: str = "deny"  # "deny", "acl" or "plugin"
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    refresh_seconds: float = 5.0
    token_refresh_seconds: float = 5.0
    """How often the delegation tokens are read from the upstream for token logins (proxy/forward/token_mirror.py)."""
    plugin: Authorizer | None = field(default=None, compare=False, repr=False)
    plugin_name: str | None = None

    def effective(self) -> dict[str, object]:
        return {
            "policy": self.policy,
            "super.users": sorted(self.super_users),
            "allow.everyone.if.no.acl.found": self.allow_everyone_if_no_acl_found,
            "edge.acl.refresh.ms": int(self.refresh_seconds * 1000),
            "edge.token.refresh.ms": int(self.token_refresh_seconds * 1000),
            "plugin": self.plugin_name,
        }


class EdgeAuthorizer:
    def __init__(self, settings: EdgeSettings, upstream: ControllerPool) -> None:
        self.settings = settings
        self.upstream = upstream
        self._mirror: AclAuthorizer | None = None
        self._loaded_at = -float("inf")
        self._lock = trio.Lock()
        self.offload = CpuOffload()

    @property
    def decides(self) -> bool:
        """Whether a policy decides at all: with `deny` every answer is no, whatever the upstream's ACLs say."""
        return self.settings.plugin is not None or self.settings.policy != "deny"

    def invalidate(self) -> None:
        """An ACL change went through the proxy: the next decision reloads."""
        self._mirror = None

    async def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        decider = await self._decider()
        if decider is None:
            return [Decision.DENIED] * len(actions)
        # Thousands of decisions (a Metadata naming every topic) are made off the event loop.
        return await self.offload.entries(len(actions), decider.authorize, ctx, actions)

    async def allowed(self, ctx: RequestContext, accesses: Sequence[ResourceAccess]) -> list[bool]:
        """Whether each access is allowed; the whole conversion runs off the event loop for thousands of them."""
        decider = await self._decider()
        if decider is None:
            return [False] * len(accesses)
        return await self.offload.entries(len(accesses), _allowed, decider, ctx, accesses)

    async def _decider(self) -> Authorizer | None:
        if self.settings.plugin is not None:
            return self.settings.plugin
        if self.settings.policy == "deny":
            return None
        return await self._current()

    async def _current(self) -> AclAuthorizer | None:
        async with self._lock:
            if self._mirror is None or trio.current_time() - self._loaded_at > self.settings.refresh_seconds:
                try:
                    bindings = await self._fetch()
                except (UpstreamUnavailable, AclMirrorError) as exc:
                    # Without the upstream's ACLs nothing can be decided safely: deny (fail closed).
                    log.error("edge authorizer: cannot load ACLs from the controller, denying reads: %s", exc)
                    self._mirror = None
                    return None
                self._mirror = AclAuthorizer(
                    self.settings.super_users,
                    allow_everyone_if_no_acl_found=self.settings.allow_everyone_if_no_acl_found,
                    acls=bindings,
                )
                self._loaded_at = trio.current_time()
            return self._mirror

    async def _fetch(self) -> list[AclBinding]:
        values = {
            "resource_type_filter": int(ResourceType.ANY),
            "resource_name_filter": None,
            "pattern_type_filter": int(PatternType.ANY),
            "principal_filter": None,
            "host_filter": None,
            "operation": int(Operation.ANY),
            "permission_type": int(PermissionType.ANY),
        }
        body = build_entity(request_schema(ApiKey.DESCRIBE_ACLS, _DESCRIBE_ACLS_VERSION), values)
        frame = await self.upstream.request(lambda cid: encode_request(body, correlation_id=cid, client_id="envelope-proxy-edge"))
        _, response = decode_response_body(ApiKey.DESCRIBE_ACLS, _DESCRIBE_ACLS_VERSION, frame)
        if int(response.error_code) != ErrorCode.none:
            raise AclMirrorError(f"DescribeAcls answered {int(response.error_code)}: {response.error_message}")
        return [
            AclBinding(
                ResourceType(int(resource.resource_type)),
                str(resource.resource_name),
                PatternType(int(resource.pattern_type)),
                str(acl.principal),
                str(acl.host),
                Operation(int(acl.operation)),
                PermissionType(int(acl.permission_type)),
            )
            for resource in response.resources
            for acl in resource.acls
        ]


def _allowed(decider: Authorizer, ctx: RequestContext, accesses: Sequence[ResourceAccess]) -> list[bool]:
    actions = [Action(a.operation, a.resource_type, a.name) for a in accesses]
    return [decision is Decision.ALLOWED for decision in decider.authorize(ctx, actions)]


class AclMirrorError(Exception):
    pass
