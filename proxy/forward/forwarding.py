"""Forwarding one admin request: its body read as a broker reads it, its intent, the Envelope, and what to answer.

The client's bytes go into the Envelope untouched. The intent is committed here, before
the controller sees the request; the outcome is committed by the respond step
(`ProxyService._respond`) before the client sees the answer this module returns.
As Kafka's ForwardingManager, an envelope answered NOT_CONTROLLER (or lost with its
connection) goes to the new active controller until the request is
`controller.forward.timeout.ms` old (the one retry loop, proxy/upstream/pool.py); then the
client gets REQUEST_TIMED_OUT. This module sends once and answers what that comes to.
"""

import ipaddress
import logging
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from authz.acl_requests import unreadable_acl_request
from authz.actions import ResourceAccess
from authz.admin_apis import answer_scan, error_response, resources_of, response_errors
from envelope.answer_scan import scan_answer
from envelope.apis import ApiKey
from envelope.codec import decode_body, decode_response_body, encode_response
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo
from envelope.principal import Principal
from envelope.responses import ResourceError
from envelope.wrap import wrap
from proxy.audit.pipeline import AuditUnavailable
from proxy.audit.request_records import Failed, Forwarded, Refused, RequestAudit, Unrecorded
from proxy.forward.edge_authz import EdgeAuthorizer
from proxy.forward.offload import CpuOffload
from proxy.forward.refusing import undecodable
from proxy.forward.routing import Answer, CloseConnection, EnvelopeAction, Next, envelope_action
from proxy.forward.session import Session
from proxy.forward.token_checks import TOKEN_CHANGES, broker_answer
from proxy.forward.token_mirror import TokenMirror
from proxy.net.refusals import CAUSE_VERSIONS_CHANGED
from proxy.ops.metrics import ProxyMetrics
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import ControllerPool, EnvelopeReply, QueueFull

log = logging.getLogger(__name__)

FORWARDER_CLIENT_ID = "envelope-proxy"
"""The Envelope's own client id; probes (proxy/forward/probe.py) send theirs with it too."""
# The ACL changes the edge authorizer's mirror must see at once.
_ACL_CHANGES = frozenset({ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS})

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def decode_readable(api_key: int, api_version: int, frame: bytes, offset: int) -> Any:
    """The body, as a broker reads it: what Kafka's request classes refuse to build closes the connection there, before
    anything is forwarded or asked upstream (authz/acl_requests.py)."""
    # Kafka ignores bytes after a request body (librdkafka sends one after AlterUserScramCredentials).
    # Unknown tagged fields are skipped for the audit's copy; the forwarded bytes stay untouched.
    body = decode_body(api_key, api_version, frame, offset, allow_trailing=True)
    unreadable = unreadable_acl_request(api_key, body)
    if unreadable is not None:
        raise ProtocolError(unreadable)
    return body


def decode_with_resources(api_key: int, api_version: int, frame: bytes, offset: int) -> tuple[Any, list[ResourceAccess]]:
    body = decode_readable(api_key, api_version, frame, offset)
    return body, resources_of(api_key, body)


def decoded_response_errors(api_key: int, api_version: int, embedded: bytes) -> tuple[int, list[ResourceError]]:
    """The answer's errors from the full decode (bounded pre-pass, then kio): the scan's fallback, and its test oracle."""
    _, response = decode_response_body(api_key, api_version, embedded)
    return response_errors(api_key, response)


AnswerErrors = tuple[int, list[ResourceError]]
"""An answer's top-level error code and its per-resource errors, for the outcome record."""


def answer_errors(api_key: int, api_version: int, embedded: bytes) -> AnswerErrors:
    """The answer's top-level and per-resource errors for the outcome: one pass that reads each result's name, code and
    message (envelope/answer_scan.py), or the full decode for anything that scan leaves to it (a refusal included)."""
    plan = answer_scan(api_key, api_version)
    if plan is not None and (scanned := scan_answer(plan, embedded)) is not None:
        return scanned
    return decoded_response_errors(api_key, api_version, embedded)


def _undecodable_answer(audit: RequestAudit, exc: ProtocolError) -> AnswerErrors:
    log.warning("cannot decode the controller's %s answer for the audit: %s", audit.api, exc)
    return ErrorCode.unknown_server_error, []


