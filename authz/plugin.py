"""The authorizer plug-in API.

An authorizer decides; some also keep ACLs. A plug-in implements
`Authorizer`, and `AclStore` only if CreateAcls/DeleteAcls/DescribeAcls
should work against it (Kafka answers SECURITY_DISABLED otherwise).

A plug-in is named in `authorizer.class.name`, either by an entry point of
the group `kafka_envelope_proxy.authorizers` or by a dotted path
(`package.module:Class` or `package.module.Class`). It is called once with
the process's properties (a `dict[str, str]`) and must return an object
with `authorize`. The request context tells it who asks, from where, over
which listener, and for forwarded requests who forwarded them
(`RequestContext.forwarding_principal`), so it can treat impersonated
requests differently, as KIP-590 suggests.
"""

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from authz.model import AclBinding, AclBindingFilter, Action, Decision, RequestContext

ENTRY_POINT_GROUP = "kafka_envelope_proxy.authorizers"


@runtime_checkable
class Authorizer(Protocol):
    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        """One decision per action, in order."""
        ...


@runtime_checkable
class AclStore(Protocol):
    def create_acls(self, bindings: Iterable[AclBinding]) -> list[str | None]:
        """Per binding: None on success, else why it was refused."""
        ...

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Per filter: the bindings it matched before the request, all of which are deleted
        (Kafka's rule: a binding two filters match is listed under both)."""
        ...

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]: ...

    @property
    def acls(self) -> list[AclBinding]:
        """Every stored binding (what the embedded controller persists)."""
        ...
