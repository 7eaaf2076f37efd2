"""A new embedded controller holds what a freshly formatted Kafka 4.3.1 cluster holds, and says so in ApiVersions.

Kafka 4.3.1's `kafka-storage format --standalone` finalizes metadata.version 30 (4.3-IV0) and the
feature levels below, and its first active controller writes the cluster-level
min.insync.replicas (KIP-966, eligible leader replicas): read off a real node's ApiVersions and
DescribeConfigs (tests/interop/test_describe_configs_kafka.py checks both against one).
"""

from pathlib import Path

import pytest

import apiversions
from controller.config import parse_controller_config
from controller.quorum import features_of
from controller.server import EmbeddedController
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from proxy.properties import ConfigError
from proxy.tools.embedded import controller_properties

KAFKA_4_3_1_FEATURES = {
    "metadata.version": 30,
    "kraft.version": 1,
    "transaction.version": 2,
    "group.version": 1,
    "share.version": 1,
    "streams.version": 1,
    "eligible.leader.replicas.version": 1,
}


def _controller(**extra: str) -> EmbeddedController:
    return EmbeddedController(parse_controller_config({**controller_properties(), **extra}))


def test_a_new_controller_holds_the_format_time_features_and_the_cluster_min_insync_replicas() -> None:
    controller = _controller()
    assert controller.image.finalized_features == KAFKA_4_3_1_FEATURES
    assert controller.image.broker_configs == {"": {"min.insync.replicas": "1"}}


def test_the_cluster_min_insync_replicas_comes_from_the_static_config() -> None:
    assert _controller(**{"min.insync.replicas": "2"}).image.broker_configs == {"": {"min.insync.replicas": "2"}}
    with pytest.raises(ConfigError, match=r"min\.insync\.replicas"):
        _controller(**{"min.insync.replicas": "two"})


def test_static_voters_format_kraft_version_0() -> None:
    controller = _controller(**{"controller.quorum.voters": "1@127.0.0.1:9093"})
    assert controller.image.finalized_features["kraft.version"] == 0


def test_only_a_new_metadata_directory_is_formatted(tmp_path: Path) -> None:
    first = _controller(**{"metadata.log.dir": str(tmp_path)})
    first.image.broker_configs[""]["log.retention.ms"] = "1000"
    first.image.group_configs["g"] = {"consumer.session.timeout.ms": "50000"}
    first.image.client_metrics_configs["cm"] = {"metrics": "org.apache"}
    assert first.store is not None
    first.store.save(first.image, [])
    again = _controller(**{"metadata.log.dir": str(tmp_path), "min.insync.replicas": "3"})
    assert again.image.broker_configs == {"": {"min.insync.replicas": "1", "log.retention.ms": "1000"}}
    assert again.image.group_configs == {"g": {"consumer.session.timeout.ms": "50000"}}
    assert again.image.client_metrics_configs == {"cm": {"metrics": "org.apache"}}
    assert again.image.finalized_features == KAFKA_4_3_1_FEATURES


def test_api_versions_carries_the_features_in_kafkas_order() -> None:
    controller = _controller()
    frame = apiversions.build_response(4, 7, controller.ranges, features=features_of(controller.image))
    _, answer = decode_response_body(ApiKey.API_VERSIONS, 4, frame)
    # As a 4.3.1 controller lists them (each from a HashMap: metadata.version goes in last among the finalized)
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == [
        ("group.version", 0, 1),
        ("kraft.version", 0, 1),
        ("metadata.version", 7, 30),
        ("share.version", 0, 1),
        ("streams.version", 0, 1),
        ("transaction.version", 0, 2),
        ("eligible.leader.replicas.version", 0, 1),
    ]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in answer.finalized_features] == [
        ("group.version", 1, 1),
        ("kraft.version", 1, 1),
        ("share.version", 1, 1),
        ("metadata.version", 30, 30),
        ("streams.version", 1, 1),
        ("transaction.version", 2, 2),
        ("eligible.leader.replicas.version", 1, 1),
    ]
    assert int(answer.finalized_features_epoch) == controller.image.change_count
    _, v2 = decode_response_body(ApiKey.API_VERSIONS, 2, apiversions.build_response(2, 7, controller.ranges, features=features_of(controller.image)))
    assert int(v2.error_code) == 0  # no feature fields before v3
