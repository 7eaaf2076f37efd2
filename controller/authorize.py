"""One question every handler asks: may this context do this operation on this resource?"""

from authz import Action, Authorizer, Decision, Operation, RequestContext, ResourceType
from authz.model import CLUSTER_NAME

AUTHORIZATION_FAILED = "Authorization failed."  # Kafka's message for every *_AUTHORIZATION_FAILED answer


def allowed(authorizer: Authorizer, ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
    return authorizer.authorize(ctx, [Action(operation, resource_type, name)])[0] is Decision.ALLOWED


def cluster_allowed(authorizer: Authorizer, ctx: RequestContext, operation: Operation) -> bool:
    return allowed(authorizer, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)
