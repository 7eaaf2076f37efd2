"""The Metadata read: the topics a client may DESCRIBE, as the read upstream describes them, with the cluster's
brokers at the advertised endpoint of the client's listener (KIP-103, proxy/forward/broker_view.py); by name, by
topic id (KIP-516), or all.

A Metadata that asks for no topic (only the brokers and the controller) is answered from what the proxy knows
itself, without the upstream, and audited as `local`.
"""

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from apiversions import VersionRange
from authz import Operation, RequestContext, ResourceType
from authz.actions import ResourceAccess
from envelope.apis import ApiKey
from envelope.header import RequestHeaderInfo
from envelope.responses import AUTHORIZED_OPERATIONS_OMITTED, NO_NODE, metadata_topic_error
from envelope.versions import METADATA_TOPIC_IDS
from proxy.forward.broker_view import BrokerSet
from proxy.forward.local import metadata_response
from proxy.forward.reads import ReadPath, ReadResult, ReadUnavailable, as_dict, topic_access
from proxy.net.settings import ListenerConfig

log = logging.getLogger(__name__)

METADATA_CLUSTER_OPERATIONS = range(8, 11)
"""The Metadata versions that carry cluster_authorized_operations (v11 moved them to DescribeCluster)."""
METADATA_TOPIC_OPERATIONS = 8
"""The first Metadata version with topic_authorized_operations."""


