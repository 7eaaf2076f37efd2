"""A range of versions of one API, as ApiVersions lists it; and the versions at which a request changes meaning that
more than one package tests."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class VersionRange:
    min: int
    max: int

    def __post_init__(self) -> None:
        if self.min < 0 or self.min > self.max:
            raise ValueError(f"invalid version range {self.min}..{self.max}")

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min <= version <= self.max

    def intersect(self, other: "VersionRange") -> "VersionRange | None":
        low, high = max(self.min, other.min), min(self.max, other.max)
        return VersionRange(low, high) if low <= high else None


METADATA_TOPIC_IDS = 12
"""The first Metadata version that may name topics by id alone (KIP-516); Kafka refuses ids below it."""
