"""An ACL authorizer with Kafka's StandardAuthorizer semantics."""

import ipaddress
import logging
from collections.abc import Iterable, Sequence

from authz.model import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    Action,
    Decision,
    Operation,
    PatternType,
    PermissionType,
    RequestContext,
)

log = logging.getLogger(__name__)

# An ALLOW for any of these operations also allows the key (Kafka's implied operations).
_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}


class AclAuthorizer:
    def __init__(
        self,
        super_users: Iterable[str] = (),
        *,
        allow_everyone_if_no_acl_found: bool = False,
        acls: Iterable[AclBinding] = (),
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: list[AclBinding] = list(dict.fromkeys(acls))

    @property
    def acls(self) -> list[AclBinding]:
        return list(self._acls)

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        return [self._authorize_one(context, action) for action in actions]

    def _authorize_one(self, context: RequestContext, action: Action) -> Decision:
        principal = str(context.principal)
        if principal in self.super_users:
            return Decision.ALLOWED
        matching = [acl for acl in self._acls if _applies_to_resource(acl, action)]
        if not matching:
            decision = Decision.ALLOWED if self.allow_everyone_if_no_acl_found else Decision.DENIED
            log.debug("%s %s on %s: no ACL found -> %s", principal, action.operation.name, action, decision.name)
            return decision
        host = str(context.client_address)
        applicable = [acl for acl in matching if _applies_to(acl, principal, host)]
        for acl in applicable:
            if acl.permission is PermissionType.DENY and acl.operation in (Operation.ALL, action.operation):
                log.debug("%s %s denied by %s", principal, action, acl)
                return Decision.DENIED
        allowed_ops = _IMPLIED_BY.get(action.operation, frozenset({action.operation}))
        for acl in applicable:
            if acl.permission is PermissionType.ALLOW and (acl.operation is Operation.ALL or acl.operation in allowed_ops):
                log.debug("%s %s allowed by %s", principal, action, acl)
                return Decision.ALLOWED
        return Decision.DENIED

    def create_acls(self, bindings: Iterable[AclBinding]) -> list[str | None]:
        results: list[str | None] = []
        for binding in bindings:
            problem = binding.validate()
            if problem is None and binding not in self._acls:
                self._acls.append(binding)
            results.append(problem)
        return results

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        results = []
        for binding_filter in filters:
            deleted = [acl for acl in self._acls if binding_filter.matches(acl)]
            self._acls = [acl for acl in self._acls if acl not in deleted]
            results.append(deleted)
        return results

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if binding_filter.matches(acl)]


def _applies_to_resource(acl: AclBinding, action: Action) -> bool:
    if acl.resource_type is not action.resource_type:
        return False
    if acl.pattern_type is PatternType.LITERAL:
        return acl.resource_name in (action.resource_name, WILDCARD_RESOURCE)
    return acl.pattern_type is PatternType.PREFIXED and action.resource_name.startswith(acl.resource_name)


def _same_host(acl_host: str, client_host: str) -> bool:
    """Kafka writes IPv6 hosts in Java's long form (0:0:0:0:0:0:0:1); compare addresses, not text."""
    if acl_host in (WILDCARD_HOST, client_host):
        return True
    try:
        return ipaddress.ip_address(acl_host) == ipaddress.ip_address(client_host)
    except ValueError:
        return False


def _applies_to(acl: AclBinding, principal: str, host: str) -> bool:
    return acl.principal in (principal, WILDCARD_PRINCIPAL) and _same_host(acl.host, host)
