"""The requests the proxy answers itself, never forwarded: a read through the edge authorizer, DescribeCluster
and a SASL frame after the login.

The service (proxy/forward/service.py) routes them here, a read with its body already decoded as a broker
reads it; each comes back as an `Answer` for the one respond step. A read route that throws is answered as
a Kafka broker answers a handler that throws, and the connection stays open.
"""

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from envelope.apis import api_name
from envelope.codec import decode_body
from envelope.error_messages import thrown_message
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo
from proxy.audit.request_records import BY_EDGE, BY_PROXY, BY_UPSTREAM, Local, Read, Refused
from proxy.forward.read_routes import READ_ERROR_ANSWERS, READ_ROUTES
from proxy.forward.reads import ReadPath, ReadUnavailable, denial_code
from proxy.forward.refusing import undecodable
from proxy.forward.routing import Answer, CloseConnection
from proxy.forward.session import Session
from proxy.net.sasl.machine import illegal_sasl_state

log = logging.getLogger(__name__)


class LocalRoutes:
    def __init__(self, reads: ReadPath, policy: str) -> None:
        self.reads = reads
        self.policy = policy
        """The edge authorizer's policy, named in every read's record."""

    def sasl_after_login(self, session: Session, header: RequestHeaderInfo, frame: bytes) -> Answer:
        """A SASL frame that begins no re-authentication: Kafka's KafkaApis answers ILLEGAL_SASL_STATE and goes on."""
        try:
            decode_body(header.api_key, header.api_version, frame, header.header_size, allow_trailing=True)
        except ProtocolError as exc:
            return undecodable(session, header, exc)
        return Answer(Local(), illegal_sasl_state(header))

    async def describe_cluster(self, session: Session, header: RequestHeaderInfo, frame: bytes) -> Answer:
        try:
            body = decode_body(header.api_key, header.api_version, frame, header.header_size, allow_trailing=True)
        except ProtocolError as exc:
            return undecodable(session, header, exc)
        cluster_id = await self.reads.cluster_id()
        # The endpoint type it asks for, and its authorized operations when asked, decide the answer (reads.py).
        answer = await self.reads.describe_cluster(session.context(header.client_id), session.listener, header, body, cluster_id)
        return Answer(Local(), answer)

    async def read(self, session: Session, header: RequestHeaderInfo, body: Any) -> Answer:
        try:
            result = await READ_ROUTES[header.api_key](self.reads, session.context(header.client_id), session.listener, header, body)
        except (ReadUnavailable, CloseConnection):
            raise  # no cluster id known yet (handle_request closes the connection), or a close the route asked for
        except Exception as exc:
            return self._read_failed(session, header, body, exc)
        if result.local:
            return Answer(Local(), result.frame)
        if result.refused:  # as the token changes a broker refuses itself: audited as refused, the connection kept
            return Answer(Refused(result.error_message or "refused", result.error_code, result.resources), result.frame)
        # Every resource asked denied at the edge: nothing went upstream, the answer's code is the edge's denial (FAILURE).
        error_by = BY_EDGE if result.denied and len(result.denied) == len(result.resources) else BY_UPSTREAM
        read = Read(self.policy, result.resources, result.denied, denial_code, result.error_code, result.error_message, error_by)
        return Answer(read, result.frame)

    def _read_failed(self, session: Session, header: RequestHeaderInfo, body: Any, exc: Exception) -> Answer:
        """A read route that threw: answered as a Kafka broker answers a handler that throws (KafkaApis.handleError:
        the request's getErrorResponse, UNKNOWN_SERVER_ERROR with no message), audited, logged with the traceback;
        the connection stays open, as Kafka's does."""
        conn = session.conn
        log.error(
            "connection %s from %s (%s): %s v%d failed in the proxy, answered UNKNOWN_SERVER_ERROR",
            conn.connection_id,
            conn.peer.host,
            session.principal,
            api_name(header.api_key),
            header.api_version,
            exc_info=exc,
        )
        code = ErrorCode.unknown_server_error
        error_answer = READ_ERROR_ANSWERS[header.api_key]
        values = {"throttle_time": 0, **error_answer(body, {"error_code": code, "error_message": thrown_message(code, str(exc))})}
        reason = f"the proxy failed answering it: {type(exc).__name__}: {exc}"
        read = Read(self.policy, [], [], denial_code, code, reason, BY_PROXY)  # the proxy's failure, not the upstream's
        return Answer(read, self.reads.encode(header, values))
