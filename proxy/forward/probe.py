"""Asking the active controller's authorizer one question, as the proxy forwards a client's request.

A probe is a forwarded request whose bytes the tool wrote (`envelope-proxy authz probe` and `replay` are the
client here): it goes through the proxy's own upstream pool, logged in as the proxy, in the Envelope the
forwarding path builds (the same `wrap`, the same client id), and it is audited with the forwarding path's
records, marked with `data.probe`. Nothing here decides: the answer's codes go back to the caller, which reads
them with the probe plan (authz/probe_plans.py).
"""

import ipaddress
import logging
from dataclasses import dataclass

import trio
from kio.schema.errors import ErrorCode

from authz.admin_apis import ADMIN_APIS, response_errors
from authz.probe_plans import ProbePlan
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from envelope.errors import ProtocolError
from envelope.header import peek_request_header
from envelope.principal import Principal
from envelope.responses import ResourceError
from envelope.wrap import wrap
from proxy.audit.pipeline import AuditLog
from proxy.audit.request_records import Caller, Forwarding, RequestAudit
from proxy.forward.forwarding import FORWARDER_CLIENT_ID
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import ControllerPool

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

PROBE_CLIENT_ID = "envelope-proxy-authz-probe"
"""The embedded request's client id: what the controller's request log and a plug-in's context show."""
PROBE_CORRELATION_ID = 1
"""The embedded request's own id (the Envelope around it carries the connection's)."""
_PROBE_PORT = 0
"""No client port: no client connection carried the probe."""


@dataclass(frozen=True)
class Asker:
    """Who the question is asked for: what the Envelope carries, and what the audit names."""

    principal: Principal
    address: IPAddress
    listener: str
    security_protocol: str
    case: str
    """Where the question came from (`cases.jsonl:3`, or an audit record's request id), for the audit."""


@dataclass(frozen=True)
class ProbeAnswer:
    envelope_error: int | None
    """The EnvelopeResponse's code; None when no controller answered."""
    codes: set[int]
    """The embedded answer's top-level and per-resource codes (empty without an answer)."""
    messages: tuple[str, ...]
    """The controller's error messages, or why there was no answer."""
    controller: str | None
    """host:port of the controller that answered."""


class Prober:
    def __init__(self, pool: ControllerPool, audit: AuditLog, *, node_id: int, forwarding_principal: str, command: str) -> None:
        self.pool = pool
        self.audit = audit
        self.node_id = node_id
        self.forwarding_principal = forwarding_principal
        self.command = command

    async def ask(self, asker: Asker, plan: ProbePlan) -> ProbeAnswer:
        """Send `plan`'s request for `asker` in an Envelope to the active controller; audited as any forwarded request."""
        body = build_entity(request_schema(plan.api, plan.version), plan.values)
        frame = encode_request(body, correlation_id=PROBE_CORRELATION_ID, client_id=PROBE_CLIENT_ID)
        header = peek_request_header(frame)
        caller = Caller(
            principal=str(asker.principal),
            mechanism=None,
            listener=asker.listener,
            security_protocol=asker.security_protocol,
            address=str(asker.address),
            port=_PROBE_PORT,
            connection_id=self.command.replace(" ", "-"),
            software_name=None,
            software_version=None,
        )
        audit = RequestAudit(
            self.audit,
            self.node_id,
            caller,
            header,
            resources=ADMIN_APIS[plan.api].resources(body),
            forwarding=Forwarding(self.forwarding_principal, self.pool.settings.address),
            probe={"command": self.command, "case": asker.case},
        )
        await audit.intent(body)
        audit.restart()
        deadline = trio.current_time() + self.pool.settings.forward_timeout
        try:
            reply = await self.pool.send_envelope(
                lambda cid: wrap(frame, asker.principal, asker.address, correlation_id=cid, client_id=FORWARDER_CLIENT_ID),
                deadline=deadline,
                answered=lambda r: audit.delivered(r.delivery.attempts, r.delivery.server, r.delivery.queued),
            )
        except (UpstreamUnavailable, ProtocolError) as exc:
            await audit.failed(None, ErrorCode.request_timed_out, str(exc))
            return ProbeAnswer(None, set(), (str(exc),), None)
        controller = reply.delivery.server.address
        if reply.error != ErrorCode.none or reply.embedded is None:
            message = f"the controller answered the Envelope with error {reply.error}"
            await audit.failed(reply.error, reply.error, message)
            return ProbeAnswer(reply.error, set(), (message,), controller)
        top, results = _errors(plan, reply.embedded)
        await audit.outcome(reply.error, top, results)
        messages = tuple(r.message for r in results if r.message)
        return ProbeAnswer(reply.error, {top, *(r.error_code for r in results)}, messages, controller)


def _errors(plan: ProbePlan, embedded: bytes) -> tuple[int, list[ResourceError]]:
    _, response = decode_response_body(plan.api, plan.version, embedded)
    top, results = response_errors(plan.api, response)
    return top, results


__all__ = ["Asker", "ProbeAnswer", "Prober"]
