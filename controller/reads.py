"""Reads the embedded controller serves directly (never inside an Envelope): Metadata (DescribeConfigs: describe_configs.py).

A real cluster answers these on its brokers; the embedded controller answers
them too so that the proxy's edge-authorized read path works on one laptop.
The caller is whoever logged in (the proxy, under its own identity), and
the controller authorizes that caller, as a broker would.
"""

import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from authz import (
    AclStore,
    Authorizer,
    Operation,
    RequestContext,
    ResourceType,
)
from authz.model import CLUSTER_NAME
from controller.acls import NO_ACL_STORE, binding_filter_of
from controller.authorize import AUTHORIZATION_FAILED, allowed
from controller.image import MetadataImage
from envelope.responses import AUTHORIZED_OPERATIONS_OMITTED, NO_NODE, metadata_topic_error
from envelope.versions import METADATA_TOPIC_IDS
from proxy.net.addresses import ControllerAddress


def _by_id(topic_id: Any, code: int) -> dict[str, Any]:
    """A topic asked for by id that only carries an error: no name, as Kafka answers it."""
    return {**metadata_topic_error("", code), "name": None, "topic_id": topic_id}


class ReadHandlers:
    def __init__(
        self,
        image: MetadataImage,
        authorizer: Authorizer,
        *,
        node_id: int,
        cluster_id: str,
        broker_count: int,
        endpoint: Callable[[str], ControllerAddress | None] = lambda listener: None,
    ) -> None:
        self.image = image
        self.cluster_id = cluster_id
        self.authorizer = authorizer
        self.acl_store: AclStore | None = authorizer if isinstance(authorizer, AclStore) else None
        self.node_id = node_id
        # The embedded controller has no brokers; replicas are numbered 1..broker_count like registered ones would be.
        self.broker_ids = list(range(1, broker_count + 1))
        self.endpoint = endpoint
        """The controller's own address on a listener: it lists its brokers there, as the one process behind them."""

    def _allowed(self, ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return allowed(self.authorizer, ctx, operation, resource_type, name)

    def metadata(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """Kafka's rule: all-topics requests silently drop what the caller may not DESCRIBE; named ones say so."""
        version = int(type(body).__version__)
        zero = uuid.UUID(int=0)
        if version < METADATA_TOPIC_IDS and any(t.name is None or (getattr(t, "topic_id", None) or zero) != zero for t in body.topics or ()):
            # KafkaApis refuses a null name or a topic id below v12 (InvalidRequestException), and
            # MetadataRequest.getErrorResponse answers every topic asked, a null name as "", with nothing else.
            topics = [
                {**metadata_topic_error(str(t.name or ""), ErrorCode.invalid_request), "topic_id": getattr(t, "topic_id", None) or zero}
                for t in body.topics
            ]
            return {**self._answer(topics, ctx), "brokers": [], "cluster_id": None, "controller_id": NO_NODE}
        ids = list(dict.fromkeys(t.topic_id for t in body.topics or () if getattr(t, "topic_id", None) is not None))
        if ids:
            return self._answer(self._topics_by_id(ids, ctx), ctx)
        if body.topics is None or (not body.topics and version == 0):  # v0 has no null: [] is every topic
            names = [n for n in sorted(self.image.topics) if self._allowed(ctx, Operation.DESCRIBE, ResourceType.TOPIC, n)]
            return self._answer([self._described(name) for name in names], ctx)
        # KafkaApis' order: the topics that exist, then the unknown ones, then those the caller may not describe
        names = list(dict.fromkeys(str(t.name) for t in body.topics if t.name is not None))
        visible = [(name, self._allowed(ctx, Operation.DESCRIBE, ResourceType.TOPIC, name)) for name in names]
        described = [self._described(name) for name, ok in visible if ok and name in self.image.topics]
        unknown = [metadata_topic_error(name, ErrorCode.unknown_topic_or_partition) for name, ok in visible if ok and name not in self.image.topics]
        denied = [metadata_topic_error(name, ErrorCode.topic_authorization_failed) for name, ok in visible if not ok]
        return self._answer(described + unknown + denied, ctx)

    def _topics_by_id(self, ids: list[Any], ctx: RequestContext) -> list[dict[str, Any]]:
        """KIP-516 lookups as a broker answers them: names beside ids ignored; unknown ids (UNKNOWN_TOPIC_ID) first,
        then the topics the caller may describe, then those it may not, by id alone."""
        names = {topic.topic_id: name for name, topic in self.image.topics.items()}
        unknown = [_by_id(i, ErrorCode.unknown_topic_id) for i in ids if i not in names]
        known = [(i, names[i]) for i in ids if i in names]
        visible = [(i, n, self._allowed(ctx, Operation.DESCRIBE, ResourceType.TOPIC, n)) for i, n in known]
        described = [self._described(n) for _, n, ok in visible if ok]
        return unknown + described + [_by_id(i, ErrorCode.topic_authorization_failed) for i, _, ok in visible if not ok]

    def _described(self, name: str) -> dict[str, Any]:
        topic = self.image.topics[name]
        return {
            "error_code": ErrorCode.none,
            "name": name,
            "topic_id": topic.topic_id,
            "is_internal": False,
            "partitions": [
                {
                    "error_code": ErrorCode.none,
                    "partition_index": p,
                    "leader_id": topic.replicas(p, self.broker_ids)[0],
                    "leader_epoch": 0,
                    "replica_nodes": topic.replicas(p, self.broker_ids),
                    "isr_nodes": topic.replicas(p, self.broker_ids),
                    "offline_replicas": [],
                }
                for p in range(topic.partitions)
            ],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }

    def _answer(self, topics: list[dict[str, Any]], ctx: RequestContext) -> dict[str, Any]:
        """Kafka's answer lists the live brokers and names one of them the controller: here the broker ids the
        partitions use, at the controller's own address on the listener asked through (none when it has none)."""
        own = self.endpoint(ctx.listener)
        brokers = [] if own is None else [{"node_id": b, "host": own.host, "port": own.port, "rack": None} for b in self.broker_ids]
        return {
            "throttle_time": 0,
            "brokers": brokers,
            "cluster_id": self.cluster_id,
            "controller_id": self.node_id if own is None or self.node_id in self.broker_ids else self.broker_ids[0],
            "topics": topics,
            "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            "error_code": ErrorCode.none,
        }

    def describe_acls(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        empty = {"throttle_time": 0, "resources": []}
        if self.acl_store is None:
            return {**empty, "error_code": ErrorCode.security_disabled, "error_message": NO_ACL_STORE}
        if not self._allowed(ctx, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return {**empty, "error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED}
        try:
            binding_filter = binding_filter_of(body)
        except ValueError as exc:
            return {**empty, "error_code": ErrorCode.invalid_request, "error_message": str(exc)}
        grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
        for binding in self.acl_store.describe_acls(binding_filter):
            key = (int(binding.resource_type), binding.resource_name, int(binding.pattern_type))
            grouped.setdefault(key, []).append(
                {"principal": binding.principal, "host": binding.host, "operation": binding.operation, "permission_type": binding.permission}
            )
        resources = [
            {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": acls}
            for (kind, name, pattern), acls in sorted(grouped.items())
        ]
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "resources": resources}
