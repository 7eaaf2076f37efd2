"""The reads gated by one operation on the cluster, then passed through as the client asked: DescribeAcls,
DescribeClientQuotas and DescribeUserScramCredentials (the operation of each: authz/actions.py CLUSTER_OPERATIONS)."""

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from authz import PatternType, RequestContext, ResourceType
from authz.actions import CLUSTER_OPERATIONS, ResourceAccess, cluster_denied
from authz.model import CLUSTER_NAME
from envelope.apis import ApiKey, api_name
from envelope.header import RequestHeaderInfo
from proxy.forward.reads import ReadPath, ReadResult, ReadUnavailable, as_dict
from proxy.net.settings import ListenerConfig

log = logging.getLogger(__name__)


def error_answer(body: Any, error: dict[str, Any]) -> dict[str, Any]:
    """getErrorResponse of the three, one shape (build_entity keeps the list field the API has): DescribeAcls no
    resources, DescribeClientQuotas null entries, DescribeUserScramCredentials one result per user asked, each with
    the error and no user name (DescribeUserScramCredentialsRequest.getErrorResponse; Kafka 4.3.1 answers a denial so)."""
    users = getattr(body, "users", None) or ()
    return {**error, "resources": [], "entries": None, "results": [{**error, "user": "", "credential_infos": []} for _ in users]}


async def answer(path: ReadPath, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
    operation = CLUSTER_OPERATIONS[header.api_key]
    access = ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, operation)
    (ok,) = await path.allowed(ctx, [access])
    if not ok:
        # Kafka's words: DescribeAcls throws ClusterAuthorizationException, the other two answer the bare code.
        message = cluster_denied(ctx, operation) if header.api_key == ApiKey.DESCRIBE_ACLS else None
        error = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": message}
        values = {"throttle_time": 0, **error_answer(body, error)}
        return ReadResult(path.encode(header, values), [access], [access], ErrorCode.cluster_authorization_failed)
    try:
        response = await path.upstream_call(header.api_key, header.api_version, as_dict(body))
    except ReadUnavailable as exc:
        log.warning("%s for %s: %s", api_name(header.api_key), ctx.principal, exc)
        values = {"throttle_time": 0, **error_answer(body, {"error_code": ErrorCode.unknown_server_error, "error_message": str(exc)})}
        return ReadResult(path.encode(header, values), [access], [], ErrorCode.unknown_server_error, str(exc))
    # The upstream's throttle is the proxy's own quota there, not this client's: Kafka would answer it 0.
    answer = {**as_dict(response), "throttle_time": 0}
    return ReadResult(path.encode(header, answer), [access], [], int(answer["error_code"]), answer.get("error_message"))
