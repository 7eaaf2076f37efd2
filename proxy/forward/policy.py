"""What the proxy does with an EnvelopeResponse's error code: a pure table.

As a Kafka broker's ForwardingManager: 0 passes the embedded answer on;
NOT_CONTROLLER is retried at the new active controller (until the forward deadline); UNSUPPORTED_VERSION means the controller's versions
changed, so the client must ask ApiVersions again (its connection is closed);
CLUSTER_AUTHORIZATION_FAILED is the proxy's own missing CLUSTER_ACTION, passed on
so the client sees an authorization error; anything else is UNKNOWN_SERVER_ERROR.
"""

from dataclasses import dataclass
from enum import Enum

from kio.schema.errors import ErrorCode

from proxy.net.refusals import CAUSE_PROTOCOL_ERROR


class CloseConnection(Exception):
    """Kafka's answer to this request is to close the connection; `cause` is the `disconnected` record's."""

    def __init__(self, message: str, cause: str = CAUSE_PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.cause = cause


class Next(Enum):
    ANSWER = "answer"  # send the embedded response to the client
    RETRY = "retry"  # send the same envelope again (to the active controller)
    CLOSE = "close"  # audit, then close the client connection (it must ask ApiVersions again)
    ERROR = "error"  # answer the client with `client_code` for every resource


@dataclass(frozen=True, slots=True)
class EnvelopeAction:
    next: Next
    client_code: int
    """The error the client gets (0 when the embedded answer is passed on)."""


_POLICY: dict[int, EnvelopeAction] = {
    ErrorCode.none: EnvelopeAction(Next.ANSWER, ErrorCode.none),
    # Retried until controller.forward.timeout.ms; a request still unanswered then is timed out, as in Kafka.
    ErrorCode.not_controller: EnvelopeAction(Next.RETRY, ErrorCode.request_timed_out),
    ErrorCode.unsupported_version: EnvelopeAction(Next.CLOSE, ErrorCode.unsupported_version),
    ErrorCode.cluster_authorization_failed: EnvelopeAction(Next.ERROR, ErrorCode.cluster_authorization_failed),
}
_ANYTHING_ELSE = EnvelopeAction(Next.ERROR, ErrorCode.unknown_server_error)


def envelope_action(envelope_error: int) -> EnvelopeAction:
    return _POLICY.get(envelope_error, _ANYTHING_ELSE)
