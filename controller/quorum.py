"""The controller's own state: DescribeQuorum (55) and UpdateFeatures (57).

The embedded controller answers for the quorum of `controller.leadership`: only
its active node describes it; the others answer NOT_LEADER_OR_FOLLOWER, as
KafkaRaftClient does. Finalized feature levels are part of the persisted image.
"""

import time
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from apiversions import Features, VersionRange
from authz import Authorizer, Operation, RequestContext
from controller.authorize import AUTHORIZATION_FAILED, cluster_allowed
from controller.config_defs import ConfigValueError, kafka_configs, parse_type
from controller.image import MetadataImage
from controller.java_order import string_map_order
from controller.leadership import Leadership
from proxy.properties import ConfigError

METADATA_TOPIC = "__cluster_metadata"

# feature -> (lowest, highest) level the embedded controller supports: Kafka 4.3.1's ranges
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    "metadata.version": (7, 30),
    "kraft.version": (0, 1),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    "share.version": (0, 1),
    "streams.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1),
}
# What `kafka-storage format` of Kafka 4.3.1 finalizes (metadata.version 30 is 4.3-IV0, the latest production level).
# kraft.version is 1 for a quorum that can change (--standalone, controller.quorum.bootstrap.servers) and 0 for
# static controller.quorum.voters.
INITIAL_FEATURES = {
    "metadata.version": 30,
    "kraft.version": 1,
    "transaction.version": 2,
    "group.version": 1,
    "share.version": 1,
    "streams.version": 1,
    "eligible.leader.replicas.version": 1,
}
ELR_FEATURE = "eligible.leader.replicas.version"
METADATA_VERSION = "metadata.version"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


class QuorumHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer, *, leadership: Leadership, offset: Callable[[], int]) -> None:
        self.image = image
        self.authorizer = authorizer
        self.leadership = leadership
        self.node_id = leadership.node_id
        self.offset = offset  # the number of applied changes stands in for the metadata log's end offset

    def describe_quorum(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE):
            return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED, "topics": [], "nodes": []}
        now_ms = int(time.time() * 1000)
        end = self.offset()
        topics = []
        for topic in body.topics:
            partitions = []
            for partition in topic.partitions:
                index = int(partition.partition_index)
                if str(topic.topic_name) != METADATA_TOPIC or index != 0:
                    partitions.append(_partition(index, ErrorCode.unknown_topic_or_partition, -1, 0, []))
                elif not self.leadership.is_active:
                    partitions.append(_partition(index, ErrorCode.not_leader_or_follower, -1, 0, []))
                else:
                    voters = [_voter(node, end, now_ms) for node in self.leadership.voter_ids]
                    partitions.append(_partition(index, ErrorCode.none, self.node_id, end, voters))
            topics.append({"topic_name": str(topic.topic_name), "partitions": partitions})
        nodes = self.leadership.quorum_nodes() if self.leadership.is_active else []
        return {"error_code": ErrorCode.none, "error_message": None, "topics": topics, "nodes": nodes}

    def update_features(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        names = [str(u.feature) for u in body.feature_updates]
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return _features_answer(ErrorCode.cluster_authorization_failed, AUTHORIZATION_FAILED, {n: (ErrorCode.cluster_authorization_failed, AUTHORIZATION_FAILED) for n in names})
        if len(set(names)) != len(names):
            return _features_answer(ErrorCode.invalid_request, "The request contains multiple updates for the same feature.", {})
        outcomes = {str(u.feature): self._problem(str(u.feature), int(u.max_version_level), int(getattr(u, "upgrade_type", UPGRADE))) for u in body.feature_updates}
        failed = next(((code, message) for code, message in outcomes.values() if code != ErrorCode.none), None)
        if failed is not None:
            # One failure fails the whole request, named at the top level only (Kafka 4.x, every version).
            return _features_answer(failed[0], f"The update failed for all features since the following feature had an error: {failed[1]}", {})
        if failed is None and not getattr(body, "validate_only", False):  # v0 has no validate_only
            for update in body.feature_updates:
                level = int(update.max_version_level)
                if level == 0:
                    self.image.finalized_features.pop(str(update.feature), None)
                else:
                    self.image.finalized_features[str(update.feature)] = level
        return _features_answer(ErrorCode.none, None, outcomes)

    def _problem(self, feature: str, level: int, upgrade_type: int) -> tuple[int, str | None]:
        prefix = f"Invalid update version {level} for feature {feature}."
        supported = SUPPORTED_FEATURES.get(feature)
        if supported is None:
            return ErrorCode.invalid_update_version, f"{prefix} Local controller {self.node_id} does not support this feature."
        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return ErrorCode.invalid_request, f"Unknown upgrade type {upgrade_type}"
        lowest, highest = supported
        if level != 0 and not lowest <= level <= highest:
            return ErrorCode.invalid_update_version, f"{prefix} The controller only supports versions {lowest}-{highest}."
        if feature == "metadata.version" and level == 0:
            return ErrorCode.invalid_update_version, f"{prefix} A metadata.version can't be deleted."
        current = self.image.finalized_features.get(feature, 0)
        if level < current and upgrade_type == UPGRADE:
            return (
                ErrorCode.invalid_update_version,
                f"{prefix} Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
            )
        return ErrorCode.none, None


def features_of(image: MetadataImage) -> Features:
    """ApiVersions' feature fields as a Kafka controller fills them (each list in its HashMap's order: the
    finalized levels with metadata.version put last); the number of changes stands in for the metadata offset."""
    finalized = {n: v for n, v in image.finalized_features.items() if n != METADATA_VERSION and v > 0}
    if METADATA_VERSION in image.finalized_features:
        finalized[METADATA_VERSION] = image.finalized_features[METADATA_VERSION]
    return Features(
        supported={n: VersionRange(*SUPPORTED_FEATURES[n]) for n in string_map_order(SUPPORTED_FEATURES)},
        finalized={n: finalized[n] for n in string_map_order(finalized)},
        epoch=image.change_count,
    )


def format_image(image: MetadataImage, static_config: Mapping[str, str], *, static_voters: bool) -> None:
    """A new cluster's metadata, as Kafka 4.3.1 writes it: the format-time feature levels, and with ELR on
    (KIP-966) the cluster-level min.insync.replicas, from the static config or its default of 1, that the
    first active controller records (ActivationRecordsGenerator)."""
    image.finalized_features.update(INITIAL_FEATURES)
    if static_voters:
        image.finalized_features["kraft.version"] = 0
    if image.finalized_features.get(ELR_FEATURE, 0) >= 1:
        key = kafka_configs().broker.keys[MIN_INSYNC_REPLICAS]
        value = static_config.get(MIN_INSYNC_REPLICAS, key.default)
        try:
            level = int(parse_type(MIN_INSYNC_REPLICAS, value, "INT"))
        except ConfigValueError as exc:
            raise ConfigError(MIN_INSYNC_REPLICAS, value, str(exc)) from exc
        image.broker_configs.setdefault("", {})[MIN_INSYNC_REPLICAS] = str(level)


def _voter(node_id: int, end: int, now_ms: int) -> dict[str, Any]:
    # The stand-in replicates nothing: every voter is reported caught up with the leader.
    return {"replica_id": node_id, "replica_directory_id": None, "log_end_offset": end, "last_fetch_timestamp": now_ms, "last_caught_up_timestamp": now_ms}


def _partition(index: int, code: int, leader: int, end: int, voters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "error_message": None,
        "leader_id": leader,
        "leader_epoch": 1 if code == ErrorCode.none else -1,
        "high_watermark": end,
        "current_voters": voters,
        "observers": [],
    }


def _features_answer(code: int, message: str | None, outcomes: dict[str, tuple[int, str | None]]) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "results": [{"feature": f, "error_code": c, "error_message": m} for f, (c, m) in outcomes.items()],
    }
