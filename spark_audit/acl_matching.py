"""Which ACL bindings in force a historical decision used, by the what-if engine's own rules.

A binding is *used* by an allowed decision when, under the ACLs in force, it is an ALLOW
binding that allows one of the decision's actions (``spark_audit.whatif.actions_for``: a
CreateTopics topic is allowed by CREATE on the cluster or on the topic) and no DENY binding
denies that action (DENY wins in Kafka, so then nothing was used). A super user's decision
uses nothing: Kafka allows it before looking at ACLs.

Every match is decided by ``authz.AclAuthorizer`` itself, one binding at a time, so resource
type, LITERAL/PREFIXED/``*`` patterns, ALL and implied operations (ALTER implies DESCRIBE...),
``User:*`` and hosts are exactly what the what-if replay and ``authz check`` apply.

Pure Python: it runs on the executors (spark_audit/acl_usage.py) and in tests.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from authz import AclAuthorizer, AclBinding, Action, Decision, Operation, PatternType, PermissionType, RequestContext, ResourceType
from authz.acl import java_host_address
from authz.model import WILDCARD_HOST, WILDCARD_PRINCIPAL
from envelope.principal import Principal
from spark_audit.whatif import actions_for

#: A context's address where the records do not say it (the proxy's own Envelope check): the bindings are
#: then matched with their host read as ``*``, so this address never decides anything.
UNKNOWN_ADDRESS = ipaddress.ip_address("0.0.0.0")
#: The listener and protocol of a matching context: the built-in authorizer does not look at them.
MATCHING_LISTENER = "CLIENT"
MATCHING_PROTOCOL = "SASL_PLAINTEXT"
#: The binding and principal :func:`implies` asks the authorizer about.
PROBE_NAME = "probe"
PROBE_PRINCIPAL = "User:probe"


@dataclass(frozen=True, slots=True)
class Decided:
    """One historical decision that was allowed: who, from where (None: not recorded), and the action."""

    principal: str
    client_address: str | None
    method: str
    resource_type: str
    resource_name: str
    operation: str


def host_of(client_address: str | None) -> str | None:
    """The client's address as Kafka compares it with an ACL's host (None when unknown or not an address)."""
    if client_address is None:
        return None
    try:
        return java_host_address(ipaddress.ip_address(client_address))
    except ValueError:
        return None


def context_for(principal: str, client_address: str | None) -> RequestContext:
    """A request context that the built-in authorizer decides exactly as it decided the recorded one."""
    try:
        address = ipaddress.ip_address(client_address) if client_address is not None else UNKNOWN_ADDRESS
    except ValueError:
        address = UNKNOWN_ADDRESS
    return RequestContext(Principal.parse(principal), address, MATCHING_LISTENER, MATCHING_PROTOCOL)


@dataclass(frozen=True)
class _Grant:
    index: int
    binding: AclBinding
    #: the binding alone, and the binding with its host as ``*`` (for decisions whose address is not recorded)
    alone: AclAuthorizer
    any_host: AclAuthorizer


class GrantMatcher:
    """The ALLOW bindings in force that each allowed decision used (indices into ``bindings``)."""

    def __init__(self, bindings: Sequence[AclBinding], super_users: Iterable[str] = ()) -> None:
        self.bindings = list(bindings)
        self.super_users = frozenset(super_users)
        self._denies = AclAuthorizer(acls=[b for b in self.bindings if b.permission is PermissionType.DENY])
        self._grants: dict[ResourceType, list[_Grant]] = {}
        for index, binding in enumerate(self.bindings):
            if binding.permission is PermissionType.ALLOW:
                grant = _Grant(index, binding, AclAuthorizer(acls=[binding]), AclAuthorizer(acls=[replace(binding, host=WILDCARD_HOST)]))
                self._grants.setdefault(binding.resource_type, []).append(grant)

    def used(self, decided: Decided) -> list[int]:
        """The indices of the ALLOW bindings this allowed decision used, in order; empty when none allowed it."""
        if decided.principal in self.super_users:
            return []
        known_host = host_of(decided.client_address) is not None
        try:
            context = context_for(decided.principal, decided.client_address)
            actions = actions_for(decided.method, decided.resource_type, decided.resource_name, decided.operation)
        except (KeyError, ValueError):
            return []  # a principal, resource type or operation no ACL can name: no binding allowed it
        used: set[int] = set()
        for action in actions:
            if known_host and self._denied(context, action):
                continue
            for grant in self._grants.get(action.resource_type, ()):
                if grant.binding.principal not in (decided.principal, WILDCARD_PRINCIPAL):
                    continue  # the common case, decided without building an explanation
                judge = grant.alone if known_host else grant.any_host
                if judge.explain(context, action).decision is Decision.ALLOWED:
                    used.add(grant.index)
        return sorted(used)

    def _denied(self, context: RequestContext, action: Action) -> bool:
        explanation = self._denies.explain(context, action)
        return explanation.binding is not None and explanation.binding.permission is PermissionType.DENY


@functools.cache
def implies(granted: Operation, needed: Operation) -> bool:
    """An ALLOW for ``granted`` also allows ``needed`` (ALL, or Kafka's implied operations), as the authorizer decides it.

    Kafka's implications do not depend on the resource, so one probe binding on a topic answers for every type."""
    probe = AclBinding(ResourceType.TOPIC, PROBE_NAME, PatternType.LITERAL, PROBE_PRINCIPAL, WILDCARD_HOST, granted, PermissionType.ALLOW)
    context = context_for(PROBE_PRINCIPAL, None)
    return AclAuthorizer(acls=[probe]).explain(context, Action(needed, ResourceType.TOPIC, PROBE_NAME)).decision is Decision.ALLOWED
