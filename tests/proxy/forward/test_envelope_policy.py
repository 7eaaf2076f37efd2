"""envelope_action(): what an EnvelopeResponse's error code makes the proxy do."""

import pytest
from kio.schema.errors import ErrorCode

from proxy.forward.routing import CloseConnection, EnvelopeAction, Next, envelope_action
from proxy.net.refusals import CAUSE_PROTOCOL_ERROR


@pytest.mark.parametrize(
    ("envelope_error", "expected"),
    [
        (0, EnvelopeAction(Next.ANSWER, 0)),  # the embedded answer goes to the client
        (41, EnvelopeAction(Next.ERROR, 7)),  # NOT_CONTROLLER once the upstream's re-sends reached the deadline: REQUEST_TIMED_OUT
        (35, EnvelopeAction(Next.CLOSE, 35)),  # UNSUPPORTED_VERSION: the client must ask ApiVersions again
        (31, EnvelopeAction(Next.ERROR, 31)),  # CLUSTER_AUTHORIZATION_FAILED: the proxy's own missing ClusterAction
    ],
)
def test_the_envelope_error_table(envelope_error: int, expected: EnvelopeAction) -> None:
    assert envelope_action(envelope_error) == expected


@pytest.mark.parametrize("envelope_error", [-1, 1, 7, 42, 58, 97, 1000])
def test_any_other_envelope_error_is_an_unknown_server_error_for_the_client(envelope_error: int) -> None:
    assert envelope_action(envelope_error) == EnvelopeAction(Next.ERROR, ErrorCode.unknown_server_error)
    assert int(ErrorCode.unknown_server_error) == -1


def test_close_connection_is_a_protocol_error_unless_told_otherwise() -> None:
    assert CloseConnection("x").cause == CAUSE_PROTOCOL_ERROR
    assert CloseConnection("x", "versions-changed").cause == "versions-changed"
