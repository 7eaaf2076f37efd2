"""An example authorizer plug-in: Kafka's ACL semantics, but forwarded ACL changes only from listed forwarders.

KIP-590 lets a controller tell a forwarded (impersonated) request from a
direct one. This plug-in uses that: CreateAcls/DeleteAcls (ALTER on the
cluster) arriving inside an Envelope are denied unless the forwarding
principal is listed in `forwarding.guard.allowed.forwarders`; everything
else is decided by the built-in ACL authorizer.

Use it in a controller's or proxy's properties, by dotted path

    authorizer.class.name=forwarding_guard:ForwardingGuard

(with this directory on PYTHONPATH) or, once packaged with an entry point
of the group `kafka_envelope_proxy.authorizers`, by its entry point name.
"""

from collections.abc import Iterable, Mapping, Sequence

from authz import AclAuthorizer, AclBinding, AclBindingFilter, Action, Decision, Operation, RequestContext, ResourceType

ALLOWED_FORWARDERS = "forwarding.guard.allowed.forwarders"
# The keys this plug-in reads besides the servers' own: `envelope-proxy check-config` (and `run`, `controller`) warn
# about every key nothing reads, and leave these alone. A name ending in "." or "*" declares a prefix.
CONFIG_KEYS = (ALLOWED_FORWARDERS,)


def _principals(text: str) -> frozenset[str]:
    return frozenset(p.strip() for p in text.split(";") if p.strip())


class ForwardingGuard:
    def __init__(self, properties: Mapping[str, str]) -> None:
        self.allowed_forwarders = _principals(properties.get(ALLOWED_FORWARDERS, ""))
        self.acls_authorizer = AclAuthorizer(
            _principals(properties.get("super.users", "")),
            allow_everyone_if_no_acl_found=properties.get("allow.everyone.if.no.acl.found", "false").lower() == "true",
        )

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        decisions = self.acls_authorizer.authorize(context, actions)
        forwarder = context.forwarding_principal
        if forwarder is None or str(forwarder) in self.allowed_forwarders:
            return decisions
        return [
            Decision.DENIED if action.operation is Operation.ALTER and action.resource_type is ResourceType.CLUSTER else decision
            for action, decision in zip(actions, decisions, strict=True)
        ]

    # It keeps ACLs, so CreateAcls/DeleteAcls/DescribeAcls work against it.
    def create_acls(self, bindings: Iterable[AclBinding]) -> list[str | None]:
        return self.acls_authorizer.create_acls(bindings)

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        return self.acls_authorizer.delete_acls(filters)

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return self.acls_authorizer.describe_acls(binding_filter)

    @property
    def acls(self) -> list[AclBinding]:
        return self.acls_authorizer.acls
