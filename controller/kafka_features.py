"""The feature levels of the Kafka release the embedded controller answers as (UpdateFeatures, ApiVersions).

The supported ranges, the levels a new cluster is formatted at, which
metadata.version levels changed the metadata, and the dependencies between
features, read once from kafka_configs.json, with Kafka's checks of a
proposed update in its words.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from controller.config_defs import generated_data


@dataclass(frozen=True)
class KafkaFeatures:
    """The feature levels of the Kafka release (Feature, MetadataVersion, QuorumFeatures)."""

    supported: dict[str, tuple[int, int]]
    format_defaults: dict[str, int]
    latest_metadata_version: int
    metadata_changes: dict[int, bool]
    """Each metadata.version level, and whether it changed the metadata (didMetadataChange)."""
    dependencies: dict[str, dict[int, dict[str, int]]]
    minimum_metadata_version: tuple[int, str]
    names: frozenset[str]
    """Every name Feature.featureFromName knows, test features included."""

    def metadata_changed_between(self, high: int, low: int) -> bool:
        """MetadataVersion.checkIfMetadataChanged for a downgrade from `high` to `low`."""
        version = high
        while not self.metadata_changes.get(version, True) and version != low and version - 1 in self.metadata_changes:
            version -= 1
        return version != low

    def dependency_problem(self, name: str, level: int, proposed: Mapping[str, int]) -> str | None:
        """Feature.featureFromName, then Feature.validateVersion against the levels the update would leave, in Kafka's words.

        A name Kafka does not know gets here only at level 0, which its range check lets through.
        """
        prefix = f"Invalid update version {level} for feature {name}."
        if name not in self.names:
            return f"{prefix} Feature {name} not found."
        minimum, minimum_name = self.minimum_metadata_version
        metadata = proposed.get("metadata.version")
        if level >= 1 and (metadata is None or metadata < minimum):
            return f"{prefix} {name} could not be set to {level} because it depends on metadata.version={minimum} ({minimum_name})"
        for feature, needed in self.dependencies.get(name, {}).get(level, {}).items():
            have = proposed.get(feature)
            if have is None or have < needed:
                return f"{prefix} {name} could not be set to {level} because it depends on {feature} level {needed}"
        return None


@cache
def kafka_features() -> KafkaFeatures:
    raw = generated_data()["features"]
    return KafkaFeatures(
        supported={str(n): (int(r[0]), int(r[1])) for n, r in raw["supported"].items()},
        format_defaults={str(n): int(v) for n, v in raw["format_defaults"].items()},
        latest_metadata_version=int(raw["latest_production_metadata_version"]),
        metadata_changes={int(v["level"]): bool(v["changed"]) for v in raw["metadata_versions"]},
        dependencies={str(n): {int(lv): {str(f): int(x) for f, x in deps.items()} for lv, deps in levels.items()} for n, levels in raw["dependencies"].items()},
        minimum_metadata_version=(int(raw["minimum_metadata_version"]["level"]), str(raw["minimum_metadata_version"]["name"])),
        names=frozenset(str(n) for n in raw["names"]),
    )
