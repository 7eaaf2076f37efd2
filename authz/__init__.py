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
from authz.plugin import Authorizer

__all__ = [
    "AclAuthorizer",
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
