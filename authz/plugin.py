"""The Authorizer plug-in protocol."""

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from authz.model import AclBinding, AclBindingFilter, Action, Decision, RequestContext


@runtime_checkable
class Authorizer(Protocol):
    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        """One decision per action, in order."""
        ...

    def create_acls(self, bindings: Iterable[AclBinding]) -> list[str | None]:
        """Per binding: None on success, else why it was refused."""
        ...

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Per filter: the bindings deleted."""
        ...

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]: ...
