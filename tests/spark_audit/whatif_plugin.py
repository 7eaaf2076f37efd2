"""An authorizer plug-in for the what-if tests, shipped to executors with addPyFile (so: a top-level module).

It allows everything except ALTER on the cluster (ACL changes) forwarded by
``deny.forwarder``, and raises for User:broken, as a buggy plug-in would.
"""

from collections.abc import Mapping, Sequence

from authz import Action, Decision, Operation, RequestContext, ResourceType


class DenyForwardedAclChanges:
    def __init__(self, properties: Mapping[str, str]) -> None:
        self.forwarder = properties.get("deny.forwarder", "User:proxy")

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        if str(context.principal) == "User:broken":
            raise RuntimeError("boom")
        forwarded = context.forwarding_principal is not None and str(context.forwarding_principal) == self.forwarder
        return [
            Decision.DENIED
            if forwarded and a.operation is Operation.ALTER and a.resource_type is ResourceType.CLUSTER
            else Decision.ALLOWED
            for a in actions
        ]
