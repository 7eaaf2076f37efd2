"""Reads the embedded controller serves directly (never inside an Envelope): Metadata (DescribeConfigs: describe_configs.py).

A real cluster answers these on its brokers; the embedded controller answers
them too so that the proxy's edge-authorized read path works on one laptop.
The caller is whoever logged in (the proxy, under its own identity), and
the controller authorizes that caller, as a broker would.
"""

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
from envelope.responses import metadata_topic_error

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


class ReadHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer, *, node_id: int, cluster_id: str, broker_count: int) -> None:
        self.image = image
        self.cluster_id = cluster_id
        self.authorizer = authorizer
        self.acl_store: AclStore | None = authorizer if isinstance(authorizer, AclStore) else None
        self.node_id = node_id
        # The embedded controller has no brokers; replicas are numbered 1..broker_count like registered ones would be.
        self.broker_ids = list(range(1, broker_count + 1))

    def _allowed(self, ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return allowed(self.authorizer, ctx, operation, resource_type, name)

    def metadata(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """Kafka's rule: all-topics requests silently drop what the caller may not DESCRIBE; named ones say so."""
        if body.topics is None:
            names = [n for n in sorted(self.image.topics) if self._allowed(ctx, Operation.DESCRIBE, ResourceType.TOPIC, n)]
            explicit = False
        else:
            names = [str(t.name) for t in body.topics if t.name is not None]
            explicit = True
        topics = []
        for name in names:
            topic = self.image.topics.get(name)
            if explicit and not self._allowed(ctx, Operation.DESCRIBE, ResourceType.TOPIC, name):
                topics.append(metadata_topic_error(name, ErrorCode.topic_authorization_failed))
            elif topic is None:
                topics.append(metadata_topic_error(name, ErrorCode.unknown_topic_or_partition))
            else:
                topics.append(
                    {
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
                )
        return {
            "throttle_time": 0,
            "brokers": [],
            "cluster_id": self.cluster_id,
            "controller_id": self.node_id,
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
