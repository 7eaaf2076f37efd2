"""The questions every handler asks: may this context do this operation on this resource (or on these)?

The helpers follow Kafka's AuthHelper: `allowed` is `authorize`, `allowed_names` is
`filterByAuthorized` (one decision per distinct name), and `cluster_denied` is the
ClusterAuthorizationException that `authorizeClusterOperation` throws.
"""

from collections.abc import Iterable

from authz import Action, Authorizer, Decision, Operation, RequestContext, ResourceType
from authz.model import CLUSTER_NAME

AUTHORIZATION_FAILED = "Authorization failed."  # ControllerApis' words for a topic CreateTopics may not create


def allowed(authorizer: Authorizer, ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
    return authorizer.authorize(ctx, [Action(operation, resource_type, name)])[0] is Decision.ALLOWED


def cluster_allowed(authorizer: Authorizer, ctx: RequestContext, operation: Operation) -> bool:
    return allowed(authorizer, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def allowed_names(authorizer: Authorizer, ctx: RequestContext, operation: Operation, resource_type: ResourceType, names: Iterable[str]) -> set[str]:
    """The names `operation` is allowed on, asked in one call with each distinct name once."""
    distinct = list(dict.fromkeys(names))
    decisions = authorizer.authorize(ctx, [Action(operation, resource_type, name) for name in distinct])
    return {name for name, decision in zip(distinct, decisions, strict=True) if decision is Decision.ALLOWED}


def cluster_denied(ctx: RequestContext, operation: Operation) -> str:
    """The message of Kafka's ClusterAuthorizationException from `authorizeClusterOperation`.

    Kafka prints its RequestChannel.Request there (processor, connection id, buffer: nothing a
    client can predict); ours names the same session, listener and protocol in the same shape."""
    request = (
        f"Request(session=Session({ctx.principal},/{ctx.client_address}), listenerName=ListenerName({ctx.listener}), "
        f"securityProtocol={ctx.security_protocol})"
    )
    return f"Request {request} needs {operation.name} permission."
