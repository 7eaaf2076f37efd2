"""The DescribeConfigs read: the resources a client may DESCRIBE_CONFIGS, as the read upstream describes them."""

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Operation, PatternType, RequestContext, ResourceType
from authz.actions import CONFIG_TOPIC, ResourceAccess
from authz.model import CLUSTER_NAME
from envelope.apis import ApiKey
from envelope.error_messages import default_message
from envelope.header import RequestHeaderInfo
from proxy.forward.reads import ReadPath, ReadResult, ReadUnavailable, as_dict, denial_code, topic_access
from proxy.net.settings import ListenerConfig

log = logging.getLogger(__name__)

CONFIG_GROUP = 32
CONFIG_RESOURCE_TYPES = frozenset({2, 4, 8, 16, 32})  # ConfigResource.Type: TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP


async def answer(path: ReadPath, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
    """As a broker's ConfigHelper answers: the resources the client may describe (as the upstream describes them),
    then the denied ones; a resource type Kafka does not know fails the whole request before anything is asked."""
    requested = [as_dict(r) for r in body.resources]
    if any(int(r["resource_type"]) not in CONFIG_RESOURCE_TYPES for r in requested):
        message = default_message(ErrorCode.invalid_request)
        failed = [_config_failed(r, ErrorCode.invalid_request, message) for r in requested]
        return ReadResult(path.encode(header, {"throttle_time": 0, "results": failed}), [], [], ErrorCode.invalid_request, message)
    accesses = [_config_access(int(r["resource_type"]), str(r["resource_name"])) for r in requested]
    allowed = await path.allowed(ctx, accesses)
    error: tuple[int, str | None] = (ErrorCode.none, None)
    wanted = [r for r, ok in zip(requested, allowed, strict=True) if ok]
    results: list[dict[str, Any]] = []
    if wanted:
        values = {**as_dict(body), "resources": wanted}
        try:
            results = [as_dict(r) for r in (await path.upstream_call(ApiKey.DESCRIBE_CONFIGS, header.api_version, values)).results]
        except ReadUnavailable as exc:
            log.warning("DescribeConfigs for %s: %s", ctx.principal, exc)
            error = (ErrorCode.unknown_server_error, str(exc))
            results = [_config_failed(r, ErrorCode.unknown_server_error, str(exc)) for r in wanted]
    results += [_config_denied(r, access) for r, access, ok in zip(requested, accesses, allowed, strict=True) if not ok]
    denied = [a for a, ok in zip(accesses, allowed, strict=True) if not ok]
    frame = path.encode(header, {"throttle_time": 0, "results": results})
    return ReadResult(frame, accesses, denied, *error)



def _config_access(resource_type: int, name: str) -> ResourceAccess:
    if resource_type == CONFIG_TOPIC:
        return topic_access(name, Operation.DESCRIBE_CONFIGS)
    if resource_type == CONFIG_GROUP:
        return ResourceAccess(ResourceType.GROUP, name, PatternType.LITERAL, Operation.DESCRIBE_CONFIGS)
    return ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, Operation.DESCRIBE_CONFIGS)


def _config_denied(resource: dict[str, Any], access: ResourceAccess) -> dict[str, Any]:
    code = denial_code(access)
    return _config_failed(resource, code, default_message(ErrorCode(code)))  # Kafka's `error.message`


def _config_failed(resource: dict[str, Any], code: int, message: str) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
        "configs": [],
    }