async def answer(path: ReadPath, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
    if (
        body.topics is not None
        and not body.topics
        and header.api_version > 0
        and not getattr(body, "include_cluster_authorized_operations", False)  # v8-10: the edge authorizer answers those
    ):
        # Only brokers and the controller asked for: the proxy knows those itself.
        cluster_id = await path.cluster_id()
        brokers = await path.brokers()
        return ReadResult(metadata_response(header, body, brokers=brokers, listener=listener, cluster_id=cluster_id), [], local=True)
    return await _read(path, ctx, listener, header, body)


async def _read(path: ReadPath, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
    if header.api_version >= METADATA_TOPIC_IDS and body.topics and any(t.topic_id is not None for t in body.topics):
        return await _by_id(path, ctx, listener, header, body)
    # v0 has no null: an empty list asks for every topic there
    explicit = body.topics is not None and (header.api_version > 0 or bool(body.topics))
    accesses = await path.offload.entries(len(body.topics or ()), _requested_topics, body)
    error: tuple[int, str | None] = (ErrorCode.none, None)
    decisions = await path.allowed(ctx, accesses)
    allowed_names, denied, refused = await path.offload.entries(len(accesses), _split_decisions, accesses, decisions)
    topics: dict[str, dict[str, Any]] = {}
    cluster_id = await path.cluster_id()
    if not explicit or allowed_names:
        request = {
            "topics": [{"name": n, "topic_id": None} for n in allowed_names] if explicit else None if header.api_version > 0 else [],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
        try:
            response = await path.upstream_call(ApiKey.METADATA, header.api_version, request)
        except ReadUnavailable as exc:
            log.warning("Metadata for %s: %s", ctx.principal, exc)
            error = (ErrorCode.unknown_server_error, str(exc))
            for name in allowed_names:
                topics[name] = metadata_topic_error(name, ErrorCode.unknown_server_error)
        else:
            # Metadata v0 and v1 carry no cluster id
            path.identity.accept(f"read upstream {path.upstream.settings.address}", getattr(response, "cluster_id", None))
            path.broker_view.learn(response)
            older = int(type(response).__version__) < header.api_version  # an upstream that ends below the client
            upstream_topics = [_with_newer_fields(as_dict(t)) if older else as_dict(t) for t in response.topics]
            if not explicit:
                # All-topics requests silently leave out what the client may not DESCRIBE, as Kafka does.
                everything = [topic_access(str(t["name"]), Operation.DESCRIBE) for t in upstream_topics]
                visible = await path.allowed(ctx, everything)
                upstream_topics = [t for t, ok in zip(upstream_topics, visible, strict=True) if ok]
                accesses = [a for a, ok in zip(everything, visible, strict=True) if ok]
            operations = [AUTHORIZED_OPERATIONS_OMITTED] * len(upstream_topics)
            if header.api_version >= METADATA_TOPIC_OPERATIONS and body.include_topic_authorized_operations:
                # Kafka reports them for every topic the caller may describe, known or not.
                names_seen = [str(t["name"]) for t in upstream_topics]
                operations = await path.authorized_operations(ctx, ResourceType.TOPIC, names_seen)
            for topic, topic_operations in zip(upstream_topics, operations, strict=True):
                topic["topic_authorized_operations"] = topic_operations
                topics[str(topic["name"])] = topic
    cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
    if header.api_version in METADATA_CLUSTER_OPERATIONS and body.include_cluster_authorized_operations:
        cluster_operations = await path.cluster_authorized_operations(ctx)
    # Kafka's order: the topics it describes (the upstream's order), then those the caller may not describe.
    asked = frozenset(allowed_names)
    answered = [t for name, t in topics.items() if name in asked] if explicit else list(topics.values())
    ordered = answered + list(refused.values())
    brokers = await path.brokers()
    frame = await path.offload.entries(len(ordered), _frame, path, header, listener, cluster_id, brokers, ordered, cluster_operations)
    return ReadResult(frame, accesses, denied, *error)

async def _by_id(path: ReadPath, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
    """Metadata naming topics by id, as Kafka answers it: the names in the request are then ignored; an unknown id is
    UNKNOWN_TOPIC_ID, first; a topic the caller may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED with its id and no
    name, last. Only the upstream can name an id, so it is asked for every id, and its answer is filtered."""
    ids = list(dict.fromkeys(t.topic_id for t in body.topics if t.topic_id is not None))
    cluster_id = await path.cluster_id()
    request = {
        "topics": [{"name": None, "topic_id": i} for i in ids],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    error: tuple[int, str | None] = (ErrorCode.none, None)
    accesses: list[ResourceAccess] = []
    denied: list[ResourceAccess] = []
    try:
        if (path.upstream.controller_ranges or {}).get(ApiKey.METADATA, VersionRange(0, 0)).max < METADATA_TOPIC_IDS:
            raise ReadUnavailable(f"the read upstream {path.upstream.settings.address} cannot look topics up by id")
        response = await path.upstream_call(ApiKey.METADATA, header.api_version, request)
    except ReadUnavailable as exc:
        log.warning("Metadata by topic id for %s: %s", ctx.principal, exc)
        error = (ErrorCode.unknown_server_error, str(exc))
        topics = [_topic_id_error(i, ErrorCode.unknown_server_error) for i in ids]
    else:
        path.broker_view.learn(response)
        # v12+ on both sides (checked above): the topics have every field the client's version has
        answered = {t["topic_id"]: t for t in (as_dict(t) for t in response.topics) if t["topic_id"] is not None}
        named = [answered[i] for i in ids if i in answered and answered[i]["name"] is not None]
        accesses = [topic_access(str(t["name"]), Operation.DESCRIBE) for t in named]
        visible = await path.allowed(ctx, accesses)
        denied = [a for a, ok in zip(accesses, visible, strict=True) if not ok]
        described = [t for t, ok in zip(named, visible, strict=True) if ok]
        operations = [AUTHORIZED_OPERATIONS_OMITTED] * len(described)
        if body.include_topic_authorized_operations:
            operations = await path.authorized_operations(ctx, ResourceType.TOPIC, [str(t["name"]) for t in described])
        for topic, topic_operations in zip(described, operations, strict=True):
            topic["topic_authorized_operations"] = topic_operations
        unknown = [_topic_id_error(i, ErrorCode.unknown_topic_id) for i in ids if i not in answered or answered[i]["name"] is None]
        refused = [
            _topic_id_error(t["topic_id"], ErrorCode.topic_authorization_failed) for t, ok in zip(named, visible, strict=True) if not ok
        ]
        topics = unknown + described + refused
    frame = _frame(path, header, listener, cluster_id, await path.brokers(), topics)
    return ReadResult(frame, accesses, denied, *error)

def _frame(
    path: ReadPath,
    header: RequestHeaderInfo,
    listener: ListenerConfig,
    cluster_id: str,
    brokers: BrokerSet,
    topics: list[dict[str, Any]],
    cluster_operations: int = AUTHORIZED_OPERATIONS_OMITTED,
) -> bytes:
    values: dict[str, Any] = {
        "throttle_time": 0,
        "brokers": brokers.listed(listener.advertised_host, listener.advertised_port),
        "cluster_id": cluster_id,
        "controller_id": brokers.controller_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_operations,
        "error_code": ErrorCode.none,
    }
    return path.encode(header, values)



def error_answer(body: Any, error: dict[str, Any]) -> dict[str, Any]:
    """MetadataRequest.getErrorResponse: each topic asked (a null name as ""), with its id and the code; no broker."""
    code = error["error_code"]
    topics = [{**metadata_topic_error(t.name or "", code), "topic_id": getattr(t, "topic_id", None)} for t in body.topics or ()]
    return {
        "error_code": code,
        "topics": topics,
        "brokers": [],
        "cluster_id": None,
        "controller_id": NO_NODE,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


_TOPIC_DEFAULTS = {"is_internal": False, "topic_id": None}
_PARTITION_DEFAULTS = {"leader_epoch": -1, "offline_replicas": []}


def _with_newer_fields(topic: dict[str, Any]) -> dict[str, Any]:
    """A topic as an older upstream answered it (the proxy asks at the highest version both speak), with Kafka's
    defaults for the fields of the client's newer version that it lacks: no topic id (v10+), not internal (v1+), no
    leader epoch (v7+), no offline replica (v5+)."""
    partitions = [{**_PARTITION_DEFAULTS, **p} for p in topic.get("partitions") or ()]
    return {**_TOPIC_DEFAULTS, **topic, "partitions": partitions}


def _split_decisions(
    accesses: list[ResourceAccess], decisions: list[bool]
) -> tuple[list[str], list[ResourceAccess], dict[str, dict[str, Any]]]:
    """(allowed names, denied accesses, the denied topics' error entries of the answer)."""
    allowed = [a.name for a, ok in zip(accesses, decisions, strict=True) if ok]
    denied = [a for a, ok in zip(accesses, decisions, strict=True) if not ok]
    return allowed, denied, {a.name: metadata_topic_error(a.name, ErrorCode.topic_authorization_failed) for a in denied}


def _topic_id_error(topic_id: Any, code: int) -> dict[str, Any]:
    """A Metadata topic entry for a topic asked for by id that only carries an error: no name, as Kafka answers it."""
    return {**metadata_topic_error("", code), "name": None, "topic_id": topic_id}


def _requested_topics(body: Any) -> list[ResourceAccess]:
    """The DESCRIBE each topic a Metadata request names needs: each name once, as Kafka answers each once."""
    names = dict.fromkeys(str(t.name) for t in body.topics or () if t.name is not None)
    return [topic_access(name, Operation.DESCRIBE) for name in names]
