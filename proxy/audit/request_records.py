"""The audit records of one request, built here and nowhere else: who sent it, what it touches, each stage's record.

One `RequestAudit` is made per request. It carries the request id, the start time
and the resources from the intent to the outcome, so the records of one forwarded
request always pair up (same `requestId`) and name the same resources.

What a request ended in is one of the outcomes below (`Outcome`); the request path
hands it, with the answer, to its one respond step (`ProxyService._respond` in proxy/forward/service.py), which
calls `record` and then `count` before the answer is sent.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kio.schema.errors import ErrorCode

from authz.actions import ResourceAccess, subject_of
from authz.admin_apis import ParameterBounds, request_parameters
from envelope.apis import api_label
from envelope.header import RequestHeaderInfo
from envelope.responses import ResourceError, error_name
from proxy.audit.callers import Caller, Forwarding
from proxy.audit.cloudevents import first_entries, make_record, new_id, rows_within, within_limits
from proxy.audit.config_secrets import sensitive
from proxy.audit.outcomes import BY_EDGE, BY_PROXY, BY_UPSTREAM, Failed, Forwarded, Local, Outcome, Read, Refused, Unrecorded
from proxy.audit.pipeline import AuditLog
from proxy.audit.proxied import proxied_by_record
from proxy.audit.record_lines import RecordLines, SharedLine, record_lines
from proxy.net.addresses import ControllerAddress

REQUEST_ENTRY_FACTOR = 16
"""An intent's `request` holds at most this many times `audit.record.max.resources` list entries in all (nested lists
add up: a CreateTopics of many topics with many partitions' assignments each)."""

# The strings of a `result.errors` row that the controller (or a client's resource name) chose.
_ERROR_TEXTS = ("resource", "message")


def error_row(resource: str | None, code: int, message: str | None) -> dict[str, Any]:
    """One entry of a record's `result.errors`."""
    return {"resource": resource, "errorCode": code, "errorName": error_name(code), "message": message}


def _forwarded_result(envelope_error: int, top: int, failed: list[ResourceError], rows: Sequence[ResourceError] | None = None) -> dict[str, Any]:
    """An outcome's `result`: the status from every failed result, a row for each of `rows` (by default all of them)."""
    return {
        "status": "SUCCESS" if top == ErrorCode.none and not failed else "FAILURE",
        "envelopeErrorCode": envelope_error,
        "errorCode": top,
        "errors": [error_row(r.resource, r.error_code, r.message) for r in (failed if rows is None else rows)],
    }


