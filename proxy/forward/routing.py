"""Where one request goes, decided from its header alone: a pure function.

(header, advertised ranges, the reads the proxy answers) -> ApiVersions | Local | Read | Forward | Refuse.
The listener and the principal do not change the route: who may do what is the
edge authorizer's question (reads) or the controller's (forwarded requests).
"""

from collections.abc import Container, Mapping
from dataclasses import dataclass
from enum import Enum

from apiversions import VersionRange
from envelope.apis import ApiKey, api_name
from envelope.header import RequestHeaderInfo

# Answered by the proxy itself: it is the only broker and the controller its clients see. SASL frames after the
# login that begin no re-authentication get Kafka's ILLEGAL_SASL_STATE answer there too.
SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
LOCAL_APIS = frozenset({ApiKey.DESCRIBE_CLUSTER, *SASL_APIS})


class Route(Enum):
    API_VERSIONS = "api-versions"
    LOCAL = "local"
    READ = "read"
    FORWARD = "forward"
    REFUSE = "refuse"


@dataclass(frozen=True, slots=True)
class Routed:
    route: Route
    reason: str | None = None
    """Why a request is refused (its audit record's reason); None otherwise."""


def route(header: RequestHeaderInfo, advertised: Mapping[int, VersionRange], reads: Container[int]) -> Routed:
    """`reads`: the APIs the proxy answers through its edge authorizer (proxy/forward/read_routes.py)."""
    key = header.api_key
    if key == ApiKey.API_VERSIONS:
        return Routed(Route.API_VERSIONS)
    if key == ApiKey.ENVELOPE:
        return Routed(Route.REFUSE, "Envelope is not accepted from clients")
    served = advertised.get(key)
    if served is None:
        return Routed(Route.REFUSE, f"API {api_name(key)} is not served by this proxy")
    if header.api_version not in served:
        return Routed(Route.REFUSE, f"version {header.api_version} of {api_name(key)} is not in {served.min}..{served.max}")
    if key in LOCAL_APIS:
        return Routed(Route.LOCAL)
    if key in reads:
        return Routed(Route.READ)
    return Routed(Route.FORWARD)
