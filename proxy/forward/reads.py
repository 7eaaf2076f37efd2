"""What every read through the proxy shares: the edge authorizer's decisions, the read upstream, the cluster id.

Metadata with topics, DescribeConfigs, DescribeAcls, DescribeClientQuotas and
DescribeUserScramCredentials may not travel in an Envelope, so the upstream would see
the proxy rather than the client. The proxy asks its edge authorizer first and sends
only what the client may see, under its own identity, to the read upstream (a broker
listener given by `read.bootstrap.servers`, or the controller). Answers are rebuilt at
the client's version with the proxy as the only broker and the controller, at the
advertised endpoint of the client's listener (KIP-103).

Each read is a module of its own (read_metadata.py, read_configs.py,
read_cluster_gated.py), listed in proxy/forward/read_routes.py.
"""

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from authz import Operation, PatternType, RequestContext, ResourceType
from authz.actions import (
    SUPPORTED_OPERATIONS,
    ResourceAccess,
    operations_field,
    supported_accesses,
)
from authz.model import CLUSTER_NAME
from envelope.apis import ApiKey, EndpointType
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, encode_response, request_schema, response_schema
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo
from envelope.responses import AUTHORIZED_OPERATIONS_OMITTED
from proxy.forward.broker_view import BrokerSet, BrokerView
from proxy.forward.edge_authz import EdgeAuthorizer
from proxy.forward.local import describe_cluster_response, endpoint_error
from proxy.forward.offload import CpuOffload
from proxy.net.addresses import ControllerAddress
from proxy.net.settings import ListenerConfig
from proxy.upstream.cluster_identity import ClusterIdentity
from proxy.upstream.link import Link, UpstreamAuthenticationError, UpstreamUnavailable
from proxy.upstream.pool import ControllerPool

log = logging.getLogger(__name__)

FIRST_CLUSTER_ID_WAIT = 5.0
"""Seconds an answer waits for the first controller to report the cluster id before its connection is closed."""
METADATA_WITH_CLUSTER_ID = 12
"""Metadata has carried the cluster id since v2; v12 is the newest that Kafka 3.x and 4.x brokers share."""


@dataclass
class ReadResult:
    """The answer frame, and what the audit record says about it."""

    frame: bytes
    resources: list[ResourceAccess]
    denied: list[ResourceAccess] = field(default_factory=list)
    error_code: int = ErrorCode.none
    error_message: str | None = None
    local: bool = False
    """Answered from what the proxy knows itself, without the upstream or the edge authorizer (audited as `local`)."""
    refused: bool = False
    """Refused before anything was asked, as a broker refuses it itself (audited as `refused`, with `error_code`)."""


class ReadUnavailable(Exception):
    """The read upstream could not answer (down, or it does not serve this API)."""


class NotServed(ReadUnavailable):
    """The read upstream answered, but does not serve this API at a version the client may get."""


