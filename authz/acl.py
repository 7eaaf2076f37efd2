"""An ACL authorizer with Kafka's StandardAuthorizer semantics."""

import ipaddress
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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

# Kafka's kafka.authorizer.logger: denials at INFO, grants at DEBUG, each with the rule that decided.
decision_log = logging.getLogger("authz.decisions")
# A request's first decisions are logged one by one; the rest in one summary line (a log is no place for 100,000 lines).
DECISIONS_LOGGED_PER_REQUEST = 20


@dataclass(frozen=True, slots=True)
class Explanation:
    """A decision and what made it: the deciding binding, or why none was needed."""

    decision: Decision
    reason: str  # "super user", "no ACL found", "matched DENY", "matched ALLOW", "no matching ALLOW"
    binding: AclBinding | None = None

    def __str__(self) -> str:
        return f"{self.decision.name} ({self.reason}{f': {self.binding}' if self.binding else ''})"

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
        decisions = []
        logged = 0
        summed_from = len(actions)
        for index, action in enumerate(actions):
            explanation = self.explain(context, action)
            # One request may name 100,000 resources: its first decisions are logged one by one, the rest summed up.
            if logged < DECISIONS_LOGGED_PER_REQUEST:
                logged += _log_decision(context, action, explanation)
            elif summed_from == len(actions):
                summed_from = index
            decisions.append(explanation.decision)
        _log_summary(context, decisions[summed_from:])
        return decisions

    def explain(self, context: RequestContext, action: Action) -> Explanation:
        """The decision for one action and the rule behind it (what `envelope-proxy authz check` prints)."""
        principal = str(context.principal)
        if principal in self.super_users:
            return Explanation(Decision.ALLOWED, "super user")
        matching = [acl for acl in self._acls if _applies_to_resource(acl, action)]
        if not matching:
            return Explanation(Decision.ALLOWED if self.allow_everyone_if_no_acl_found else Decision.DENIED, "no ACL found")
        host = java_host_address(context.client_address)
        applicable = [acl for acl in matching if _applies_to(acl, principal, host)]
        for acl in applicable:
            if acl.permission is PermissionType.DENY and acl.operation in (Operation.ALL, action.operation):
                return Explanation(Decision.DENIED, "matched DENY", acl)
        allowed_ops = _IMPLIED_BY.get(action.operation, frozenset({action.operation}))
        for acl in applicable:
            if acl.permission is PermissionType.ALLOW and (acl.operation is Operation.ALL or acl.operation in allowed_ops):
                return Explanation(Decision.ALLOWED, "matched ALLOW", acl)
        return Explanation(Decision.DENIED, "no matching ALLOW")

    def create_acls(self, bindings: Iterable[AclBinding]) -> list[str | None]:
        results: list[str | None] = []
        for binding in bindings:
            problem = binding.validate()
            if problem is None and binding not in self._acls:
                self._acls.append(binding)
            results.append(problem)
        return results

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Kafka's AclControlManager: every filter is matched against the ACLs as they were before the
        request, so a binding that two filters match is reported under both (and deleted once)."""
        before = list(self._acls)
        results = [[acl for acl in before if binding_filter.matches(acl)] for binding_filter in filters]
        deleted = {acl for matched in results for acl in matched}
        self._acls = [acl for acl in before if acl not in deleted]
        return results

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if binding_filter.matches(acl)]


def _applies_to_resource(acl: AclBinding, action: Action) -> bool:
    if acl.resource_type is not action.resource_type:
        return False
    if acl.pattern_type is PatternType.LITERAL:
        return acl.resource_name in (action.resource_name, WILDCARD_RESOURCE)
    return acl.pattern_type is PatternType.PREFIXED and action.resource_name.startswith(acl.resource_name)


def java_host_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """The client's address as Kafka's authorizer compares it: Java's InetAddress.getHostAddress().

    IPv6 is written in full, without `::` compression or leading zeros (0:0:0:0:0:0:0:1), and an
    IPv4-mapped IPv6 address is the IPv4 address (Java turns those into Inet4Address)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        groups = ":".join(f"{int.from_bytes(address.packed[i : i + 2], 'big'):x}" for i in range(0, 16, 2))
        return f"{groups}%{address.scope_id}" if address.scope_id else groups
    return str(address)


def _same_host(acl_host: str, client_host: str) -> bool:
    """Kafka compares the ACL's host text with the client's address as Java writes it (`java_host_address`):
    an ACL for `::1` does not match a client at ::1; `0:0:0:0:0:0:0:1` does."""
    return acl_host in (WILDCARD_HOST, client_host)


def _applies_to(acl: AclBinding, principal: str, host: str) -> bool:
    return acl.principal in (principal, WILDCARD_PRINCIPAL) and _same_host(acl.host, host)


def _log_summary(context: RequestContext, unlogged: list[Decision]) -> None:
    denied = sum(1 for decision in unlogged if decision is Decision.DENIED)
    if not denied or not decision_log.isEnabledFor(logging.INFO):
        return
    decision_log.info(
        "Principal = %s from host = %s is Denied %d more operations in this request (not logged one by one; %d allowed)",
        context.principal,
        context.client_address,
        denied,
        len(unlogged) - denied,
    )


def _log_decision(context: RequestContext, action: Action, explanation: Explanation) -> int:
    """Log one decision (denials at INFO, grants at DEBUG); 1 if it was logged."""
    level = logging.INFO if explanation.decision is Decision.DENIED else logging.DEBUG
    if not decision_log.isEnabledFor(level):
        return 0
    forwarded = f" forwarded by {context.forwarding_principal}" if context.forwarding_principal else ""
    decision_log.log(
        level,
        "Principal = %s is %s operation = %s from host = %s%s on resource = %s:%s based on %s",
        context.principal,
        "Allowed" if explanation.decision is Decision.ALLOWED else "Denied",
        action.operation.name,
        context.client_address,
        forwarded,
        action.resource_type.name,
        action.resource_name,
        f"{explanation.reason} {explanation.binding}" if explanation.binding else explanation.reason,
    )
    return 1
