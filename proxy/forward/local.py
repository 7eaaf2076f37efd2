"""Answers the proxy gives itself: Metadata and DescribeCluster.

The proxy presents itself as the only broker and as the controller, at the
advertised endpoint of the listener the request came in on (KIP-103), so
admin clients send controller-bound requests to it.
"""

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from envelope.apis import EndpointType
from envelope.build import build_entity
from envelope.codec import encode_response, response_schema
from envelope.header import RequestHeaderInfo
from proxy.net.settings import ListenerConfig

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def metadata_response(header: RequestHeaderInfo, body: Any, *, node_id: int, listener: ListenerConfig, cluster_id: str) -> bytes:
    requested = [t.name for t in (body.topics or ()) if t.name is not None]
    values = {
        "throttle_time": 0,
        "brokers": [{"node_id": node_id, "host": listener.advertised_host, "port": listener.advertised_port, "rack": None}],
        "cluster_id": cluster_id,
        "controller_id": node_id,
        # Topic reads go through the upstream only once the edge authorizer exists;
        # until then a named topic is reported as unknown rather than guessed.
        "topics": [
            {
                "error_code": ErrorCode.unknown_topic_or_partition,
                "name": name,
                "topic_id": uuid.UUID(int=0),
                "is_internal": False,
                "partitions": [],
                "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            }
            for name in requested
        ],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        "error_code": 0,
    }
    entity = build_entity(response_schema(header.api_key, header.api_version), values)
    return encode_response(entity, correlation_id=header.correlation_id)


def describe_cluster_response(header: RequestHeaderInfo, *, node_id: int, listener: ListenerConfig, cluster_id: str) -> bytes:
    values = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": EndpointType.BROKER,
        "cluster_id": cluster_id,
        "controller_id": node_id,
        "brokers": [
            {"broker_id": node_id, "host": listener.advertised_host, "port": listener.advertised_port, "rack": None, "is_fenced": False}
        ],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
    entity = build_entity(response_schema(header.api_key, header.api_version), values)
    return encode_response(entity, correlation_id=header.correlation_id)
