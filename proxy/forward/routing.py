"""The forward layer's decisions, pure: where one request goes, what it is answered with, and
what an EnvelopeResponse's error makes the proxy do.

Where a request goes is decided from its header alone:
(header, advertised ranges, the reads the proxy answers) -> ApiVersions | Local | Read | Forward | Refuse.
The listener and the principal do not change the route: who may do what is the
edge authorizer's question (reads) or the controller's (forwarded requests).

Every route ends in an `Answer`, which the one respond step (`ProxyService._respond` in
proxy/forward/service.py) audits, counts and sends, in that order.

An EnvelopeResponse's error, as a Kafka broker's ForwardingManager reads it: 0 passes the
embedded answer on; NOT_CONTROLLER is re-sent by the upstream to the new active controller,
and times out once the forward deadline has passed; UNSUPPORTED_VERSION means the controller's
versions changed, so the client must ask ApiVersions again (its connection is closed); CLUSTER_AUTHORIZATION_FAILED is the proxy's own
missing CLUSTER_ACTION, passed on so the client sees an authorization error; anything else is
UNKNOWN_SERVER_ERROR.
"""

from collections.abc import Container, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from apiversions import VersionRange
from envelope.apis import ApiKey, api_name
from envelope.header import RequestHeaderInfo
from envelope.served import Serving, served_as
from proxy.audit.request_records import Outcome
from proxy.net.refusals import CAUSE_PROTOCOL_ERROR

# Answered by the proxy itself (envelope/served.py's local lines). SASL frames after the login that begin no
# re-authentication get Kafka's ILLEGAL_SASL_STATE answer there too.
SASL_APIS = served_as(Serving.CONNECTION) - {ApiKey.API_VERSIONS}
LOCAL_APIS = served_as(Serving.LOCAL) | SASL_APIS


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


# The routes without a reason, made once: every request is routed (a frozen dataclass each time cost about 0.3 µs).
_API_VERSIONS, _LOCAL, _READ, _FORWARD = Routed(Route.API_VERSIONS), Routed(Route.LOCAL), Routed(Route.READ), Routed(Route.FORWARD)


def route(header: RequestHeaderInfo, advertised: Mapping[int, VersionRange], reads: Container[int]) -> Routed:
    """`reads`: the APIs the proxy answers through its edge authorizer (proxy/forward/read_routes.py)."""
    key = header.api_key
    if key == ApiKey.API_VERSIONS:
        return _API_VERSIONS
    if key == ApiKey.ENVELOPE:
        return Routed(Route.REFUSE, "Envelope is not accepted from clients")
    served = advertised.get(key)
    if served is None:
        return Routed(Route.REFUSE, f"API {api_name(key)} is not served by this proxy")
    if not served.min <= header.api_version <= served.max:
        return Routed(Route.REFUSE, f"version {header.api_version} of {api_name(key)} is not in {served.min}..{served.max}")
    if key in LOCAL_APIS:
        return _LOCAL
    if key in reads:
        return _READ
    return _FORWARD


class Answer(NamedTuple):
    """What one request is answered with: how it ended (for the record and the metrics), the bytes to send, if
    any, and what to raise after them, if anything (CloseConnection, or the ProtocolError that closes the connection).
    A named tuple: immutable, and made per request for half what a frozen dataclass costs."""

    outcome: Outcome
    frame: bytes | None = None
    then: BaseException | None = None


# -- what an EnvelopeResponse's error makes the proxy do --------------------------------------------------


class CloseConnection(Exception):
    """Kafka's answer to this request is to close the connection; `cause` is the `disconnected` record's."""

    def __init__(self, message: str, cause: str = CAUSE_PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.cause = cause


class Next(Enum):
    ANSWER = "answer"  # send the embedded response to the client
    CLOSE = "close"  # audit, then close the client connection (it must ask ApiVersions again)
    ERROR = "error"  # answer the client with `client_code` for every resource


@dataclass(frozen=True, slots=True)
class EnvelopeAction:
    next: Next
    client_code: int
    """The error the client gets (0 when the embedded answer is passed on)."""


_POLICY: dict[int, EnvelopeAction] = {
    ErrorCode.none: EnvelopeAction(Next.ANSWER, ErrorCode.none),
    # The upstream's one retry loop (proxy/upstream/pool.py) re-sends it to the new active controller until
    # controller.forward.timeout.ms; an envelope still answered so then is timed out, as in Kafka.
    ErrorCode.not_controller: EnvelopeAction(Next.ERROR, ErrorCode.request_timed_out),
    ErrorCode.unsupported_version: EnvelopeAction(Next.CLOSE, ErrorCode.unsupported_version),
    ErrorCode.cluster_authorization_failed: EnvelopeAction(Next.ERROR, ErrorCode.cluster_authorization_failed),
}
_ANYTHING_ELSE = EnvelopeAction(Next.ERROR, ErrorCode.unknown_server_error)


def envelope_action(envelope_error: int) -> EnvelopeAction:
    return _POLICY.get(envelope_error, _ANYTHING_ELSE)
