"""ApiVersions for a forwarder: the KIP-590 intersection rule and the answers.

Pure: no IO. Ranges are plain (api key -> VersionRange) mappings.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_response, known_versions, response_schema
from envelope.errors import ProtocolError
from envelope.served import ENVELOPE_RANGE as ENVELOPE_RANGE
from envelope.served import Serving, pinned_ranges, served_as
from envelope.versions import VersionRange as VersionRange

Ranges = Mapping[int, VersionRange]

# The ranges every server of this product speaks itself, whatever its other APIs: the proxy
# (proxy/forward/service.py) and the embedded controller (controller/server.py) both advertise them.
CONNECTION_RANGES: Mapping[int, VersionRange] = pinned_ranges(served_as(Serving.CONNECTION))
"""ApiVersions and the SASL login, as envelope/served.py pins them."""


@dataclass(frozen=True)
class Features:
    """ApiVersions v3+'s feature fields, each list in the order the node gives it."""

    supported: Mapping[str, VersionRange]
    finalized: Mapping[str, int]
    epoch: int = -1

    def fields(self) -> dict[str, Any]:
        return {
            "supported_features": [{"name": n, "min_version": r.min, "max_version": r.max} for n, r in self.supported.items()],
            "finalized_features_epoch": self.epoch,
            "finalized_features": [{"name": n, "max_version_level": v, "min_version_level": v} for n, v in self.finalized.items()],
            "zk_migration_ready": False,
        }


def intersect(own: Ranges, controller: Ranges | None, forwardable: Iterable[int]) -> dict[int, VersionRange]:
    """What a forwarder advertises.

    Not forwardable -> its own range. Forwardable -> the overlap with the
    controller's range, or left out when the controller lacks the API or the
    ranges do not overlap. Before the controller's ranges are known
    (`controller is None`) a broker falls back to its own ranges.
    """
    forward = frozenset(forwardable)
    result: dict[int, VersionRange] = {}
    for api_key, mine in own.items():
        if api_key not in forward or controller is None:
            result[api_key] = mine
            continue
        theirs = controller.get(api_key)
        overlap = mine.intersect(theirs) if theirs is not None else None
        if overlap is not None:
            result[api_key] = overlap
    return dict(sorted(result.items()))


def must_reconnect_clients(before: Ranges | None, after: Ranges) -> bool:
    """KIP-590: when the advertised set changes, clients must ask again."""
    return before is not None and dict(before) != dict(after)


def kio_range(api_key: int, cap: VersionRange | None = None) -> VersionRange:
    """The versions we can decode for an API (optionally capped)."""
    known = known_versions(api_key)
    if known is None:
        raise ValueError(f"api key {api_key} is unknown to kio")
    mine = VersionRange(*known)
    if cap is None:
        return mine
    overlap = mine.intersect(cap)
    if overlap is None:
        raise ValueError(f"api key {api_key}: {mine} does not overlap {cap}")
    return overlap


def build_response(
    request_version: int,
    correlation_id: int,
    ranges: Ranges,
    *,
    throttle_time_ms: int = 0,
    features: Features | None = None,
) -> bytes:
    """A whole ApiVersions response (header v0 always) for a request version.

    A version we do not support gets ErrorCode.unsupported_version encoded as v0 with
    only ApiVersions' own range, so the client can retry with a lower one. `features`
    fills v3+'s supported and finalized feature levels (a controller's answer).
    """
    own = ranges[ApiKey.API_VERSIONS]
    if request_version not in own:
        body = build_entity(
            response_schema(ApiKey.API_VERSIONS, 0),
            {
                "error_code": ErrorCode.unsupported_version,
                "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": own.min, "max_version": own.max}],
            },
        )
        return encode_response(body, correlation_id=correlation_id)
    body = build_entity(
        response_schema(ApiKey.API_VERSIONS, request_version),
        {
            "error_code": ErrorCode.none,
            "api_keys": [{"api_key": key, "min_version": r.min, "max_version": r.max} for key, r in sorted(ranges.items())],
            "throttle_time": throttle_time_ms,
            **(features.fields() if features is not None else {}),
        },
    )
    return encode_response(body, correlation_id=correlation_id)


# Kafka's ApiVersionsRequest.isValid: what ClientSoftwareName and ClientSoftwareVersion must match.
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def valid_software(name: str, version: str) -> bool:
    """Whether ApiVersions v3+'s client software name and version are ones Kafka accepts."""
    return SOFTWARE_PATTERN.fullmatch(name) is not None and SOFTWARE_PATTERN.fullmatch(version) is not None


def build_error_response(request_version: int, correlation_id: int, error_code: int) -> bytes:
    """Kafka's ApiVersionsRequest.getErrorResponse for an error other than ErrorCode.unsupported_version: the code, no ranges."""
    body = build_entity(response_schema(ApiKey.API_VERSIONS, request_version), {"error_code": error_code, "api_keys": [], "throttle_time": 0})
    return encode_response(body, correlation_id=correlation_id)


def parse_response(frame: bytes, request_version: int) -> tuple[int, dict[int, VersionRange]]:
    """(error code, ranges) from a whole ApiVersions response frame."""
    _, body = decode_response_body(ApiKey.API_VERSIONS, request_version, frame)
    return int(body.error_code), ranges_of(body)


def ranges_of(body: Any) -> dict[int, VersionRange]:
    """The ranges of a decoded ApiVersions response; ProtocolError for an impossible one (min > max)."""
    try:
        return {int(item.api_key): VersionRange(int(item.min_version), int(item.max_version)) for item in body.api_keys}
    except ValueError as exc:
        raise ProtocolError(f"ApiVersions answer with {exc}") from exc
