"""The controller's own state: DescribeQuorum (55) and UpdateFeatures (57).

The embedded controller answers for the quorum of `controller.leadership`: only
its active node describes it; the others answer NOT_LEADER_OR_FOLLOWER, as
KafkaRaftClient does. Finalized feature levels are part of the persisted image.
"""

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from apiversions import Features, VersionRange
from authz import Authorizer, Operation, RequestContext
from controller.authorize import cluster_allowed, cluster_denied
from controller.config_defs import kafka_configs, parse_type
from controller.config_validators import ConfigValueError
from controller.image import MetadataImage
from controller.java_order import string_map_order
from controller.kafka_features import kafka_features
from controller.leadership import Leadership
from controller.membership import directory_uuid
from envelope.error_messages import default_message
from envelope.java_types import SHORT_MAX
from envelope.responses import NO_NODE
from proxy.properties import ConfigError

METADATA_TOPIC = "__cluster_metadata"

# Kafka 4.3.1's feature levels (controller/kafka_configs.json, generated from its Feature, MetadataVersion and
# QuorumFeatures): what a controller supports, what `kafka-storage format` finalizes (metadata.version at its
# latest production level, 30 = 4.3-IV0; kraft.version 1 for a quorum that can change, 0 for static
# controller.quorum.voters), which metadata versions changed the metadata, and what each level depends on.
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {name: (low, high) for name, (low, high) in kafka_features().supported.items()}
INITIAL_FEATURES: dict[str, int] = {"metadata.version": kafka_features().latest_metadata_version, **kafka_features().format_defaults}
ELR_FEATURE = "eligible.leader.replicas.version"
METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
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
        """KafkaRaftClient.handleDescribeQuorumRequest as 4.3.1 answers it: a request that does not name exactly
        the metadata partition gets UNKNOWN_TOPIC_OR_PARTITION on every partition it names and no nodes; a message
        Kafka does not set is its schema default, the empty string."""
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE):
            code = ErrorCode.cluster_authorization_failed
            return {"error_code": code, "error_message": default_message(code), "topics": [], "nodes": []}
        named = [(str(topic.topic_name), [int(p.partition_index) for p in topic.partitions]) for topic in body.topics]
        if named != [(METADATA_TOPIC, [0])]:
            unknown = ErrorCode.unknown_topic_or_partition
            topics = [
                {"topic_name": name, "partitions": [_partition(i, unknown, 0, 0, [], epoch=0, message=default_message(unknown)) for i in indexes]}
                for name, indexes in named
            ]
            return {"error_code": ErrorCode.none, "error_message": "", "topics": topics, "nodes": []}
        if not self.leadership.is_active:
            partition = _partition(0, ErrorCode.not_leader_or_follower, NO_NODE, 0, [], epoch=-1)
        else:
            # a controller alone stands for a --standalone formatted node, whose voter has a directory id;
            # static voters (controller.quorum.voters) have none
            end = self.offset()
            now_ms = int(time.time() * 1000)
            lone = not self.leadership.voters
            voters = [
                _voter(node, end, now_ms, directory_uuid(self.leadership.cluster_id, node) if lone else None)
                for node in self.leadership.voter_ids
            ]
            partition = _partition(0, ErrorCode.none, self.node_id, end, voters, epoch=1, message="")
        nodes = self.leadership.quorum_nodes() if self.leadership.is_active else []
        return {"error_code": ErrorCode.none, "error_message": "", "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}], "nodes": nodes}

    def update_features(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """QuorumController.updateFeatures: the updates by name (a name twice keeps its last), each checked in the
        map's order by FeatureControlManager; the first problem fails them all."""
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return _features_answer(ErrorCode.cluster_authorization_failed, cluster_denied(ctx, Operation.ALTER), [])
        updates: dict[str, int] = {}
        upgrade_types: dict[str, int] = {}
        for update in body.feature_updates:
            updates[str(update.feature)] = int(update.max_version_level)
            # v0 has allow_downgrade instead: Kafka reads it as SAFE_DOWNGRADE when set
            upgrade_types[str(update.feature)] = int(getattr(update, "upgrade_type", SAFE_DOWNGRADE if getattr(update, "allow_downgrade", False) else UPGRADE))
        proposed = {**self.image.finalized_features, **updates}
        for name in string_map_order(updates):
            problem = self._problem(name, updates[name], upgrade_types[name], proposed)
            if problem is not None:
                message = f"The update failed for all features since the following feature had an error: {problem}"
                return _features_answer(ErrorCode.invalid_update_version, message, [])
        if not getattr(body, "validate_only", False):  # v0 has no validate_only
            for name, level in updates.items():
                if level == 0:
                    self.image.finalized_features.pop(name, None)
                else:
                    self.image.finalized_features[name] = level
        # Per-feature results only up to v1; the message is that of Errors.NONE.
        results = [str(u.feature) for u in body.feature_updates] if getattr(body, "__version__", 0) <= 1 else []
        return _features_answer(ErrorCode.none, None, results, per_feature_message="NONE")

    def _problem(self, name: str, level: int, upgrade_type: int, proposed: dict[str, int]) -> str | None:
        """FeatureControlManager.updateFeature, in its order and words."""
        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return _invalid(name, level, "The controller does not support the given upgrade type.")
        current = self.image.finalized_features.get(name, 0)
        if level < 0:
            return _invalid(name, level, "A feature version cannot be less than 0.")
        low, high = SUPPORTED_FEATURES.get(name, (0, 0))
        if not low <= level <= high:
            where = f"Local controller {self.node_id}"
            reason = f"{where} does not support this feature." if high == 0 else f"{where} only supports versions {_range_text(low, high)}"
            return _invalid(name, level, reason)
        if level < current and upgrade_type == UPGRADE:
            return _invalid(name, level, "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
        if level > current and upgrade_type != UPGRADE:
            return _invalid(name, level, "Can't downgrade to a newer version.")
        if name == METADATA_VERSION:
            if level < current and kafka_features().metadata_changed_between(current, level):
                reason = (
                    "Unsafe metadata downgrade is not supported in this version."
                    if upgrade_type == UNSAFE_DOWNGRADE
                    else "Refusing to perform the requested downgrade because it might delete metadata information."
                )
                return f"Unsupported metadata.version downgrade from {current} to {level}. {reason}"
            return None
        if name == KRAFT_VERSION:
            return None if upgrade_type == UPGRADE or level == current else _invalid(name, level, "Can't downgrade the version of this feature.")
        return kafka_features().dependency_problem(name, level, proposed)


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


def _voter(node_id: int, end: int, now_ms: int, directory: uuid.UUID | None) -> dict[str, Any]:
    # The stand-in replicates nothing: every voter is reported caught up with the leader.
    return {
        "replica_id": node_id,
        "replica_directory_id": directory,
        "log_end_offset": end,
        "last_fetch_timestamp": now_ms,
        "last_caught_up_timestamp": now_ms,
    }


def _partition(index: int, code: int, leader: int, end: int, voters: list[dict[str, Any]], *, epoch: int, message: str | None = None) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "error_message": message,
        "leader_id": leader,
        "leader_epoch": epoch,
        "high_watermark": end,
        "current_voters": voters,
        "observers": [],
    }


def _features_answer(code: int, message: str | None, features: list[str], *, per_feature_message: str | None = None) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "results": [{"feature": f, "error_code": ErrorCode.none, "error_message": per_feature_message} for f in features],
    }


def _invalid(name: str, level: int, message: str) -> str:
    return f"Invalid update version {level} for feature {name}. {message}"


def _range_text(low: int, high: int) -> str:
    """VersionRange.toString."""
    return str(low) if low == high else f"{low}+" if high == SHORT_MAX else f"{low}-{high}"