class Forwarder:
    def __init__(
        self,
        upstream: ControllerPool,
        edge: EdgeAuthorizer,
        metrics: ProxyMetrics,
        offload: CpuOffload,
        tokens: TokenMirror,
        *,
        forwarding_principal: str,
    ) -> None:
        self.upstream = upstream
        self.edge = edge
        self.metrics = metrics
        self.offload = offload
        self.tokens = tokens
        self.forwarding_principal = forwarding_principal

    async def answer(self, session: Session, header: RequestHeaderInfo, frame: bytes, audit: RequestAudit) -> Answer:
        """The forward route: the body decoded and its resources named, a token request a broker answers itself, then
        the request forwarded."""
        try:
            if len(frame) < self.offload.large_frame_bytes:
                # The usual request is decoded on the spot: no coroutine for the offload's own check.
                body, audit.resources = decode_with_resources(header.api_key, header.api_version, frame, header.header_size)
            else:
                body, audit.resources = await self.offload.frame(
                    len(frame), decode_with_resources, header.api_key, header.api_version, frame, header.header_size
                )
        except ProtocolError as exc:
            # Fail closed: a mutation whose resources cannot be named is never forwarded.
            return undecodable(session, header, exc)
        if header.api_key in TOKEN_CHANGES:
            local = await broker_answer(self.edge, session.context(header.client_id), header, body)
            if local is not None:
                # What a broker answers itself: audited as refused at the edge, with Kafka's code; nothing forwarded.
                audit.forwarding = None
                return Answer(Refused(local.reason, local.code, local.resources), local.frame)
        # The intent, committed before anything is forwarded; its `request` is read from the body decoded for forwarding.
        try:
            await audit.intent(body)
        except AuditUnavailable as exc:
            return self._reject_unaudited(body, audit, exc)
        answer = await self._send(session.principal, session.client_address, frame, body, audit)
        if header.api_key in TOKEN_CHANGES and isinstance(answer.outcome, Forwarded):
            self.tokens.poke()  # token logins see a token made, renewed or expired here at once
        return answer

    async def _send(self, principal: Principal, address: IPAddress, frame: bytes, body: Any, audit: RequestAudit) -> Answer:
        audit.restart()  # the outcome's timings measure from here: queue, then the Envelope's round trips
        deadline = trio.current_time() + self.upstream.settings.forward_timeout

        def answered(reply: EnvelopeReply) -> None:
            # Recorded as each reply comes, not at the end: a later attempt that fails must not lose them.
            delivery = reply.delivery
            audit.delivered(delivery.attempts, delivery.server, delivery.queued)
            if reply.not_controller:
                self.metrics.upstream_not_controller_retries.inc()

        try:
            reply = await self.upstream.send_envelope(
                lambda cid: wrap(frame, principal, address, correlation_id=cid, client_id=FORWARDER_CLIENT_ID),
                deadline=deadline,
                answered=answered,
            )
        except QueueFull as exc:
            log.warning("request %s of %s refused: %s", audit.api, principal, exc)
            return self._error(body, audit, ErrorCode.request_timed_out, str(exc), None)
        except (UpstreamUnavailable, ProtocolError) as exc:
            log.warning("request %s of %s: %s", audit.api, principal, exc)
            return self._error(body, audit, ErrorCode.request_timed_out, str(exc), None)
        action = envelope_action(reply.error)  # once per request: what the envelope's error makes the proxy do
        if reply.not_controller:  # still, at the deadline
            message = f"no active controller took the request within controller.forward.timeout.ms ({len(audit.attempts)} attempts)"
            return self._error(body, audit, action.client_code, message, reply.error)
        embedded = reply.embedded
        scanned = None
        if action.next is Next.ANSWER and embedded is not None:
            if audit.header.api_key in _ACL_CHANGES:
                self.edge.invalidate()
            if len(embedded) >= self.offload.large_frame_bytes:
                scanned = await self._errors_in_worker(audit, embedded)  # the usual answer is read on the spot, in `_answer`
        return self._answer(body, audit, reply.error, action, embedded, scanned)

    def _answer(
        self, body: Any, audit: RequestAudit, envelope_error: int, action: EnvelopeAction, embedded: bytes | None, scanned: AnswerErrors | None
    ) -> Answer:
        if action.next is Next.ANSWER and embedded is not None:
            if scanned is None:
                scanned = self._errors_on_the_spot(audit, embedded)
            return Answer(Forwarded(envelope_error, *scanned), embedded)
        if action.next is Next.CLOSE:
            closing = CloseConnection("controller answered the envelope with UNSUPPORTED_VERSION", CAUSE_VERSIONS_CHANGED)
            return Answer(Failed(envelope_error, action.client_code, "controller refused the embedded version"), then=closing)
        message = f"envelope error {envelope_error}"
        if action.client_code == ErrorCode.cluster_authorization_failed:
            message = f"the proxy's principal {self.forwarding_principal} lacks CLUSTER_ACTION on the controller"
            log.error(
                "%s: grant it with kafka-acls --add --allow-principal %s --operation ClusterAction --cluster",
                message,
                self.forwarding_principal,
            )
        return self._error(body, audit, action.client_code, message, envelope_error)

    @staticmethod
    def _errors_on_the_spot(audit: RequestAudit, embedded: bytes) -> AnswerErrors:
        """The answer's errors for the outcome, read on the spot (an answer under the offload's size)."""
        header = audit.header
        try:
            return answer_errors(header.api_key, header.api_version, embedded)
        except ProtocolError as exc:
            return _undecodable_answer(audit, exc)

    async def _errors_in_worker(self, audit: RequestAudit, embedded: bytes) -> AnswerErrors:
        """`_errors_on_the_spot` for a large answer, read in the offload's worker thread."""
        header = audit.header
        try:
            return await self.offload.frame(len(embedded), answer_errors, header.api_key, header.api_version, embedded)
        except ProtocolError as exc:
            return _undecodable_answer(audit, exc)

    @staticmethod
    def _error_frame(body: Any, audit: RequestAudit, code: int, message: str) -> bytes:
        header = audit.header
        answer = error_response(header.api_key, header.api_version, body, code, message)
        return encode_response(answer, correlation_id=header.correlation_id)

    def _error(self, body: Any, audit: RequestAudit, code: int, message: str, envelope_error: int | None) -> Answer:
        return Answer(Failed(envelope_error, code, message), self._error_frame(body, audit, code, message))

    def _reject_unaudited(self, body: Any, audit: RequestAudit, exc: AuditUnavailable) -> Answer:
        """audit.on.failure=reject and the intent could not be written: answer with an error, forward nothing."""
        message = "the proxy could not write the audit record of this request; it was not forwarded"
        log.error("connection %s (%s): %s %s: %s", audit.caller.connection_id, audit.caller.principal, audit.api, message, exc)
        return Answer(Unrecorded(), self._error_frame(body, audit, ErrorCode.kafka_storage_error, message))
