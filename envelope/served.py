"""What this product serves: one line per API key, how it is served and the versions pinned for it.

Routing (proxy/forward/routing.py), the proxy's own ApiVersions ranges (proxy/forward/service.py), the
connection APIs of every server (apiversions), the embedded controller's ranges (controller/server.py), the
admin specs (authz/admin_apis.py, one per FORWARD line) and the read handlers (proxy/forward/read_routes.py, one
per READ line) all follow from this table and are checked against it when they are imported.

The versions are pinned rather than taken from kio, so a kio upgrade changes nothing that is advertised until
this table changes (tests/envelope/test_served.py fails when kio knows a version a line does not pin). Every
API key not listed is refused, as are versions outside a line's range.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from envelope.apis import ApiKey
from envelope.versions import VersionRange


class Serving(Enum):
    CONNECTION = "connection"
    """ApiVersions and the SASL login: every server of this product answers them on the connection itself."""
    LOCAL = "local"
    """Answered by the proxy from what it knows (the cluster's brokers, its edge authorizer)."""
    READ = "read"
    """Not forwardable: the edge authorizer decides, then the read upstream answers under the proxy's identity."""
    FORWARD = "forward"
    """Wrapped, unchanged, in an Envelope to the active controller (KIP-590)."""


@dataclass(frozen=True, slots=True)
class Served:
    serving: Serving
    versions: VersionRange


def _line(serving: Serving, low: int, high: int) -> Served:
    return Served(serving, VersionRange(low, high))


_CONNECTION, _LOCAL, _READ, _FORWARD = Serving.CONNECTION, Serving.LOCAL, Serving.READ, Serving.FORWARD

SERVED: Mapping[int, Served] = MappingProxyType(
    {
        ApiKey.API_VERSIONS: _line(_CONNECTION, 0, 4),
        ApiKey.SASL_HANDSHAKE: _line(_CONNECTION, 0, 1),
        ApiKey.SASL_AUTHENTICATE: _line(_CONNECTION, 0, 2),
        ApiKey.DESCRIBE_CLUSTER: _line(_LOCAL, 0, 2),
        ApiKey.METADATA: _line(_READ, 0, 13),
        ApiKey.DESCRIBE_ACLS: _line(_READ, 1, 3),
        ApiKey.DESCRIBE_CONFIGS: _line(_READ, 1, 4),
        ApiKey.DESCRIBE_DELEGATION_TOKEN: _line(_READ, 1, 3),
        ApiKey.DESCRIBE_CLIENT_QUOTAS: _line(_READ, 0, 1),
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _line(_READ, 0, 0),
        ApiKey.CREATE_TOPICS: _line(_FORWARD, 2, 7),
        ApiKey.DELETE_TOPICS: _line(_FORWARD, 1, 6),
        ApiKey.CREATE_ACLS: _line(_FORWARD, 1, 3),
        ApiKey.DELETE_ACLS: _line(_FORWARD, 1, 3),
        ApiKey.ALTER_CONFIGS: _line(_FORWARD, 0, 2),
        ApiKey.CREATE_PARTITIONS: _line(_FORWARD, 0, 3),
        ApiKey.CREATE_DELEGATION_TOKEN: _line(_FORWARD, 1, 3),
        ApiKey.RENEW_DELEGATION_TOKEN: _line(_FORWARD, 1, 2),
        ApiKey.EXPIRE_DELEGATION_TOKEN: _line(_FORWARD, 1, 2),
        ApiKey.ELECT_LEADERS: _line(_FORWARD, 0, 2),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: _line(_FORWARD, 0, 1),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: _line(_FORWARD, 0, 1),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: _line(_FORWARD, 0, 0),
        ApiKey.ALTER_CLIENT_QUOTAS: _line(_FORWARD, 0, 1),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _line(_FORWARD, 0, 0),
        ApiKey.DESCRIBE_QUORUM: _line(_FORWARD, 0, 2),
        ApiKey.UPDATE_FEATURES: _line(_FORWARD, 0, 2),
        ApiKey.UNREGISTER_BROKER: _line(_FORWARD, 0, 0),
        ApiKey.ADD_RAFT_VOTER: _line(_FORWARD, 0, 1),
        ApiKey.REMOVE_RAFT_VOTER: _line(_FORWARD, 0, 0),
    }
)

ENVELOPE_RANGE = VersionRange(0, 0)
"""The Envelope a controller accepts (KIP-590): the embedded controller serves it; clients of the proxy never may."""


def served_as(serving: Serving) -> frozenset[int]:
    return frozenset(key for key, line in SERVED.items() if line.serving is serving)


def pinned_ranges(keys: frozenset[int] | None = None) -> dict[int, VersionRange]:
    """The pinned ranges of `keys` (default: every line), in API key order."""
    return {key: line.versions for key, line in sorted(SERVED.items()) if keys is None or key in keys}


def check_served(what: str, keys: frozenset[int], serving: Serving) -> None:
    """Fail at import when a registry (`what`) and the table disagree: one declaration per API, nowhere a second."""
    expected = served_as(serving)
    if keys != expected:
        raise RuntimeError(
            f"{what} does not match envelope/served.py's {serving.value} lines: "
            f"missing {sorted(map(int, expected - keys))}, not in the table {sorted(map(int, keys - expected))}"
        )
