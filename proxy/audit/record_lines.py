"""A forwarded request's intent and outcome records as JSON lines spliced from parts encoded once.

Built the dict-and-encoder way (request_records.py builds the record, cloudevents.py checks its bounds and
encodes it), one record cost some 25 µs, most of it in building and walking dicts whose content does not
change between requests. Here a line is joined from bytes: what a session shares (who the caller is) is
encoded once per session, what an API version shares once per process, and the outcome reuses the
middle of its intent's line (who, what API, which resources). Per request, only ids, the time, the
client id and correlation id, the resources' names, the request's parameters and, for the outcome, the
answer's result, the timings and where the envelope went are encoded.

A spliced line is byte-for-byte the line the dict-and-encoder way writes for the same record, keys in the
same order (tests/proxy/audit/test_record_lines.py holds every line to that way, for every forwarded API
and version, on hypothesis' callers, resources and answers). Only a record within the audit's limits is
spliced: one with anything to cut (a long string, too many resources, a line over
`audit.record.max.bytes`) is left to the dict-and-encoder way, which cuts it and says so in `data.truncated`.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from authz.actions import ResourceAccess
from envelope.header import RequestHeaderInfo
from proxy.audit import cloudevents
from proxy.audit.callers import Caller, Forwarding
from proxy.audit.cloudevents import REQUEST_EVENT_TYPE, SCHEMA_VERSION, RecordLimits
from proxy.audit.proxied import proxied_by_record

_dumps = orjson.dumps

# The record's keys before `data` and after `data.stage`, as make_record and RequestAudit._data order them.
_HEAD = b'{"specversion":"1.0","id":"'
_TYPE = b'","type":' + _dumps(REQUEST_EVENT_TYPE) + b',"source":'
_TIME = b',"time":"'
_SUBJECT = b'","subject":'
_DATA = b',"datacontenttype":"application/json","schemaversion":' + _dumps(SCHEMA_VERSION) + b',"data":{"requestId":'
_INTENT = b',"stage":"intent",'
_OUTCOME = b',"stage":"outcome",'
_FORWARDING = b'"forwardingPrincipal":'
_INTENT_TAIL = b',"authorizationInfo":null,"result":null,"timings":null,"upstream":'
_OUTCOME_RESULT = b',"authorizationInfo":null,"result":'
_TIMINGS = b',"timings":'
_UPSTREAM = b',"upstream":'
_REQUEST = b',"connection":null,"request":'
_END = b',"connection":null}}\n'
_REQUEST_END = b"}}\n"

_CACHED_CALLERS = 4096
"""Sessions whose parts are kept (a bounded cache: a session over the bound is encoded again, no more)."""
_CACHED_PARTS = 256
"""Results without rows and upstreams kept encoded (bounded: the codes come from the controller's answer)."""


@dataclass(frozen=True, slots=True)
class _CallerParts:
    """A session's caller, encoded: the record's parts around the client id and the correlation id."""

    caller: Caller
    authentication: bytes
    """`"authenticationInfo":{...},`"""
    address: bytes
    """`,"requestMetadata":{"clientAddress":...,"clientPort":...,"clientId":`"""
    software: bytes
    """`,"clientSoftwareName":...,"clientSoftwareVersion":...,"correlationId":`"""
    connection: bytes
    """`,"connectionId":...,"proxiedBy":...},"resources":`"""
    longest: int
    """The longest of the strings the limits cap (the principal, the software's name and version)."""


def _encode_caller(caller: Caller) -> _CallerParts:
    authentication: dict[str, Any] = {
        "principal": caller.principal,
        "mechanism": caller.mechanism,
        "listener": caller.listener,
        "securityProtocol": caller.security_protocol,
    }
    if caller.authentication_id is not None:
        authentication["authenticationId"] = caller.authentication_id
    capped = (caller.principal, caller.software_name, caller.software_version)
    return _CallerParts(
        caller,
        b'"authenticationInfo":' + _dumps(authentication) + b",",
        b',"requestMetadata":{"clientAddress":' + _dumps(caller.address) + b',"clientPort":' + _dumps(caller.port) + b',"clientId":',
        b',"clientSoftwareName":' + _dumps(caller.software_name) + b',"clientSoftwareVersion":' + _dumps(caller.software_version) + b',"correlationId":',
        b',"connectionId":' + _dumps(caller.connection_id) + b',"proxiedBy":' + _dumps(proxied_by_record(caller.proxied_by)) + b'},"resources":',
        max(len(text) for text in capped if text is not None),
    )


@dataclass(slots=True)
class SharedLine:
    """What a request's intent and outcome share, encoded: its subject and the middle of its `data`."""

    caller: Caller
    resources: Sequence[ResourceAccess]
    forwarding: Forwarding | None
    subject: bytes
    middle: bytes
    """From `"methodName"` to the end of `"resources"`: who, what API and which resources."""


class RecordLines:
    """The parts encoded once (per process, per API version, per session) and the lines spliced from them."""

    def __init__(self, node_id: int) -> None:
        self._source = _dumps(cloudevents.source(node_id))
        self._callers: dict[int, _CallerParts] = {}
        self._apis: dict[tuple[int, int], bytes] = {}
        self._resources: dict[tuple[Any, Any, Any], tuple[bytes, bytes]] = {}
        self._forwarding: tuple[Forwarding | None, bytes] = (None, _FORWARDING + b"null")
        self._results: dict[tuple[int, int], bytes] = {}
        self._upstreams: dict[tuple[str, int | None, int, int | None], bytes] = {}

    def _caller(self, caller: Caller) -> _CallerParts:
        # By identity: a session makes its Caller once (again at ApiVersions and at a login), so its parts follow it.
        parts = self._callers.get(id(caller))
        if parts is None or parts.caller is not caller:
            if len(self._callers) >= _CACHED_CALLERS:
                self._callers.pop(next(iter(self._callers)))
            parts = self._callers[id(caller)] = _encode_caller(caller)
        return parts

    def _api(self, header: RequestHeaderInfo, api: str) -> bytes:
        key = (header.api_key, header.api_version)
        part = self._apis.get(key)
        if part is None:
            fields = {"methodName": f"kafka.{api}", "apiKey": header.api_key, "apiVersion": header.api_version}
            part = self._apis[key] = _dumps(fields)[1:-1] + b","
        return part

    def _forwarding_part(self, forwarding: Forwarding | None) -> bytes:
        if forwarding is not self._forwarding[0]:
            self._forwarding = (forwarding, _FORWARDING + _dumps(forwarding.principal if forwarding else None))
        return self._forwarding[1]

    def _resource(self, resource: ResourceAccess) -> bytes:
        key = (resource.resource_type, resource.pattern_type, resource.operation)
        around = self._resources.get(key)
        if around is None:
            nameless = ResourceAccess(resource.resource_type, "", resource.pattern_type, resource.operation)
            before, after = _dumps(nameless.as_audit()).split(b'"name":""')
            around = self._resources[key] = (before + b'"name":', after)
        return around[0] + _dumps(resource.name) + around[1]

    def shared(
        self,
        limits: RecordLimits,
        caller: Caller,
        header: RequestHeaderInfo,
        api: str,
        forwarding: Forwarding | None,
        resources: Sequence[ResourceAccess],
        subject: str | None,
    ) -> SharedLine | None:
        """What the intent and outcome share, encoded; None when any of it is over the limits (the dict way cuts it)."""
        max_chars = limits.max_string_chars
        parts = self._caller(caller)
        client_id = header.client_id
        if (
            parts.longest > max_chars
            or (client_id is not None and len(client_id) > max_chars)
            or (subject is not None and len(subject) > max_chars)
            or len(resources) > limits.max_resources
        ):
            return None
        listed = []
        for resource in resources:
            if len(resource.name) > max_chars:
                return None
            listed.append(self._resource(resource))
        middle = b"".join(
            (
                self._api(header, api),
                parts.authentication,
                self._forwarding_part(forwarding),
                parts.address,
                _dumps(client_id),
                parts.software,
                str(header.correlation_id).encode(),
                parts.connection,
                b"[" + b",".join(listed) + b"]",
            )
        )
        return SharedLine(caller, resources, forwarding, _dumps(subject), middle)

    @staticmethod
    def _line(limits: RecordLimits, parts: tuple[bytes, ...]) -> bytes | None:
        line = b"".join(parts)
        return line if len(line) <= limits.max_record_bytes else None

    def _head(self, shared: SharedLine, request_id: str, stage: bytes) -> tuple[bytes, ...]:
        # The id and the time are this module's own ASCII (cloudevents.new_id, utc_now): quoted, not escaped.
        return (_HEAD, cloudevents.new_id().encode(), _TYPE, self._source, _TIME, cloudevents.utc_now().encode(), _SUBJECT, shared.subject, _DATA, _dumps(request_id), stage, shared.middle)

    def intent(self, limits: RecordLimits, shared: SharedLine, request_id: str, upstream: bytes, request: dict[str, Any] | None) -> bytes | None:
        """The intent's line; None when it is over `audit.record.max.bytes`. `upstream`: its part, encoded (`upstream`);
        `request`: its parameters, within the limits."""
        head = self._head(shared, request_id, _INTENT)
        if request is None:
            return self._line(limits, (*head, _INTENT_TAIL, upstream, _END))
        return self._line(limits, (*head, _INTENT_TAIL, upstream, _REQUEST, _dumps(request), _REQUEST_END))

    def outcome(
        self, limits: RecordLimits, shared: SharedLine, request_id: str, result: bytes, timings: dict[str, float], upstream: bytes
    ) -> bytes | None:
        """The outcome's line, its result's rows within the limits; None when it is over `audit.record.max.bytes`.
        `result` and `upstream`: their parts, encoded (`result`, `upstream`)."""
        head = self._head(shared, request_id, _OUTCOME)
        return self._line(limits, (*head, _OUTCOME_RESULT, result, _TIMINGS, _dumps(timings), _UPSTREAM, upstream, _END))

    def result(self, key: tuple[int, int] | None, result: Callable[[], dict[str, Any]]) -> bytes:
        """An outcome's `result()`, encoded. `key`: the envelope's and the answer's codes of a result without rows, the same
        for most answers, so built and encoded once (a few such pairs in all; past `_CACHED_PARTS`, each time)."""
        return self._cached(self._results, key, result)

    def upstream(self, key: tuple[str, int | None, int, int | None] | None, upstream: Callable[[], dict[str, Any]]) -> bytes:
        """A record's `upstream()`, encoded. `key`: its address, node id, number of attempts and the one controller it
        went to (None when none yet), for an envelope sent once or not yet, as nearly all are: encoded once per controller."""
        return self._cached(self._upstreams, key, upstream)

    @staticmethod
    def _cached(parts: dict[Any, bytes], key: Any, build: Callable[[], dict[str, Any]]) -> bytes:
        if key is None:
            return _dumps(build())
        part = parts.get(key)
        if part is None:
            part = _dumps(build())
            if len(parts) < _CACHED_PARTS:
                parts[key] = part
        return part


_BY_NODE: dict[int, RecordLines] = {}


def record_lines(node_id: int) -> RecordLines:
    """The parts of the records of the proxy `node_id` (one per process, as a rule)."""
    lines = _BY_NODE.get(node_id)
    if lines is None:
        lines = _BY_NODE[node_id] = RecordLines(node_id)
    return lines


__all__ = ["RecordLines", "SharedLine", "record_lines"]
