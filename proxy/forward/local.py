"""Answers the proxy gives itself: Metadata and DescribeCluster.

The proxy lists the cluster's brokers (proxy/forward/broker_view.py), every
one at the advertised endpoint of the listener the request came in on
(KIP-103), so whichever broker or controller a client picks, it reaches
the proxy. Every field is what a
Kafka 4.3 broker sends (docs/clients.md): the cluster's id, never null or
empty; rack null; authorized operations Integer.MIN_VALUE unless asked for.
"""

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from envelope.apis import EndpointType
from envelope.build import build_entity
from envelope.codec import encode_response, response_schema
from envelope.header import RequestHeaderInfo
from envelope.responses import AUTHORIZED_OPERATIONS_OMITTED, NO_NODE
from proxy.forward.broker_view import BrokerSet
from proxy.net.settings import ListenerConfig

__all__ = ["AUTHORIZED_OPERATIONS_OMITTED", "describe_cluster_response", "endpoint_error", "metadata_response"]


def metadata_response(header: RequestHeaderInfo, body: Any, *, brokers: BrokerSet, listener: ListenerConfig, cluster_id: str) -> bytes:
    requested = list(dict.fromkeys(t.name for t in body.topics or () if t.name is not None))  # each once, as Kafka answers
    values = {
        "throttle_time": 0,
        "brokers": brokers.listed(listener.advertised_host, listener.advertised_port),
        "cluster_id": cluster_id,
        "controller_id": brokers.controller_id,
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
        "error_code": ErrorCode.none,
    }
    entity = build_entity(response_schema(header.api_key, header.api_version), values)
    return encode_response(entity, correlation_id=header.correlation_id)


def endpoint_error(api_version: int, endpoint_type: int) -> tuple[int, str] | None:
    """AuthHelper.computeDescribeClusterResponse's check of the endpoint type a DescribeCluster asks for: the proxy
    is a broker, so CONTROLLER (`--bootstrap-controller`) is MISMATCHED_ENDPOINT_TYPE and any other type but BROKER
    UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST at v0, which cannot name a type)."""
    if endpoint_type == EndpointType.BROKER:
        return None
    if endpoint_type == EndpointType.CONTROLLER:
        code = ErrorCode.mismatched_endpoint_type
        message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
    else:
        code, message = ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {endpoint_type}"
    return (ErrorCode.invalid_request if api_version == 0 else code), message


def describe_cluster_response(
    header: RequestHeaderInfo,
    body: Any,
    *,
    brokers: BrokerSet,
    listener: ListenerConfig,
    cluster_id: str,
    cluster_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED,
) -> bytes:
    """The answer to a decoded DescribeCluster request; `cluster_authorized_operations` as the caller computed them
    when the request asked (else Integer.MIN_VALUE, Kafka's "not asked")."""
    error = endpoint_error(header.api_version, int(getattr(body, "endpoint_type", EndpointType.BROKER)))
    values: dict[str, Any]
    if error is not None:
        # Kafka's error answer keeps every other field at its default: an empty cluster id, no controller, no brokers.
        values = {
            "throttle_time": 0,
            "error_code": error[0],
            "error_message": error[1],
            "endpoint_type": EndpointType.BROKER,
            "cluster_id": "",
            "controller_id": NO_NODE,
            "brokers": [],
            "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }
    else:
        values = {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "endpoint_type": EndpointType.BROKER,
            "cluster_id": cluster_id,
            "controller_id": brokers.controller_id,
            "brokers": [
                {**b, "is_fenced": False} for b in brokers.listed(listener.advertised_host, listener.advertised_port, id_key="broker_id")
            ],
            "cluster_authorized_operations": cluster_authorized_operations,
        }
    entity = build_entity(response_schema(header.api_key, header.api_version), values)
    return encode_response(entity, correlation_id=header.correlation_id)
