"""Reads through the proxy, authorized at the edge: Metadata with topics, DescribeConfigs, DescribeAcls,
DescribeClientQuotas and DescribeUserScramCredentials.

None of them may travel in an Envelope, so the upstream would see the proxy
rather than the client. The proxy asks its edge authorizer first and sends
only what the client may see, under its own identity, to the read upstream
(a broker listener given by `read.bootstrap.servers`, or the controller).
Answers are rebuilt at the client's version with the proxy as the only
broker and the controller, at the advertised endpoint of the client's
listener (KIP-103).
"""

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from apiversions import VersionRange
from authz import Operation, PatternType, RequestContext, ResourceType
from authz.actions import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_OPERATIONS,
    CONFIG_TOPIC,
    SUPPORTED_OPERATIONS,
    ResourceAccess,
    cluster_denied,
    operations_field,
    supported_accesses,
)
from authz.model import CLUSTER_NAME
from envelope.apis import ApiKey, EndpointType, api_name
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, encode_response, request_schema, response_schema
from envelope.error_messages import default_message
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo
from envelope.responses import metadata_topic_error
from proxy.forward.edge_authz import EdgeAuthorizer
from proxy.forward.local import describe_cluster_response, endpoint_error
from proxy.forward.offload import CpuOffload
from proxy.net.settings import ListenerConfig
from proxy.upstream.cluster_identity import ClusterIdentity
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import ControllerPool

log = logging.getLogger(__name__)

FIRST_CLUSTER_ID_WAIT = 5.0
"""Seconds an answer waits for the first controller to report the cluster id before its connection is closed."""
METADATA_WITH_CLUSTER_ID = 12
"""Metadata has carried the cluster id since v2; v12 is the newest that Kafka 3.x and 4.x brokers share."""
# Reads gated by one operation on CLUSTER, then passed through as the client asked.
CONFIG_GROUP = 32
CONFIG_RESOURCE_TYPES = frozenset({2, 4, 8, 16, 32})  # ConfigResource.Type: TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP
METADATA_CLUSTER_OPERATIONS = range(8, 11)
"""The Metadata versions that carry cluster_authorized_operations (v11 moved them to DescribeCluster)."""
METADATA_TOPIC_OPERATIONS = 8
"""The first Metadata version with topic_authorized_operations."""
METADATA_TOPIC_IDS = 12
"""The first Metadata version that may name topics by id alone (KIP-516); Kafka refuses ids below it."""


@dataclass
class ReadResult:
    """The answer frame, and what the audit record says about it."""

    frame: bytes
    resources: list[ResourceAccess]
    denied: list[ResourceAccess] = field(default_factory=list)
    error_code: int = ErrorCode.none
    error_message: str | None = None


class ReadUnavailable(Exception):
    """The read upstream could not answer (down, or it does not serve this API)."""


