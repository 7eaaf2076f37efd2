"""ACLs: CreateAcls, DeleteAcls and DescribeAcls against the authorizer's ACL store, decided as Kafka 4.3 decides.

The order is Kafka's. Parsing the request (CreateAclsRequest/DeleteAclsRequest's
constructors) refuses UNKNOWN codes (0) and, in version 0, pattern types other
than LITERAL: the request cannot even be read, which inside an Envelope is the
envelope error UNSUPPORTED_VERSION (`UnreadableRequest`). Then AclApis asks for
ALTER (DESCRIBE) on the cluster, builds every binding (a filter-only value, ANY
or MATCH, fails the whole request with an unexpected error) and checks the
CLUSTER name and the empty name; AclControlManager validates the rest
(`AclBinding.validate`) and matches every DeleteAcls filter against the ACLs as
they were before the request.
"""

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
from authz.acl_requests import FIRST_PATTERN_VERSION, creation_codes, filter_codes, unreadable_acl_request
from authz.model import from_code
from controller.authorize import cluster_allowed, cluster_denied
from controller.changes import change_of
from controller.image import MetadataImage
from envelope.apis import ApiKey
from envelope.errors import ProtocolError

NO_ACL_STORE = "No Authorizer is configured."  # Kafka's words when ACL APIs meet a cluster without an ACL-keeping authorizer
NO_ACL_STORE_ON_BROKER = "No Authorizer is configured on the broker"  # DescribeAcls' words for it
UNSET_MESSAGE = ""  # what Kafka's generated message classes hold in a nullable string nobody set


class UnreadableRequest(ProtocolError):
    """Kafka cannot build the request object from these bytes (its constructor throws): inside an Envelope
    that is UNSUPPORTED_VERSION, on a direct connection the connection is closed."""


def _refuse_unreadable(api_key: ApiKey, body: Any) -> None:
    reason = unreadable_acl_request(api_key, body)
    if reason is not None:
        raise UnreadableRequest(reason)


class AclHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer) -> None:
        self.image = image
        self.authorizer = authorizer
        self.acl_store: AclStore | None = authorizer if isinstance(authorizer, AclStore) else None

    def _record(self, api: str, ctx: RequestContext, resource: str, code: int) -> None:
        self.image.record(change_of(api, ctx, resource, code))

    def create_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        version = int(body.__version__)
        _refuse_unreadable(ApiKey.CREATE_ACLS, body)
        codes = [creation_codes(c, version) for c in body.creations]
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            self._record("CreateAcls", ctx, "cluster:acls", ErrorCode.cluster_authorization_failed)
            message = cluster_denied(ctx, Operation.ALTER)
            return _creations(ErrorCode.cluster_authorization_failed, message, len(codes))
        if self.acl_store is None:
            return _creations(ErrorCode.security_disabled, NO_ACL_STORE, len(codes))
        bindings = []
        for creation, (resource, pattern, operation, permission) in zip(body.creations, codes, strict=True):
            binding = AclBinding(
                from_code(ResourceType, resource),
                str(creation.resource_name),
                from_code(PatternType, pattern),
                str(creation.principal),
                str(creation.host),
                from_code(Operation, operation),
                from_code(PermissionType, permission),
            )
            if _filter_only(binding):
                # Kafka's ResourcePattern/AccessControlEntry refuse to exist with these values: the handler
                # throws, and the whole request is answered with an unexpected error and no message.
                return _creations(ErrorCode.unknown_server_error, None, len(codes))
            bindings.append(binding)
        results = []
        for binding in bindings:
            problem = binding.validate()
            if problem is None:
                (problem,) = self.acl_store.create_acls([binding])
            code = ErrorCode.invalid_request if problem else ErrorCode.none
            self._record("CreateAcls", ctx, f"acl:{binding.resource_type.name}:{binding.resource_name}", code)
            # A success is Kafka's `new AclCreationResult()`: its message is the generated default, "".
            results.append({"error_code": code, "error_message": problem if problem else UNSET_MESSAGE})
        return {"throttle_time": 0, "results": results}

    def delete_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        version = int(body.__version__)
        _refuse_unreadable(ApiKey.DELETE_ACLS, body)
        filters = [_filter(item, *filter_codes(item, version)) for item in body.filters]
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            self._record("DeleteAcls", ctx, "cluster:acls", ErrorCode.cluster_authorization_failed)
            return _filter_results(ErrorCode.cluster_authorization_failed, cluster_denied(ctx, Operation.ALTER), len(filters))
        if self.acl_store is None:
            return _filter_results(ErrorCode.security_disabled, NO_ACL_STORE, len(filters))
        valid = [f for f in filters if f.unknown_problem() is None]
        matched = iter(self.acl_store.delete_acls(valid))
        results = []
        for binding_filter in filters:
            problem = binding_filter.unknown_problem()
            if problem is not None:
                results.append({"error_code": ErrorCode.invalid_request, "error_message": problem, "matching_acls": []})
                continue
            deleted = next(matched)
            self._record("DeleteAcls", ctx, "acl-filter", ErrorCode.none)
            results.append({"error_code": ErrorCode.none, "error_message": None, "matching_acls": [_matching(b) for b in deleted]})
        return {"throttle_time": 0, "filter_results": results}

    def describe_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """Kafka's AclApis.handleDescribeAcls (on a broker, and on the controller for direct callers)."""
        version = int(body.__version__)
        _refuse_unreadable(ApiKey.DESCRIBE_ACLS, body)
        codes = filter_codes(body, version)
        empty: dict[str, Any] = {"throttle_time": 0, "resources": []}
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE):
            return {**empty, "error_code": ErrorCode.cluster_authorization_failed, "error_message": cluster_denied(ctx, Operation.DESCRIBE)}
        if self.acl_store is None:
            return {**empty, "error_code": ErrorCode.security_disabled, "error_message": NO_ACL_STORE_ON_BROKER}
        grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
        for binding in self.acl_store.describe_acls(_filter(body, *codes)):
            key = (int(binding.resource_type), binding.resource_name, int(binding.pattern_type))
            grouped.setdefault(key, []).append(
                {"principal": binding.principal, "host": binding.host, "operation": binding.operation, "permission_type": binding.permission}
            )
        resources = [
            {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": acls} for (kind, name, pattern), acls in sorted(grouped.items())
        ]
        # `new DescribeAclsResponseData()` leaves the message at the generated default, "".
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": UNSET_MESSAGE, "resources": resources}


def _filter_only(binding: AclBinding) -> bool:
    """Values a filter may hold but a binding may not (Kafka's ResourcePattern / AccessControlEntry constructors)."""
    return (
        binding.resource_type is ResourceType.ANY
        or binding.pattern_type in (PatternType.ANY, PatternType.MATCH)
        or binding.operation is Operation.ANY
        or binding.permission is PermissionType.ANY
    )


def _filter(item: Any, resource: int, pattern: int, operation: int, permission: int) -> AclBindingFilter:
    return AclBindingFilter(
        from_code(ResourceType, resource),
        item.resource_name_filter,
        from_code(PatternType, pattern),
        item.principal_filter,
        item.host_filter,
        from_code(Operation, operation),
        from_code(PermissionType, permission),
    )


def _creations(code: int, message: str | None, count: int) -> dict[str, Any]:
    return {"throttle_time": 0, "results": [{"error_code": code, "error_message": message} for _ in range(count)]}


def _filter_results(code: int, message: str | None, count: int) -> dict[str, Any]:
    return {"throttle_time": 0, "filter_results": [{"error_code": code, "error_message": message, "matching_acls": []} for _ in range(count)]}


def _matching(binding: AclBinding) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": binding.resource_type,
        "resource_name": binding.resource_name,
        "pattern_type": binding.pattern_type,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation,
        "permission_type": binding.permission,
    }


def binding_filter_of(item: Any) -> AclBindingFilter:
    """A DeleteAcls filter or a DescribeAcls request as a filter (unknown codes are UNKNOWN, as Kafka reads them)."""
    return _filter(item, *filter_codes(item, int(getattr(item, "__version__", FIRST_PATTERN_VERSION))))
