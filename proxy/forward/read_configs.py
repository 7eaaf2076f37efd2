"""The DescribeConfigs read: the resources a client may DESCRIBE_CONFIGS, as the read upstream describes them."""

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Operation, PatternType, RequestContext, ResourceType
from authz.actions import ResourceAccess
from authz.model import CLUSTER_NAME
from envelope.apis import ApiKey
from envelope.config_resources import CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_GROUP, CONFIG_RESOURCE_TYPES, CONFIG_TOPIC
from envelope.config_sources import DEFAULT_CONFIG, UNKNOWN_CONFIG, UNKNOWN_CONFIG_TYPE
from envelope.error_messages import default_message
from envelope.header import RequestHeaderInfo
from proxy.forward.broker_view import BrokerSet
from proxy.forward.reads import ReadPath, ReadResult, ReadUnavailable, as_dict, denial_code, topic_access
from proxy.net.addresses import ControllerAddress
from proxy.net.settings import ListenerConfig

log = logging.getLogger(__name__)



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
        routes = await path.offload.entries(len(wanted), _routes, wanted, await path.brokers(), path.upstream.active_id)
        answered: dict[int, dict[str, Any]] = {}
        for broker, group in _grouped(routes):
            resources = [{**wanted[i], "resource_name": name} for i, name in group]
            values = {**as_dict(body), "resources": resources}
            try:
                if broker is None:
                    response = await path.upstream_call(ApiKey.DESCRIBE_CONFIGS, header.api_version, values)
                else:
                    response = await path.broker_call(broker, ApiKey.DESCRIBE_CONFIGS, header.api_version, values)
                older = int(type(response).__version__) < header.api_version  # an upstream that ends below the client
                # Each result under the name the client asked for: the broker knows itself by its own id.
                answered.update(
                    {
                        i: {**(_with_newer_fields(as_dict(r)) if older else as_dict(r)), "resource_name": wanted[i]["resource_name"]}
                        for (i, _), r in zip(group, response.results, strict=True)
                    }
                )
            except ReadUnavailable as exc:
                log.warning("DescribeConfigs for %s: %s", ctx.principal, exc)
                error = (ErrorCode.unknown_server_error, str(exc))
                answered.update({i: _config_failed(wanted[i], ErrorCode.unknown_server_error, str(exc)) for i, _ in group})
        results = [answered[i] for i in range(len(wanted))]
    results += [_config_denied(r, access) for r, access, ok in zip(requested, accesses, allowed, strict=True) if not ok]
    denied = [a for a, ok in zip(accesses, allowed, strict=True) if not ok]
    frame = path.encode(header, {"throttle_time": 0, "results": results})
    return ReadResult(frame, accesses, denied, *error)



# Kafka's values for the fields an older answer lacks: ConfigSource UNKNOWN (v1+), ConfigType UNKNOWN and no
# documentation (v3+), no synonyms (v1+). A v0 answer's is_default becomes DEFAULT_CONFIG, as a broker reads it.
_CONFIG_DEFAULTS = {"synonyms": (), "config_type": UNKNOWN_CONFIG_TYPE, "documentation": None}


def _with_newer_fields(result: dict[str, Any]) -> dict[str, Any]:
    """A resource's result as an older upstream answered it (the proxy asks at the highest version both speak), with
    Kafka's defaults for the fields of the client's newer version that it lacks."""
    entries = []
    for entry in result.get("configs") or ():
        source = entry.get("config_source")
        if source is None:
            source = DEFAULT_CONFIG if entry.get("is_default") else UNKNOWN_CONFIG
        entries.append({**_CONFIG_DEFAULTS, **entry, "config_source": source})
    return {**result, "configs": entries}


def _routes(wanted: list[dict[str, Any]], brokers: BrokerSet, upstream_id: int) -> list[tuple[ControllerAddress | None, str]]:
    """Where each resource is asked, and under which name: a broker's own configs (and loggers) only that broker
    answers, so each goes to the broker it names, at the address the read upstream gives for it; everything else
    (and an id outside the brokers listed, which gets that broker's own Kafka error) goes to the read upstream.
    While the proxy stands alone as the only broker, its own id means the read upstream's node."""
    routes: list[tuple[ControllerAddress | None, str]] = []
    for resource in wanted:
        name = str(resource["resource_name"])
        broker_id = _broker_id(int(resource["resource_type"]), name)
        broker = None if broker_id is None else brokers.get(broker_id)
        if broker is not None and broker.upstream is not None:
            routes.append((broker.upstream, str(broker.node_id)))
        elif broker is not None and upstream_id >= 0:
            routes.append((None, str(upstream_id)))
        else:
            routes.append((None, name))
    return routes


def _grouped(routes: list[tuple[ControllerAddress | None, str]]) -> list[tuple[ControllerAddress | None, list[tuple[int, str]]]]:
    """The resources by destination, in the order first named; each with its index in the request and its name."""
    groups: dict[ControllerAddress | None, list[tuple[int, str]]] = {}
    for index, (broker, name) in enumerate(routes):
        groups.setdefault(broker, []).append((index, name))
    return list(groups.items())


def _broker_id(resource_type: int, name: str) -> int | None:
    """The broker a BROKER or BROKER_LOGGER resource names; None for other types, the cluster default ("") and names
    that are no number (the upstream refuses those with Kafka's own message)."""
    if resource_type not in (CONFIG_BROKER, CONFIG_BROKER_LOGGER) or not name.isascii() or not name.lstrip("-").isdigit():
        return None
    return int(name)


def error_answer(body: Any, error: dict[str, Any]) -> dict[str, Any]:
    """DescribeConfigsRequest.getErrorResponse: each resource asked, with the code and its Errors.message(), no config."""
    code = error["error_code"]
    failed = {"error_code": code, "error_message": default_message(code), "configs": []}
    return {"results": [{**failed, "resource_type": r.resource_type, "resource_name": r.resource_name} for r in body.resources]}


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
