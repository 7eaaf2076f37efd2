"""What Kafka's ACL request classes refuse while the request is read, before any handler or authorizer runs.

CreateAclsRequest, DeleteAclsRequest and DescribeAclsRequest check their codes
in their constructors: an UNKNOWN (code 0) resource type, pattern type,
operation or permission type makes the request unreadable. A broker then closes
the client's connection (its SocketServer cannot build the request), so nothing
is forwarded or asked upstream; inside an Envelope the controller answers
UNSUPPORTED_VERSION. Codes that no enum knows (99, say) are read and decided
later, as Kafka does. Version 0 carries no pattern type: it reads as LITERAL.
"""

from typing import Any

from authz.model import PatternType
from envelope.apis import ApiKey

FIRST_PATTERN_VERSION = 1  # CreateAcls/DeleteAcls/DescribeAcls v0 know LITERAL only
_UNKNOWN = int(PatternType.UNKNOWN)  # every one of the four enums has UNKNOWN = 0


def acl_codes(item: Any, resource_field: str, pattern_field: str, version: int) -> tuple[int, int, int, int]:
    """(resource type, pattern type, operation, permission type) codes as sent."""
    pattern = int(getattr(item, pattern_field, PatternType.LITERAL)) if version >= FIRST_PATTERN_VERSION else int(PatternType.LITERAL)
    return int(getattr(item, resource_field)), pattern, int(item.operation), int(item.permission_type)


def filter_codes(item: Any, version: int) -> tuple[int, int, int, int]:
    """The codes of a DeleteAcls filter or of a DescribeAcls request."""
    return acl_codes(item, "resource_type_filter", "pattern_type_filter", version)


def creation_codes(item: Any, version: int) -> tuple[int, int, int, int]:
    return acl_codes(item, "resource_type", "resource_pattern_type", version)


def unreadable_acl_request(api_key: int, body: Any) -> str | None:
    """Why Kafka cannot read this request (its constructor's words), or None: for any other API, always None."""
    if api_key == ApiKey.CREATE_ACLS:
        version = int(body.__version__)
        if any(_UNKNOWN in creation_codes(item, version) for item in body.creations):
            return "CreatableAcls contain unknown elements"
    elif api_key == ApiKey.DELETE_ACLS:
        version = int(body.__version__)
        if any(_UNKNOWN in filter_codes(item, version) for item in body.filters):
            return "Filters contain UNKNOWN elements"
    elif api_key == ApiKey.DESCRIBE_ACLS:
        if _UNKNOWN in filter_codes(body, int(body.__version__)):
            return "DescribeAclsRequest contains UNKNOWN elements"
    return None