@dataclass
class RequestAudit:
    log: AuditLog
    node_id: int
    caller: Caller
    header: RequestHeaderInfo
    resources: list[ResourceAccess] = field(default_factory=list)
    forwarding: Forwarding | None = None
    request_id: str = field(default_factory=new_id)
    started: float = field(default_factory=time.perf_counter)
    attempts: list[int | None] = field(default_factory=list)
    """The node id of each controller the envelope was sent to, in order."""
    answered_by: ControllerAddress | None = None
    """The controller whose answer was passed on (or whose NOT_CONTROLLER came last)."""
    queued: float = 0.0
    """Seconds the request waited for a controller connection, over all its attempts."""
    probe: dict[str, str] | None = None
    """Set when `envelope-proxy authz probe` or `replay` wrote the request (not a client): its `data.probe`."""
    _prepared: tuple[Caller, dict[str, Any]] | None = field(default=None, init=False, repr=False)
    """What the intent and the outcome share (who, what, the resources), built once for both."""
    _shared_within: bool = field(default=False, init=False, repr=False)
    """What they share is within the audit's limits: checked once, when it is built, not for each record."""
    _shared: SharedLine | None = field(default=None, init=False, repr=False)
    """What the intent's and outcome's spliced lines share (proxy/audit/record_lines.py)."""
    _lines: RecordLines = field(init=False, repr=False)

    api: str = field(init=False)
    """The API's name, with a bounded set of values (audit methodName, metric labels)."""

    def __post_init__(self) -> None:
        self.api = api_label(self.header.api_key)
        self._lines = record_lines(self.node_id)

    def restart(self) -> None:
        self.started = time.perf_counter()

    def delivered(self, attempts: Sequence[ControllerAddress], server: ControllerAddress, queued: float) -> None:
        """One envelope answered by `server` (NOT_CONTROLLER included): every node it went to, and how long it waited."""
        self.attempts += [attempt.node_id for attempt in attempts]  # a list made at once: a generator costs more for one
        self.answered_by = server
        self.queued += queued

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def _data(self, stage: str, resources: list[ResourceAccess]) -> dict[str, Any]:
        paired = stage in ("intent", "outcome") and resources is self.resources
        if paired and self._prepared is not None and self._prepared[0] is self.caller:
            shared = dict(self._prepared[1])
            if "truncated" in shared:  # the outcome adds its own omissions: the intent's record keeps its own
                truncated = shared["truncated"]
                shared["truncated"] = {"fields": list(truncated["fields"]), "omitted": dict(truncated["omitted"])}
            shared["stage"] = stage
            shared["upstream"] = self._upstream() if self.forwarding else None
            return shared
        caller, header, forwarding = self.caller, self.header, self.forwarding
        data: dict[str, Any] = {
            "requestId": self.request_id if stage in ("intent", "outcome") else new_id(),
            "stage": stage,
            "methodName": f"kafka.{self.api}",
            "apiKey": header.api_key,
            "apiVersion": header.api_version,
            "authenticationInfo": {
                "principal": caller.principal,
                "mechanism": caller.mechanism,
                "listener": caller.listener,
                "securityProtocol": caller.security_protocol,
                **({"authenticationId": caller.authentication_id} if caller.authentication_id is not None else {}),
            },
            "forwardingPrincipal": forwarding.principal if forwarding else None,
            "requestMetadata": {
                "clientAddress": caller.address,
                "clientPort": caller.port,
                "clientId": header.client_id,
                "clientSoftwareName": caller.software_name,
                "clientSoftwareVersion": caller.software_version,
                "correlationId": header.correlation_id,
                "connectionId": caller.connection_id,
                # a direct connection (most) does not call into proxied.py: one file less per request
                "proxiedBy": None if caller.proxied_by is None else proxied_by_record(caller.proxied_by),
            },
            "resources": [],
            "authorizationInfo": None,
            "result": None,
            "timings": None,
            "upstream": self._upstream() if forwarding else None,
            "connection": None,
        }
        if self.probe is not None:
            data["probe"] = dict(self.probe)
        data["resources"] = [r.as_audit() for r in first_entries(data, resources, self.log.limits.max_resources, "resources")]
        if paired:
            self._prepared = (caller, dict(data))
            self._shared_within = within_limits({"subject": None, "data": data}, self.log.limits)
        return data

    def _upstream(self) -> dict[str, Any]:
        """Where the envelope went: the configured quorum until a controller answered, then that node and every attempt."""
        server, forwarding = self.answered_by, self.forwarding
        if server is None:
            assert forwarding is not None
            return {"address": forwarding.upstream_address, "nodeId": None, "attempts": len(self.attempts), "controllers": list(self.attempts)}
        return {
            "address": server.address,
            "nodeId": server.node_id,
            "attempts": len(self.attempts),
            "controllers": list(self.attempts),
        }

    def _upstream_part(self) -> bytes:
        """`_upstream()` encoded: once per controller for an envelope sent once or not yet (nearly all)."""
        attempts = self.attempts
        if len(attempts) > 1:
            return self._lines.upstream(None, self._upstream)
        server = self.answered_by
        key: tuple[str, int | None, int, int | None]
        if server is None:
            assert self.forwarding is not None
            key = (self.forwarding.upstream_address, None, len(attempts), attempts[0] if attempts else None)
        else:
            key = (server.address, server.node_id, len(attempts), attempts[0] if attempts else None)
        return self._lines.upstream(key, self._upstream)

    def _timings(self, *, forwarded: bool = False) -> dict[str, float]:
        """Forwarded: queue is the wait for a controller connection, upstream the rest after the intent (round
        trips, failovers). Answered by the proxy: all of it is the total."""
        total = self.elapsed_ms()
        queue = min(self.queued * 1000, total)
        upstream = total - queue if forwarded else 0.0
        return {"queueMs": round(queue, 3), "upstreamMs": round(upstream, 3), "totalMs": round(total, 3)}

    async def _write(self, data: dict[str, Any], subject: str | None, *, required: bool = False, within: bool | None = None) -> None:
        await self.log.write(make_record(self.node_id, subject, data), required=required, within=within)

    def _paired_within(self, data: dict[str, Any], subject: str | None) -> bool:
        """An intent's or outcome's record is within the limits when what it shares is, and its own parts are."""
        return (
            self._shared_within
            and "truncated" not in data
            and (subject is None or len(subject) <= self.log.limits.max_string_chars)
        )

    async def record(self, outcome: Outcome) -> None:
        """The record of how the request ended (none for `Unrecorded`)."""
        if isinstance(outcome, Forwarded):
            await self.outcome(outcome.envelope_error, outcome.top, outcome.results)
        elif isinstance(outcome, Read):
            self.resources = outcome.resources
            await self.read(outcome.policy, outcome.denied, outcome.code_of, outcome.error_code, outcome.error_message, outcome.error_by)
        elif isinstance(outcome, Local):
            await self.local()
        elif isinstance(outcome, Failed):
            await self.failed(outcome.envelope_error, outcome.code, outcome.message)
        elif isinstance(outcome, Refused):
            await self.refused(outcome.reason, outcome.code, outcome.resources)

    # -- the stages -------------------------------------------------------------------------

    async def intent(self, body: Any = None) -> None:
        """Committed (as durable as audit.durability says) before the controller sees the request; raises AuditUnavailable.

        `body`, the request as the forwarding path decoded it, gives the record's `request` (what the request asks to
        change) where audit.level keeps it for this listener and API."""
        request, bounds = self.parameters(body)
        if bounds is None or bounds.within:
            shared = self._shared_line()
            line = None if shared is None else self._lines.intent(self.log.limits, shared, self.request_id, self._upstream_part(), request)
            if line is not None:
                await self.log.write_line(line, self.request_id, "intent", self.caller.principal, required=True)
                return
        data, subject, within = self.intent_record(request, bounds)
        await self._write(data, subject, required=True, within=within)

    def parameters(self, body: Any) -> tuple[dict[str, Any] | None, ParameterBounds | None]:
        """What the request asks to change, where audit.level keeps it, and the bounds it was read within."""
        if body is None or not self.log.levels.keeps_request(self.caller.listener, self.api):
            return None, None
        limits = self.log.limits
        bounds = ParameterBounds(limits.max_string_chars, limits.max_resources, limits.max_resources * REQUEST_ENTRY_FACTOR, sensitive)
        return request_parameters(self.header.api_key, body, bounds), bounds

    def intent_record(self, request: dict[str, Any] | None, bounds: ParameterBounds | None) -> tuple[dict[str, Any], str | None, bool]:
        """The intent the dict way: its `data`, subject and whether it is within the limits (the spliced line's oracle)."""
        data, subject = self._data("intent", self.resources), subject_of(self.resources)
        within = self._paired_within(data, subject)
        if request is not None and bounds is not None:
            data["request"] = request
            if bounds.omitted:
                # the intent's own omissions: what it shares with the outcome keeps its own
                truncated = data.get("truncated") or {"fields": [], "omitted": {}}
                data["truncated"] = {"fields": list(truncated["fields"]), "omitted": {**truncated["omitted"], **bounds.omitted}}
            within = within and bounds.within
        return data, subject, within

    async def outcome(self, envelope_error: int, top: int, results: list[ResourceError]) -> None:
        """The controller answered: its top-level and per-resource errors."""
        failed = [r for r in results if r.error_code != ErrorCode.none]
        limits = self.log.limits
        if len(failed) <= limits.max_resources:
            result = partial(_forwarded_result, envelope_error, top, failed)
            shared = self._shared_line() if not failed or rows_within(result()["errors"], limits, _ERROR_TEXTS) else None
            if shared is not None:
                encoded = self._lines.result(None if failed else (envelope_error, top), result)
                line = self._lines.outcome(limits, shared, self.request_id, encoded, self._timings(forwarded=True), self._upstream_part())
                if line is not None:
                    await self.log.write_line(line, self.request_id, "outcome", self.caller.principal)
                    return
        data, subject, within = self.outcome_record(envelope_error, top, failed)
        await self._write(data, subject, within=within)

    def outcome_record(self, envelope_error: int, top: int, failed: list[ResourceError]) -> tuple[dict[str, Any], str | None, bool]:
        """The outcome the dict way: its `data`, subject and whether it is within the limits (the spliced line's oracle)."""
        data = self._data("outcome", self.resources)
        rows = first_entries(data, failed, self.log.limits.max_resources, "result.errors")
        data["result"] = _forwarded_result(envelope_error, top, failed, rows)
        data["timings"] = self._timings(forwarded=True)
        subject = subject_of(self.resources)
        within = self._paired_within(data, subject) and rows_within(data["result"]["errors"], self.log.limits, _ERROR_TEXTS)
        return data, subject, within

    def _shared_line(self) -> SharedLine | None:
        """What the intent's and outcome's lines share, encoded once for both (None: the dict way, for a record over
        the limits or a probe's, whose `data.probe` the spliced parts do not carry)."""
        if self.probe is not None:
            return None
        shared = self._shared
        if shared is None or shared.caller is not self.caller or shared.resources is not self.resources or shared.forwarding is not self.forwarding:
            shared = self._lines.shared(self.log.limits, self.caller, self.header, self.api, self.forwarding, self.resources, subject_of(self.resources))
            self._shared = shared
        return shared

    async def failed(self, envelope_error: int | None, code: int, message: str) -> None:
        """No answer from the controller to pass on: the proxy answers `code` for every resource."""
        data = self._data("outcome", self.resources)
        rows = first_entries(data, self.resources, self.log.limits.max_resources, "result.errors")
        data["result"] = {
            "status": "ERROR",
            "envelopeErrorCode": envelope_error,
            "errorCode": code,
            "errors": [error_row(r.name, code, message) for r in rows],
        }
        data["timings"] = self._timings(forwarded=True)
        await self._write(data, subject_of(self.resources))

    async def refused(self, reason: str, code: int = ErrorCode.invalid_request, resources: Sequence[ResourceAccess] = ()) -> None:
        """Refused by the proxy: nothing was forwarded, so no upstream and no forwarding principal are named."""
        self.forwarding = None
        data = self._data("refused", list(resources))
        data["authorizationInfo"] = {"decision": "DENIED", "reason": reason}
        data["result"] = {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": code, "errors": []}
        data["timings"] = {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.0}
        await self._write(data, None)

    async def local(self) -> None:
        data = self._data("local", [])
        data["result"] = {"status": "SUCCESS", "envelopeErrorCode": None, "errorCode": ErrorCode.none, "errors": []}
        data["timings"] = self._timings()
        await self._write(data, None)

    async def read(
        self,
        policy: str,
        denied: list[ResourceAccess],
        code_of: Callable[[ResourceAccess], int],
        error_code: int,
        error_message: str | None,
        error_by: str = BY_UPSTREAM,
    ) -> None:
        """A read answered by the proxy: what the edge authorizer denied, and the error if any.

        The status says who failed (docs/audit-schema.md, status rules): an error of the read upstream, or the proxy's
        own failure, is ERROR, named by one `result.errors` row (`upstream`, or no resource for the proxy); a denial at
        the edge is FAILURE, also when it denied everything and the answer carries the denial's code at the top."""
        data = self._data("read", self.resources)
        limit = self.log.limits.max_resources
        data["authorizationInfo"] = {
            "decision": "DENIED" if denied and len(denied) == len(self.resources) else "ALLOWED",
            "reason": f"edge authorizer ({policy})",
            "denied": [r.as_audit() for r in first_entries(data, denied, limit, "authorizationInfo.denied")],
        }
        kept = first_entries(data, denied, limit, "result.errors")
        failed = error_code != ErrorCode.none and error_by != BY_EDGE
        failure = [error_row("upstream" if error_by == BY_UPSTREAM else None, error_code, error_message)] if failed else []
        data["result"] = {
            "status": "ERROR" if failed else "FAILURE" if denied or error_code != ErrorCode.none else "SUCCESS",
            "envelopeErrorCode": None,
            "errorCode": error_code,
            "errors": [error_row(r.name, code_of(r), "denied at the edge") for r in kept] + failure,
        }
        data["timings"] = self._timings()
        await self._write(data, subject_of(self.resources))


__all__ = ["BY_EDGE", "BY_PROXY", "BY_UPSTREAM", "Caller", "Failed", "Forwarded", "Forwarding", "Local", "Outcome", "Read", "Refused", "RequestAudit", "Unrecorded", "error_row"]
