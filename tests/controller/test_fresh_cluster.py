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
from envelope_proxy.embedded import controller_properties
from proxy.properties import ConfigError
from tests.controller.config_helpers import controller as config_controller

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


FAILED_ALL = "The update failed for all features since the following feature had an error: "


@pytest.mark.parametrize(
    ("updates", "code", "message"),
    [
        ([("metadata.version", 30, 1)], 0, None),
        ([("metadata.version", 29, 1)], 95, "Invalid update version 29 for feature metadata.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."),
        ([("metadata.version", 29, 2)], 95, "Unsupported metadata.version downgrade from 30 to 29. Refusing to perform the requested downgrade because it might delete metadata information."),
        ([("metadata.version", 22, 3)], 95, "Unsupported metadata.version downgrade from 30 to 22. Unsafe metadata downgrade is not supported in this version."),
        ([("metadata.version", 31, 1)], 95, "Invalid update version 31 for feature metadata.version. Local controller 1 only supports versions 7-30"),
        ([("streams.version", 2, 1)], 95, "Invalid update version 2 for feature streams.version. Local controller 1 only supports versions 0-1"),
        ([("no.such.version", 1, 1)], 95, "Invalid update version 1 for feature no.such.version. Local controller 1 does not support this feature."),
        ([("kraft.version", 0, 2)], 95, "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."),
        # level 0 passes the range check of a name Kafka does not know; Feature.featureFromName then refuses it
        ([("no.such.feature", 0, 2)], 95, "Invalid update version 0 for feature no.such.feature. Feature no.such.feature not found."),
        ([("group.version", 1, 1), ("no.such.feature", 0, 1)], 95, "Invalid update version 0 for feature no.such.feature. Feature no.such.feature not found."),
        ([("share.version", 0, 2)], 0, None),
        ([("group.version", 1, 2)], 0, None),
        ([("metadata.version", 30, 1), ("metadata.version", 30, 1)], 0, None),  # a feature twice: answered twice
    ],
)
def test_update_features_is_decided_as_kafka_4_3_1_decides_it(updates: list[tuple[str, int, int]], code: int, message: str | None) -> None:
    c = config_controller()
    values = {"timeout_ms": 30000, "feature_updates": [{"feature": f, "max_version_level": v, "upgrade_type": u} for f, v, u in updates], "validate_only": True}
    answer = c.call(ApiKey.UPDATE_FEATURES, 1, values)
    assert (answer["error_code"], answer["error_message"]) == (code, None if message is None else FAILED_ALL + message)
    assert [(r["feature"], r["error_message"]) for r in answer["results"]] == ([] if code else [(f, "NONE") for f, _, _ in updates])
    assert c.image.finalized_features == KAFKA_4_3_1_FEATURES


def test_update_features_changes_the_levels_and_a_zero_removes_one() -> None:
    c = config_controller()
    values = {"timeout_ms": 30000, "feature_updates": [{"feature": "share.version", "max_version_level": 0, "upgrade_type": 2}], "validate_only": False}
    assert c.call(ApiKey.UPDATE_FEATURES, 1, values)["error_code"] == 0
    assert "share.version" not in c.image.finalized_features
    assert "share.version" not in features_of(c.image).finalized
