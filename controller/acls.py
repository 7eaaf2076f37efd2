"""ACL changes: CreateAcls and DeleteAcls against the authorizer's ACL store, with Kafka's checks and error codes."""

from typing import Any

from kio.schema.errors import ErrorCode

from authz import (
    AclBinding,
    AclBindingFilter,
    AclStore,
    Authorizer,
    Operation,
    PatternType,
    PermissionType,
    RequestContext,
    ResourceType,
)
from controller.authorize import AUTHORIZATION_FAILED, cluster_allowed
from controller.changes import change_of
from controller.image import MetadataImage

NO_ACL_STORE = "No Authorizer is configured."  # Kafka's words when ACL APIs meet a cluster without an ACL-keeping authorizer


class AclHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer) -> None:
        self.image = image
        self.authorizer = authorizer
        self.acl_store: AclStore | None = authorizer if isinstance(authorizer, AclStore) else None

    def _record(self, api: str, ctx: RequestContext, resource: str, code: int) -> None:
        self.image.record(change_of(api, ctx, resource, code))

    def create_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if self.acl_store is None:
            return {
                "throttle_time": 0,
                "results": [{"error_code": ErrorCode.security_disabled, "error_message": NO_ACL_STORE} for _ in body.creations],
            }
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            self._record("CreateAcls", ctx, "cluster:acls", ErrorCode.cluster_authorization_failed)
            return {
                "throttle_time": 0,
                "results": [
                    {"error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED} for _ in body.creations
                ],
            }
        if any(_filter_only_value(creation) for creation in body.creations):
            # Kafka builds every binding before validating any, and a filter-only value (ANY, MATCH)
            # throws there: the whole request fails with an unexpected error and no message.
            return {
                "throttle_time": 0,
                "results": [{"error_code": ErrorCode.unknown_server_error, "error_message": None} for _ in body.creations],
            }
        results = []
        for creation in body.creations:
            try:
                binding = AclBinding(
                    ResourceType(int(creation.resource_type)),
                    str(creation.resource_name),
                    PatternType(int(getattr(creation, "resource_pattern_type", PatternType.LITERAL))),
                    str(creation.principal),
                    str(creation.host),
                    Operation(int(creation.operation)),
                    PermissionType(int(creation.permission_type)),
                )
            except ValueError as exc:
                results.append({"error_code": ErrorCode.invalid_request, "error_message": str(exc)})
                continue
            (problem,) = self.acl_store.create_acls([binding])
            code = ErrorCode.invalid_request if problem else ErrorCode.none
            self._record("CreateAcls", ctx, f"acl:{binding.resource_type.name}:{binding.resource_name}", code)
            results.append({"error_code": code, "error_message": problem})
        return {"throttle_time": 0, "results": results}

    def delete_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if self.acl_store is None:
            return {
                "throttle_time": 0,
                "filter_results": [
                    {"error_code": ErrorCode.security_disabled, "error_message": NO_ACL_STORE, "matching_acls": []} for _ in body.filters
                ],
            }
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            self._record("DeleteAcls", ctx, "cluster:acls", ErrorCode.cluster_authorization_failed)
            return {
                "throttle_time": 0,
                "filter_results": [
                    {"error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED, "matching_acls": []}
                    for _ in body.filters
                ],
            }
        results = []
        for item in body.filters:
            try:
                binding_filter = binding_filter_of(item)
            except ValueError as exc:
                results.append({"error_code": ErrorCode.invalid_request, "error_message": str(exc), "matching_acls": []})
                continue
            (deleted,) = self.acl_store.delete_acls([binding_filter])
            self._record("DeleteAcls", ctx, "acl-filter", ErrorCode.none)
            results.append(
                {
                    "error_code": ErrorCode.none,
                    "error_message": None,
                    "matching_acls": [
                        {
                            "error_code": ErrorCode.none,
                            "error_message": None,
                            "resource_type": b.resource_type,
                            "resource_name": b.resource_name,
                            "pattern_type": b.pattern_type,
                            "principal": b.principal,
                            "host": b.host,
                            "operation": b.operation,
                            "permission_type": b.permission,
                        }
                        for b in deleted
                    ],
                }
            )
        return {"throttle_time": 0, "filter_results": results}


def _filter_only_value(creation: Any) -> bool:
    """True for values a filter may hold but a binding may not (Kafka's ResourcePattern / AccessControlEntry checks)."""
    return (
        int(creation.resource_type) == ResourceType.ANY
        or int(getattr(creation, "resource_pattern_type", PatternType.LITERAL)) in (PatternType.ANY, PatternType.MATCH)
        or int(creation.operation) == Operation.ANY
        or int(creation.permission_type) == PermissionType.ANY
    )


def binding_filter_of(item: Any) -> AclBindingFilter:
    """A DeleteAcls filter or a DescribeAcls request as a filter; ValueError for unknown codes."""
    return AclBindingFilter(
        ResourceType(int(item.resource_type_filter)),
        item.resource_name_filter,
        PatternType(int(getattr(item, "pattern_type_filter", PatternType.LITERAL))),
        item.principal_filter,
        item.host_filter,
        Operation(int(item.operation)),
        PermissionType(int(item.permission_type)),
    )