class ReadPath:
    def __init__(
        self, upstream: ControllerPool, edge: EdgeAuthorizer, *, node_id: int, identity: ClusterIdentity, offload: CpuOffload | None = None
    ) -> None:
        self.upstream = upstream
        self.edge = edge
        self.offload = offload or CpuOffload()
        self.node_id = node_id
        self.identity = identity

    async def cluster_id(self) -> str:
        """The id of the cluster, for every answer that carries one; ReadUnavailable while nobody has said it.

        Usually a controller has reported it by now. Otherwise (a controller that answers no DescribeCluster to
        the proxy) the read upstream's Metadata carries it, and last the first controller may still report it."""
        known = self.identity.cluster_id
        if known is not None:
            return known
        request = {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        try:
            response = await self._upstream_call(ApiKey.METADATA, METADATA_WITH_CLUSTER_ID, request)
        except ReadUnavailable as exc:
            log.debug("cluster id from the read upstream: %s", exc)
        else:
            self.identity.accept(f"read upstream {self.upstream.settings.address}", getattr(response, "cluster_id", None))
        # Discovery has had its first round before the listeners opened: a short wait covers a round in progress.
        known = await self.identity.wait(min(self.upstream.settings.request_timeout, FIRST_CLUSTER_ID_WAIT))
        if known is None:
            raise ReadUnavailable(
                "the cluster id is not known: no controller answered DescribeCluster to the proxy (it needs Alter on the "
                "cluster for that) and the read upstream's Metadata did not carry one; grant it, or set cluster.id"
            )
        return known

    async def answer(self, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
        if header.api_key == ApiKey.METADATA:
            return await self._metadata(ctx, listener, header, body)
        if header.api_key == ApiKey.DESCRIBE_CONFIGS:
            return await self._describe_configs(ctx, header, body)
        return await self._cluster_gated(ctx, header, body)

    async def _allowed(self, ctx: RequestContext, accesses: list[ResourceAccess]) -> list[bool]:
        return await self.edge.allowed(ctx, accesses)

    async def _authorized_operations(self, ctx: RequestContext, resource_type: ResourceType, names: list[str]) -> list[int]:
        """AuthHelper.authorizedOperations for each name: the bit field of the operations the caller is allowed."""
        supported = SUPPORTED_OPERATIONS[resource_type]
        decisions = await self._allowed(ctx, [access for name in names for access in supported_accesses(resource_type, name)])
        width = len(supported)
        return [
            operations_field([op for op, ok in zip(supported, decisions[i * width : (i + 1) * width], strict=True) if ok])
            for i in range(len(names))
        ]

    async def cluster_authorized_operations(self, ctx: RequestContext) -> int:
        """cluster_authorized_operations when asked for: 0 for a caller who may not DESCRIBE the cluster, as in Kafka."""
        describe = ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, Operation.DESCRIBE)
        if not (await self._allowed(ctx, [describe]))[0]:
            return 0
        (operations,) = await self._authorized_operations(ctx, ResourceType.CLUSTER, [CLUSTER_NAME])
        return operations

    async def describe_cluster(
        self, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any, cluster_id: str
    ) -> bytes:
        """DescribeCluster, answered by the proxy as the only broker (proxy/forward/local.py)."""
        operations = AUTHORIZED_OPERATIONS_OMITTED
        asked_type = int(getattr(body, "endpoint_type", EndpointType.BROKER))  # v1+
        if body.include_cluster_authorized_operations and endpoint_error(header.api_version, asked_type) is None:
            operations = await self.cluster_authorized_operations(ctx)
        return describe_cluster_response(
            header, body, node_id=self.node_id, listener=listener, cluster_id=cluster_id, cluster_authorized_operations=operations
        )

    async def _upstream_call(self, api_key: int, client_version: int, values: dict[str, Any]) -> Any:
        """The upstream's answer to `values`, asked at the highest version both sides speak."""
        ranges = self.upstream.controller_ranges or {}
        served = ranges.get(api_key)
        if served is None or served.min > client_version:
            raise ReadUnavailable(
                f"the read upstream {self.upstream.settings.address} does not serve this API at v{client_version} or lower"
            )
        version = min(client_version, served.max)
        body = build_entity(request_schema(api_key, version), values)
        try:
            frame = await self.upstream.request(lambda cid: encode_request(body, correlation_id=cid, client_id="envelope-proxy-read"))
            _, response = decode_response_body(api_key, version, frame)
        except (UpstreamUnavailable, ProtocolError) as exc:
            raise ReadUnavailable(str(exc)) from exc
        return response

    def _encode(self, header: RequestHeaderInfo, values: dict[str, Any]) -> bytes:
        entity = build_entity(response_schema(header.api_key, header.api_version), values)
        return encode_response(entity, correlation_id=header.correlation_id)

    # -- Metadata ------------------------------------------------------------------------

    async def _metadata(self, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
        if header.api_version >= METADATA_TOPIC_IDS and body.topics and any(t.topic_id is not None for t in body.topics):
            return await self._metadata_by_id(ctx, listener, header, body)
        # v0 has no null: an empty list asks for every topic there
        explicit = body.topics is not None and (header.api_version > 0 or bool(body.topics))
        accesses = await self.offload.entries(len(body.topics or ()), _requested_topics, body)
        error: tuple[int, str | None] = (ErrorCode.none, None)
        decisions = await self._allowed(ctx, accesses)
        allowed_names, denied, refused = await self.offload.entries(len(accesses), _split_decisions, accesses, decisions)
        topics: dict[str, dict[str, Any]] = {}
        cluster_id = await self.cluster_id()
        if not explicit or allowed_names:
            request = {
                "topics": [{"name": n, "topic_id": None} for n in allowed_names] if explicit else None if header.api_version > 0 else [],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
            try:
                response = await self._upstream_call(ApiKey.METADATA, header.api_version, request)
            except ReadUnavailable as exc:
                log.warning("Metadata for %s: %s", ctx.principal, exc)
                error = (ErrorCode.unknown_server_error, str(exc))
                for name in allowed_names:
                    topics[name] = metadata_topic_error(name, ErrorCode.unknown_server_error)
            else:
                # Metadata v0 and v1 carry no cluster id
                self.identity.accept(f"read upstream {self.upstream.settings.address}", getattr(response, "cluster_id", None))
                upstream_topics = [_as_dict(t) for t in response.topics]
                if not explicit:
                    # All-topics requests silently leave out what the client may not DESCRIBE, as Kafka does.
                    everything = [_topic(str(t["name"]), Operation.DESCRIBE) for t in upstream_topics]
                    visible = await self._allowed(ctx, everything)
                    upstream_topics = [t for t, ok in zip(upstream_topics, visible, strict=True) if ok]
                    accesses = [a for a, ok in zip(everything, visible, strict=True) if ok]
                operations = [AUTHORIZED_OPERATIONS_OMITTED] * len(upstream_topics)
                if header.api_version >= METADATA_TOPIC_OPERATIONS and body.include_topic_authorized_operations:
                    # Kafka reports them for every topic the caller may describe, known or not.
                    names_seen = [str(t["name"]) for t in upstream_topics]
                    operations = await self._authorized_operations(ctx, ResourceType.TOPIC, names_seen)
                for topic, topic_operations in zip(upstream_topics, operations, strict=True):
                    topic["topic_authorized_operations"] = topic_operations
                    topics[str(topic["name"])] = topic
        cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
        if header.api_version in METADATA_CLUSTER_OPERATIONS and body.include_cluster_authorized_operations:
            cluster_operations = await self.cluster_authorized_operations(ctx)
        # Kafka's order: the topics it describes (the upstream's order), then those the caller may not describe.
        asked = frozenset(allowed_names)
        answered = [t for name, t in topics.items() if name in asked] if explicit else list(topics.values())
        ordered = answered + list(refused.values())
        frame = await self.offload.entries(len(ordered), self._metadata_frame, header, listener, cluster_id, ordered, cluster_operations)
        return ReadResult(frame, accesses, denied, *error)

    async def _metadata_by_id(self, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
        """Metadata naming topics by id, as Kafka answers it: the names in the request are then ignored; an unknown id is
        UNKNOWN_TOPIC_ID, first; a topic the caller may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED with its id and no
        name, last. Only the upstream can name an id, so it is asked for every id, and its answer is filtered."""
        ids = list(dict.fromkeys(t.topic_id for t in body.topics if t.topic_id is not None))
        cluster_id = await self.cluster_id()
        request = {
            "topics": [{"name": None, "topic_id": i} for i in ids],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        error: tuple[int, str | None] = (ErrorCode.none, None)
        accesses: list[ResourceAccess] = []
        denied: list[ResourceAccess] = []
        try:
            if (self.upstream.controller_ranges or {}).get(ApiKey.METADATA, VersionRange(0, 0)).max < METADATA_TOPIC_IDS:
                raise ReadUnavailable(f"the read upstream {self.upstream.settings.address} cannot look topics up by id")
            response = await self._upstream_call(ApiKey.METADATA, header.api_version, request)
        except ReadUnavailable as exc:
            log.warning("Metadata by topic id for %s: %s", ctx.principal, exc)
            error = (ErrorCode.unknown_server_error, str(exc))
            topics = [_topic_id_error(i, ErrorCode.unknown_server_error) for i in ids]
        else:
            answered = {t["topic_id"]: t for t in (_as_dict(t) for t in response.topics) if t["topic_id"] is not None}
            named = [answered[i] for i in ids if i in answered and answered[i]["name"] is not None]
            accesses = [_topic(str(t["name"]), Operation.DESCRIBE) for t in named]
            visible = await self._allowed(ctx, accesses)
            denied = [a for a, ok in zip(accesses, visible, strict=True) if not ok]
            described = [t for t, ok in zip(named, visible, strict=True) if ok]
            operations = [AUTHORIZED_OPERATIONS_OMITTED] * len(described)
            if body.include_topic_authorized_operations:
                operations = await self._authorized_operations(ctx, ResourceType.TOPIC, [str(t["name"]) for t in described])
            for topic, topic_operations in zip(described, operations, strict=True):
                topic["topic_authorized_operations"] = topic_operations
            unknown = [_topic_id_error(i, ErrorCode.unknown_topic_id) for i in ids if i not in answered or answered[i]["name"] is None]
            refused = [
                _topic_id_error(t["topic_id"], ErrorCode.topic_authorization_failed) for t, ok in zip(named, visible, strict=True) if not ok
            ]
            topics = unknown + described + refused
        frame = self._metadata_frame(header, listener, cluster_id, topics)
        return ReadResult(frame, accesses, denied, *error)

    def _metadata_frame(
        self,
        header: RequestHeaderInfo,
        listener: ListenerConfig,
        cluster_id: str,
        topics: list[dict[str, Any]],
        cluster_operations: int = AUTHORIZED_OPERATIONS_OMITTED,
    ) -> bytes:
        values: dict[str, Any] = {
            "throttle_time": 0,
            "brokers": [
                {"node_id": node_id, "host": listener.advertised_host, "port": listener.advertised_port, "rack": None}
                for node_id in [self.node_id, *sorted(_replica_ids(topics) - {self.node_id})]
            ],
            "cluster_id": cluster_id,
            "controller_id": self.node_id,
            "topics": topics,
            "cluster_authorized_operations": cluster_operations,
            "error_code": ErrorCode.none,
        }
        return self._encode(header, values)

    # -- DescribeConfigs -----------------------------------------------------------------

    async def _describe_configs(self, ctx: RequestContext, header: RequestHeaderInfo, body: Any) -> ReadResult:
        """As a broker's ConfigHelper answers: the resources the client may describe (as the upstream describes them),
        then the denied ones; a resource type Kafka does not know fails the whole request before anything is asked."""
        requested = [_as_dict(r) for r in body.resources]
        if any(int(r["resource_type"]) not in CONFIG_RESOURCE_TYPES for r in requested):
            message = default_message(ErrorCode.invalid_request)
            failed = [_config_failed(r, ErrorCode.invalid_request, message) for r in requested]
            return ReadResult(self._encode(header, {"throttle_time": 0, "results": failed}), [], [], ErrorCode.invalid_request, message)
        accesses = [_config_access(int(r["resource_type"]), str(r["resource_name"])) for r in requested]
        allowed = await self._allowed(ctx, accesses)
        error: tuple[int, str | None] = (ErrorCode.none, None)
        wanted = [r for r, ok in zip(requested, allowed, strict=True) if ok]
        results: list[dict[str, Any]] = []
        if wanted:
            values = {**_as_dict(body), "resources": wanted}
            try:
                results = [_as_dict(r) for r in (await self._upstream_call(ApiKey.DESCRIBE_CONFIGS, header.api_version, values)).results]
            except ReadUnavailable as exc:
                log.warning("DescribeConfigs for %s: %s", ctx.principal, exc)
                error = (ErrorCode.unknown_server_error, str(exc))
                results = [_config_failed(r, ErrorCode.unknown_server_error, str(exc)) for r in wanted]
        results += [_config_denied(r, access) for r, access, ok in zip(requested, accesses, allowed, strict=True) if not ok]
        denied = [a for a, ok in zip(accesses, allowed, strict=True) if not ok]
        frame = self._encode(header, {"throttle_time": 0, "results": results})
        return ReadResult(frame, accesses, denied, *error)

    # -- DescribeAcls, DescribeClientQuotas, DescribeUserScramCredentials ------------------

    async def _cluster_gated(self, ctx: RequestContext, header: RequestHeaderInfo, body: Any) -> ReadResult:
        operation = CLUSTER_OPERATIONS[header.api_key]
        access = ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, operation)
        (ok,) = await self._allowed(ctx, [access])
        # One shape for the three answers: build_entity keeps the list field the API has.
        empty = {"throttle_time": 0, "resources": [], "results": [], "entries": None}
        if not ok:
            # Kafka's words: DescribeAcls throws ClusterAuthorizationException, the other two answer the bare code.
            message = cluster_denied(ctx, operation) if header.api_key == ApiKey.DESCRIBE_ACLS else None
            values = {**empty, "error_code": ErrorCode.cluster_authorization_failed, "error_message": message}
            return ReadResult(self._encode(header, values), [access], [access], ErrorCode.cluster_authorization_failed)
        try:
            response = await self._upstream_call(header.api_key, header.api_version, _as_dict(body))
        except ReadUnavailable as exc:
            log.warning("%s for %s: %s", api_name(header.api_key), ctx.principal, exc)
            values = {**empty, "error_code": ErrorCode.unknown_server_error, "error_message": str(exc)}
            return ReadResult(self._encode(header, values), [access], [], ErrorCode.unknown_server_error, str(exc))
        # The upstream's throttle is the proxy's own quota there, not this client's: Kafka would answer it 0.
        answer = {**_as_dict(response), "throttle_time": 0}
        return ReadResult(self._encode(header, answer), [access], [], int(answer["error_code"]), answer.get("error_message"))


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
    return [_topic(name, Operation.DESCRIBE) for name in names]


def _replica_ids(topics: list[dict[str, Any]]) -> set[int]:
    """The brokers the topics' partitions name (leaders, replicas, ISR, offline replicas).

    Each is listed at the proxy's own endpoint: a client resolves a partition's leader through the brokers
    of the answer (`kafka-topics --describe` prints "Leader: none" for an id it cannot find), and whatever
    it sends to that node still reaches the proxy."""
    found: set[int] = set()
    for topic in topics:
        for partition in topic.get("partitions") or ():
            found.add(int(partition.get("leader_id", -1)))
            for key in ("replica_nodes", "isr_nodes", "offline_replicas"):
                found.update(int(node) for node in partition.get(key) or ())
    return {node for node in found if node >= 0}


def _as_dict(entity: Any) -> dict[str, Any]:
    """A decoded kio entity as the version-independent dict `build_entity` takes."""
    return {f.name: _plain(getattr(entity, f.name)) for f in dataclasses.fields(entity)}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _as_dict(value)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _topic(name: str, operation: Operation) -> ResourceAccess:
    return ResourceAccess(ResourceType.TOPIC, name, PatternType.LITERAL, operation)


def _config_access(resource_type: int, name: str) -> ResourceAccess:
    if resource_type == CONFIG_TOPIC:
        return _topic(name, Operation.DESCRIBE_CONFIGS)
    if resource_type == CONFIG_GROUP:
        return ResourceAccess(ResourceType.GROUP, name, PatternType.LITERAL, Operation.DESCRIBE_CONFIGS)
    return ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, Operation.DESCRIBE_CONFIGS)


def denial_code(access: ResourceAccess) -> int:
    """The authorization error Kafka gives for a denied resource of this type."""
    codes = {ResourceType.TOPIC: ErrorCode.topic_authorization_failed, ResourceType.GROUP: ErrorCode.group_authorization_failed}
    return codes.get(access.resource_type, ErrorCode.cluster_authorization_failed)


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
