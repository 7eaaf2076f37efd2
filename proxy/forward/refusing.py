"""How the proxy refuses: one request (the warning it logs, the `Answer` that audits it as refused), and the
metric's cause for a connection refused as a whole.

Every refusal of the request path is built here (a route Kafka refuses, a body that cannot be decoded, a
session past its lifetime, ApiVersions with a software name Kafka rejects), so each is logged the same way;
the one respond step (proxy/forward/service.py `ProxyService._respond`) commits, counts and sends it.
"""

import logging

from envelope.apis import api_name
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo
from proxy.audit.request_records import Refused
from proxy.forward.routing import Answer
from proxy.forward.session import Session
from proxy.net.refusals import (
    IP_FILTER,
    PRIVILEGED_PRINCIPAL,
    PROTOCOL_ERROR,
    PROXY_PROTOCOL_HEADER,
    PROXY_PROTOCOL_UNTRUSTED,
    SSL_PRINCIPAL_MAPPING,
)

log = logging.getLogger(__name__)

# RefusedConnection.reason -> the metric's cause; every other reason is a connection limit's key.
_REFUSAL_CAUSES = {
    IP_FILTER: "ip_filter",
    PRIVILEGED_PRINCIPAL: "privileged_principal",
    SSL_PRINCIPAL_MAPPING: "tls",
    PROTOCOL_ERROR: "protocol_error",
    PROXY_PROTOCOL_UNTRUSTED: "proxy_protocol_untrusted",
    PROXY_PROTOCOL_HEADER: "proxy_protocol_header",
}
_LIMIT_CAUSE = "limit"


def connection_refusal_cause(reason: str) -> str:
    """The `connections_refused` metric's cause of a connection refused as a whole: a bounded set of label values."""
    return _REFUSAL_CAUSES.get(reason, _LIMIT_CAUSE)


def refusal(session: Session, header: RequestHeaderInfo, reason: str, *, then: BaseException | None, frame: bytes | None = None) -> Answer:
    conn = session.conn
    log.warning(
        "connection %s from %s (%s): refused %s: %s",
        conn.connection_id,
        conn.peer.host,
        session.principal,
        api_name(header.api_key),
        reason,
    )
    return Answer(Refused(reason), frame, then)


def undecodable(session: Session, header: RequestHeaderInfo, exc: ProtocolError) -> Answer:
    """Fail closed: a body that cannot be decoded (or its resources named) is refused, and the connection closed."""
    return refusal(session, header, f"request body cannot be decoded: {exc}", then=exc)
