"""Pure authorization: resources, operations, ACL bindings and authorizers."""

from authz.acl import AclAuthorizer
from authz.model import (
    AclBinding,
    AclBindingFilter,
    Action,
    Decision,
    Operation,
    PatternType,
    PermissionType,
    RequestContext,
    ResourceType,
)
from authz.plugin import ENTRY_POINT_GROUP, AclStore, Authorizer

__all__ = [
    "ENTRY_POINT_GROUP",
    "AclAuthorizer",
    "AclStore",
    "AclBinding",
    "AclBindingFilter",
    "Action",
    "Authorizer",
    "Decision",
    "Operation",
    "PatternType",
    "PermissionType",
    "RequestContext",
    "ResourceType",
]