class ReadPath:
    def __init__(
        self, upstream: ControllerPool, edge: EdgeAuthorizer, *, node_id: int, identity: ClusterIdentity, offload: CpuOffload | None = None
    ) -> None:
        self.upstream = upstream
        self.edge = edge
        self.offload = offload or CpuOffload()
        self.node_id = node_id
        self.identity = identity
        self.broker_view = BrokerView(node_id, upstream.settings.discovery_interval)

    async def brokers(self) -> BrokerSet:
        """The cluster's brokers, the one set every answer that names nodes lists (proxy/forward/broker_view.py)."""
        return await self.broker_view.current(self._cluster_metadata)

    async def _cluster_metadata(self) -> Any | None:
        """The read upstream's Metadata for no topic (its brokers, controller and cluster id), or None."""
        request = {
            "topics": [],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,  # v8-v10, for an upstream that stops there
            "include_topic_authorized_operations": False,
        }
        try:
            response = await self.upstream_call(ApiKey.METADATA, METADATA_WITH_CLUSTER_ID, request)
        except ReadUnavailable as exc:
            log.debug("Metadata from the read upstream: %s", exc)
            return None
        self.identity.accept(f"read upstream {self.upstream.settings.address}", getattr(response, "cluster_id", None))
        return response

    async def cluster_id(self) -> str:
        """The id of the cluster, for every answer that carries one; ReadUnavailable while nobody has said it.

        Usually a controller has reported it by now. Otherwise (a controller that answers no DescribeCluster to
        the proxy) the read upstream's Metadata carries it, and last the first controller may still report it."""
        known = self.identity.cluster_id
        if known is not None:
            return known
        response = await self._cluster_metadata()
        if response is not None:
            self.broker_view.learn(response)
        # Discovery has had its first round before the listeners opened: a short wait covers a round in progress.
        known = await self.identity.wait(min(self.upstream.settings.request_timeout, FIRST_CLUSTER_ID_WAIT))
        if known is None:
            raise ReadUnavailable(
                "the cluster id is not known: no controller answered DescribeCluster to the proxy (it needs Alter on the "
                "cluster for that) and the read upstream's Metadata did not carry one; grant it, or set cluster.id"
            )
        return known

    async def allowed(self, ctx: RequestContext, accesses: list[ResourceAccess]) -> list[bool]:
        return await self.edge.allowed(ctx, accesses)

    async def authorized_operations(self, ctx: RequestContext, resource_type: ResourceType, names: list[str]) -> list[int]:
        """AuthHelper.authorizedOperations for each name: the bit field of the operations the caller is allowed."""
        supported = SUPPORTED_OPERATIONS[resource_type]
        decisions = await self.allowed(ctx, [access for name in names for access in supported_accesses(resource_type, name)])
        width = len(supported)
        return [
            operations_field([op for op, ok in zip(supported, decisions[i * width : (i + 1) * width], strict=True) if ok])
            for i in range(len(names))
        ]

    async def cluster_authorized_operations(self, ctx: RequestContext) -> int:
        """cluster_authorized_operations when asked for: 0 for a caller who may not DESCRIBE the cluster, as in Kafka."""
        describe = ResourceAccess(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, Operation.DESCRIBE)
        if not (await self.allowed(ctx, [describe]))[0]:
            return 0
        (operations,) = await self.authorized_operations(ctx, ResourceType.CLUSTER, [CLUSTER_NAME])
        return operations

    async def describe_cluster(
        self, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any, cluster_id: str
    ) -> bytes:
        """DescribeCluster, answered by the proxy with the cluster's brokers at its own address (proxy/forward/local.py)."""
        operations = AUTHORIZED_OPERATIONS_OMITTED
        asked_type = int(getattr(body, "endpoint_type", EndpointType.BROKER))  # v1+
        if body.include_cluster_authorized_operations and endpoint_error(header.api_version, asked_type) is None:
            operations = await self.cluster_authorized_operations(ctx)
        return describe_cluster_response(
            header, body, brokers=await self.brokers(), listener=listener, cluster_id=cluster_id, cluster_authorized_operations=operations
        )

    async def upstream_call(self, api_key: int, client_version: int, values: dict[str, Any]) -> Any:
        """The upstream's answer to `values`, asked at the highest version both sides speak."""
        ranges = self.upstream.controller_ranges
        if not ranges:  # its versions come with the first answer after a login: none has succeeded yet
            raise ReadUnavailable(f"the read upstream {self.upstream.settings.address} has not answered yet (not reached, or the proxy's login to it failed)")
        served = ranges.get(api_key)
        if served is None or served.min > client_version:
            raise NotServed(
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

    async def broker_call(self, broker: ControllerAddress, api_key: int, client_version: int, values: dict[str, Any]) -> Any:
        """The answer of one broker of the cluster, for what only that broker answers (its own configs).

        The read upstream's connection when it is that broker; otherwise a connection of its own, with the read
        upstream's login, for this request only: such reads are rare (a tool listing each broker's configs)."""
        active = self.upstream.active
        if active is not None and (active.host, active.port) == (broker.host, broker.port):
            return await self.upstream_call(api_key, client_version, values)
        deadline = trio.current_time() + self.upstream.settings.request_timeout
        try:
            link = await Link.open(self.upstream.settings, broker)
        except (UpstreamUnavailable, UpstreamAuthenticationError, ProtocolError) as exc:
            raise ReadUnavailable(f"broker {broker}: {exc}") from exc
        try:
            served = link.ranges.get(api_key)
            if served is None or served.min > client_version:
                raise NotServed(f"broker {broker} does not serve this API at v{client_version} or lower")
            return await link.call(ApiKey(api_key), min(client_version, served.max), values, deadline=deadline)
        except (UpstreamUnavailable, ProtocolError) as exc:
            raise ReadUnavailable(f"broker {broker}: {exc}") from exc
        finally:
            await link.aclose()

    def encode(self, header: RequestHeaderInfo, values: dict[str, Any]) -> bytes:
        entity = build_entity(response_schema(header.api_key, header.api_version), values)
        return encode_response(entity, correlation_id=header.correlation_id)


def as_dict(entity: Any) -> dict[str, Any]:
    """A decoded kio entity as the version-independent dict `build_entity` takes."""
    return {f.name: _plain(getattr(entity, f.name)) for f in dataclasses.fields(entity)}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return as_dict(value)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def topic_access(name: str, operation: Operation) -> ResourceAccess:
    return ResourceAccess(ResourceType.TOPIC, name, PatternType.LITERAL, operation)


def denial_code(access: ResourceAccess) -> int:
    """The authorization error Kafka gives for a denied resource of this type."""
    codes = {ResourceType.TOPIC: ErrorCode.topic_authorization_failed, ResourceType.GROUP: ErrorCode.group_authorization_failed}
    return codes.get(access.resource_type, ErrorCode.cluster_authorization_failed)
