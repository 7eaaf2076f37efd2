"""A client's session on the proxy: local answers, forwarding, refusals, audit.

Requests of one connection are handled one at a time, like a Kafka broker
(which mutes a channel while its request is in flight), so responses keep
the order of requests.
"""

import ipaddress
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import trio
from kio.schema.errors import ErrorCode

import apiversions
from apiversions import VersionRange
from authz import RequestContext
from authz.actions import ResourceAccess, resources_of, subject_of
from envelope.apis import FORWARDABLE, ApiKey, api_name
from envelope.codec import decode_body, decode_response_body, encode_response
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import ANONYMOUS, Principal
from envelope.responses import SERVED_ADMIN_APIS, ResourceError, error_name, error_response, response_errors
from envelope.wrap import unwrap, wrap
from proxy.audit.bounds import count_omitted, first_entries
from proxy.audit.connection_events import (
    AUTHENTICATED,
    AUTHENTICATION_FAILED,
    CONNECTED,
    DISCONNECTED,
    AuditedRefusals,
    authentication_failed_result,
    connection_record,
)
from proxy.audit.pipeline import AuditLog, AuditUnavailable, make_record
from proxy.forward.edge_authz import EdgeAuthorizer
from proxy.forward.local import describe_cluster_response, metadata_response
from proxy.forward.offload import CpuOffload
from proxy.forward.reads import READ_APIS, ReadPath, ReadResult, denial_code
from proxy.forward.settings import ServiceSettings
from proxy.forward.upstream import Upstream, UpstreamUnavailable
from proxy.net.connection import KafkaConnection
from proxy.net.refusals import (
    CAUSE_CLIENT,
    CAUSE_ERROR,
    CAUSE_IDLE,
    CAUSE_PROTOCOL_ERROR,
    CAUSE_SHUTDOWN,
    CAUSE_VERSIONS_CHANGED,
    IP_FILTER,
    PRIVILEGED_PRINCIPAL,
    PROTOCOL_ERROR,
    SSL_PRINCIPAL_MAPPING,
    RefusedConnection,
)
from proxy.net.sasl.server import AuthReport, LoginFailure, authenticate
from proxy.net.settings import ListenerConfig
from proxy.ops.metrics import ProxyMetrics

log = logging.getLogger(__name__)

NOT_CONTROLLER_RETRIES = 3
# audit.on.failure=reject: the answer to a request whose intent record could not be written. Kafka's
# "disk error when accessing a log" is what the proxy met; clients and operators know it as a broker-side storage fault.
_DISCONNECT_AUDIT_TIMEOUT = 10.0


def own_ranges() -> dict[int, VersionRange]:
    """What the proxy itself can serve (before intersecting with the controller)."""
    ranges: dict[int, VersionRange] = {
        ApiKey.API_VERSIONS: VersionRange(0, 4),
        ApiKey.METADATA: apiversions.kio_range(ApiKey.METADATA),
        ApiKey.DESCRIBE_CLUSTER: apiversions.kio_range(ApiKey.DESCRIBE_CLUSTER),
        **{api_key: apiversions.kio_range(api_key) for api_key in READ_APIS},
        ApiKey.SASL_HANDSHAKE: VersionRange(0, 1),
        ApiKey.SASL_AUTHENTICATE: VersionRange(0, 2),
    }
    for api_key in SERVED_ADMIN_APIS:
        ranges[api_key] = apiversions.kio_range(api_key)
    return dict(sorted(ranges.items()))


@dataclass(eq=False)  # one per connection, kept in a set
class Session:
    conn: KafkaConnection
    listener: ListenerConfig
    principal: Principal = ANONYMOUS
    mechanism: str | None = None
    software_name: str | None = None
    software_version: str | None = None
    client_address: ipaddress.IPv4Address | ipaddress.IPv6Address = field(init=False)
    closing: bool = False
    idle: trio.CancelScope | None = None
    close_cause: str | None = None
    """Why the proxy closes the connection (a `disconnected` cause); None while the client decides."""
    authenticated: bool = False
    refusal_audited: bool = False
    """A `refused` record already says why this connection closes."""
    requests: int = 0
    opened: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.client_address = ipaddress.ip_address(self.conn.peer.host)

    def close_when_idle(self, cause: str = CAUSE_SHUTDOWN) -> None:
        """Close now if waiting for a request, else right after the one in flight (its audit completes)."""
        self.closing = True
        self.close_cause = self.close_cause or cause
        if self.idle is not None:
            self.idle.cancel()

    def context(self, client_id: str | None) -> RequestContext:
        """What the edge authorizer knows of this client."""
        return RequestContext(
            principal=self.principal,
            client_address=self.client_address,
            listener=self.listener.name,
            security_protocol=self.listener.security_protocol,
            sasl_mechanism=self.mechanism,
            client_id=client_id,
            client_software_name=self.software_name,
            client_software_version=self.software_version,
        )


def _decode_with_resources(api_key: int, api_version: int, frame: bytes, offset: int) -> tuple[Any, list[ResourceAccess]]:
    body = decode_body(api_key, api_version, frame, offset, allow_trailing=True)
    return body, resources_of(api_key, body)


def _response_errors(api_key: int, api_version: int, embedded: bytes) -> tuple[int, list[ResourceError]]:
    _, response = decode_response_body(api_key, api_version, embedded)
    return response_errors(api_key, response)


def _error_row(resource: str, code: int, message: str | None) -> dict[str, Any]:
    """One entry of an audit record's `result.errors`."""
    return {"resource": resource, "errorCode": code, "errorName": error_name(code), "message": message}


# RefusedConnection.reason -> the metric's cause; every other reason is a connection limit's key.
_REFUSAL_CAUSES = {IP_FILTER: "ip_filter", PRIVILEGED_PRINCIPAL: "privileged_principal", SSL_PRINCIPAL_MAPPING: "tls", PROTOCOL_ERROR: "protocol_error"}


class CloseConnection(Exception):
    """Kafka's answer to this request is to close the connection."""

    def __init__(self, message: str, cause: str = CAUSE_PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.cause = cause


class ProxyService:
    def __init__(
        self,
        settings: ServiceSettings,
        upstream: Upstream,
        audit: AuditLog,
        *,
        read_upstream: Upstream | None = None,
        metrics: ProxyMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics if metrics is not None else ProxyMetrics()
        self.upstream = upstream
        self.audit = audit
        # Connections refused as a whole (IP filter, limits, privileged principals): counted and audited.
        self.refusals = AuditedRefusals(audit, settings.node_id)
        self.own = own_ranges()
        self.edge = EdgeAuthorizer(settings.edge, upstream)
        self.sessions: set[Session] = set()
        self.draining = False
        self._advertised_before = self.advertised()
        upstream.on_versions_changed = self._versions_changed
        upstream.on_event = self._upstream_event
        self.metrics.upstream_connected.set_function(lambda: 1.0 if upstream.connected else 0.0)
        self.offload = CpuOffload()
        self.edge.offload = self.offload
        self.reads = ReadPath(read_upstream or upstream, self.edge, node_id=settings.node_id, cluster_id=settings.cluster_id, offload=self.offload)

    def advertised(self) -> dict[int, VersionRange]:
        return apiversions.intersect(self.own, self.upstream.controller_ranges, FORWARDABLE)

    async def on_refused(self, event: RefusedConnection) -> None:
        """A connection refused as a whole: audited and counted by cause (bounded label values)."""
        await self.refusals(event)
        self.metrics.connections_refused.labels(event.listener, _REFUSAL_CAUSES.get(event.reason, "limit")).inc()

    def _upstream_event(self, event: str) -> None:
        if event == "apiversions":
            self.metrics.upstream_apiversions_refreshes.inc()
        elif event == "reconnect":
            self.metrics.upstream_reconnects.inc()

    def drain(self) -> None:
        """Shutdown: every session closes after its request in flight (whose audit record completes)."""
        self.draining = True
        for session in list(self.sessions):
            session.close_when_idle()

    async def wait_drained(self) -> None:
        while self.sessions:
            await trio.sleep(0.05)

    def on_connection_error(self, listener: str, cause: str) -> None:
        self.metrics.connections_refused.labels(listener, cause).inc()

    def _versions_changed(self) -> None:
        """KIP-590: a controller with other versions means clients must ask ApiVersions again, so close them."""
        before, after = self._advertised_before, self.advertised()
        self._advertised_before = after
        if not apiversions.must_reconnect_clients(before, after):
            return
        log.warning("the controller's API versions changed: closing %d client connections so they ask again", len(self.sessions))
        for session in list(self.sessions):
            session.close_when_idle(CAUSE_VERSIONS_CHANGED)

    async def handle_connection(self, conn: KafkaConnection, listener: ListenerConfig) -> None:
        self.metrics.connections_accepted.labels(listener.name).inc()
        active = self.metrics.connections_active.labels(listener.name)
        active.inc()
        session = Session(conn, listener)
        cause: str | None = None
        try:
            await self._audit_connection(session, CONNECTED)
            await self._session(session)
        except trio.Cancelled:
            cause = CAUSE_SHUTDOWN
            raise
        except ProtocolError as exc:
            cause = CAUSE_PROTOCOL_ERROR
            if not session.refusal_audited:
                # A bad frame size, header or SASL frame: Kafka closes the connection; we say why first.
                with trio.move_on_after(_DISCONNECT_AUDIT_TIMEOUT):
                    await self.on_refused(self._protocol_refusal(session, str(exc)))
            raise
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            cause = CAUSE_CLIENT  # the peer reset the connection while we wrote to it
            raise
        except BaseException:
            cause = CAUSE_ERROR
            raise
        finally:
            active.dec()
            self.metrics.connections_closed.labels(listener.name).inc()
            log.info("connection %s from %s:%s on %s closed", conn.connection_id, conn.peer.host, conn.peer.port, listener.name)
            cause = cause or session.close_cause or (CAUSE_IDLE if conn.idle_expired else CAUSE_CLIENT)
            # Shielded and bounded: also a connection cancelled at shutdown gets its disconnect recorded.
            with trio.CancelScope(shield=True), trio.move_on_after(_DISCONNECT_AUDIT_TIMEOUT):
                await self._audit_connection(session, DISCONNECTED, cause=cause)

    def _protocol_refusal(self, session: Session, detail: str) -> RefusedConnection:
        conn, listener = session.conn, session.listener
        return RefusedConnection(
            listener=listener.name,
            security_protocol=listener.security_protocol,
            host=conn.peer.host,
            port=conn.peer.port,
            reason=PROTOCOL_ERROR,
            detail=detail,
            connection_id=conn.connection_id,
            principal=str(session.principal) if session.authenticated else None,
            mechanism=session.mechanism,
        )

    async def _session(self, session: Session) -> None:
        conn, listener = session.conn, session.listener
        log.info("connection %s accepted from %s:%s on %s", conn.connection_id, conn.peer.host, conn.peer.port, listener.name)

        async def answer_api_versions(header: RequestHeaderInfo, frame: bytes) -> bool:
            return await self._api_versions(session, header, frame)

        def login_failed(mechanism: str) -> None:
            self.metrics.authentications.labels(listener.name, mechanism, "failure").inc()
            self.metrics.connections_refused.labels(listener.name, "auth").inc()

        async def audit_login_failure(failure: LoginFailure) -> None:
            await self._audit_login_failure(session, failure)

        report = AuthReport(on_failure=audit_login_failure)
        authenticated = await authenticate(
            conn, listener, self.settings.transport, answer_api_versions, on_refused=self.on_refused, on_login_failed=login_failed, report=report
        )
        if authenticated is None:
            session.close_cause = report.cause
            return
        session.principal, session.mechanism = authenticated.principal, authenticated.mechanism
        session.authenticated = True
        if authenticated.mechanism is not None:
            self.metrics.authentications.labels(listener.name, authenticated.mechanism, "success").inc()
            log.info("connection %s authenticated as %s (%s)", conn.connection_id, session.principal, session.mechanism)
            await self._audit_connection(session, AUTHENTICATED)
        self.sessions.add(session)
        if self.draining:
            session.close_when_idle(CAUSE_SHUTDOWN)  # logged in while the proxy drains: answer nothing more
        try:
            while not session.closing:
                frame = None
                # The first request must come as soon as a login's would (connections.preauth.idle.ms).
                timeout = conn.idle_timeout if session.requests else min(conn.idle_timeout, self.settings.transport.preauth_idle_timeout)
                with trio.CancelScope() as session.idle:
                    frame = await conn.receive_frame(timeout)
                session.idle = None
                if frame is None:
                    return
                session.requests += 1
                try:
                    await self.handle_request(session, frame)
                except CloseConnection as exc:
                    log.info("connection %s from %s closed: %s", conn.connection_id, conn.peer.host, exc)
                    session.close_cause = session.close_cause or exc.cause
                    return
        finally:
            self.sessions.discard(session)

    async def handle_request(self, session: Session, frame: bytes) -> None:
        header = peek_request_header(frame)
        key = header.api_key
        if key == ApiKey.API_VERSIONS:
            await self._api_versions(session, header, frame)
            return
        if key == ApiKey.ENVELOPE:
            await self._refuse(session, header, "Envelope is not accepted from clients")
            raise CloseConnection("client sent an Envelope")
        advertised = self.advertised().get(key)
        if advertised is None or key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            await self._refuse(session, header, f"API {api_name(key)} is not served by this proxy")
            raise CloseConnection(f"unsupported api key {key}")
        if header.api_version not in advertised:
            await self._refuse(session, header, f"version {header.api_version} of {api_name(key)} is not in {advertised.min}..{advertised.max}")
            raise CloseConnection(f"unsupported version {header.api_version} of api key {key}")
        started = time.perf_counter()
        node_id, cluster_id = self.settings.node_id, self.settings.cluster_id
        if key == ApiKey.DESCRIBE_CLUSTER:
            # Every answer is audited before the client can read it.
            await self._audit_local(session, header, started)
            await session.conn.send(describe_cluster_response(header, node_id=node_id, listener=session.listener, cluster_id=cluster_id))
            return
        if key in READ_APIS:
            try:
                body = await self.offload.frame(len(frame), decode_body, key, header.api_version, frame, header.header_size, allow_trailing=True)
            except ProtocolError as exc:
                await self._refuse(session, header, f"request body cannot be decoded: {exc}")
                raise
            if key == ApiKey.METADATA and body.topics is not None and not body.topics and header.api_version > 0:
                # Only brokers and the controller asked for: the proxy knows those itself.
                await self._audit_local(session, header, started)
                await session.conn.send(metadata_response(header, body, node_id=node_id, listener=session.listener, cluster_id=cluster_id))
                return
            result = await self.reads.answer(session.context(header.client_id), session.listener, header, body)
            await self._audit_read(session, header, started, result)
            await session.conn.send(result.frame)
            return
        await self._forward(session, header, frame)

    async def _api_versions(self, session: Session, header: RequestHeaderInfo, frame: bytes) -> bool:
        """Answer ApiVersions; False when the answer was an error (INVALID_REQUEST for a software name
        Kafka refuses, UNSUPPORTED_VERSION), after which Kafka lets the client ask again before the login."""
        started = time.perf_counter()
        advertised = self.advertised()
        if header.api_version >= 3 and header.api_version in advertised[ApiKey.API_VERSIONS]:
            try:
                body = decode_body(ApiKey.API_VERSIONS, header.api_version, frame, header.header_size)
            except ProtocolError as exc:
                await self._refuse(session, header, f"request body cannot be decoded: {exc}")
                raise
            name, version = str(body.client_software_name), str(body.client_software_version)
            if not apiversions.valid_software(name, version):
                # Kafka's answer; nothing the client chose is kept for later records.
                await self._refuse(session, header, "client software name or version does not match Kafka's pattern")
                session.refusal_audited = False  # answered, and the connection goes on
                await session.conn.send(apiversions.build_error_response(header.api_version, header.correlation_id, ErrorCode.invalid_request))
                return False
            session.software_name, session.software_version = name, version
        answer = apiversions.build_response(header.api_version, header.correlation_id, advertised)
        await self._audit_local(session, header, started)
        await session.conn.send(answer)
        # An unsupported version is answered with the supported range; as in Kafka, the client may ask again.
        return header.api_version in advertised[ApiKey.API_VERSIONS]

    # -- forwarding -----------------------------------------------------------------

    async def _forward(self, session: Session, header: RequestHeaderInfo, frame: bytes) -> None:
        key, version = header.api_key, header.api_version
        try:
            # Kafka ignores bytes after a request body (librdkafka sends one after AlterUserScramCredentials).
            # Unknown tagged fields are skipped for the audit's copy; the forwarded bytes stay untouched.
            body, resources = await self.offload.frame(len(frame), _decode_with_resources, key, version, frame, header.header_size)
        except ProtocolError as exc:
            # Fail closed: a mutation whose resources cannot be named is never forwarded.
            await self._refuse(session, header, f"request body cannot be decoded: {exc}")
            raise
        data = self._data(session, header, "intent", resources, forwarded=True)
        request_id = data["requestId"]
        # The intent is committed (as durable as audit.durability says) before the controller sees the request.
        try:
            await self.audit.write(make_record(self.settings.node_id, subject_of(resources), data), required=True)
        except AuditUnavailable as exc:
            await self._reject_unaudited(session, header, body, exc)
            return
        with self.metrics.forwarding_queue.track_inprogress():
            await self._send_envelope(session, header, frame, body, resources, request_id)

    async def _send_envelope(
        self, session: Session, header: RequestHeaderInfo, frame: bytes, body: Any, resources: list[ResourceAccess], request_id: str
    ) -> None:
        key = header.api_key
        started = time.perf_counter()
        envelope_error: int | None = None
        embedded: bytes | None = None
        for attempt in range(NOT_CONTROLLER_RETRIES + 1):
            try:
                response = await self.upstream.request(
                    lambda cid: wrap(frame, session.principal, session.client_address, correlation_id=cid, client_id="envelope-proxy")
                )
                envelope_error, embedded = unwrap(response)
            except UpstreamUnavailable as exc:
                log.warning("request %s of %s: %s", api_name(key), session.principal, exc)
                await self._answer_error(session, header, body, ErrorCode.request_timed_out, str(exc), resources, request_id, started, None)
                return
            if envelope_error != ErrorCode.not_controller or attempt == NOT_CONTROLLER_RETRIES:
                break
            self.metrics.upstream_not_controller_retries.inc()
            await trio.sleep(0.05 * (attempt + 1))
        if envelope_error == 0 and embedded is not None:
            if key in (ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
                self.edge.invalidate()
            await self._audit_outcome(session, header, resources, request_id, started, envelope_error, embedded)
            await session.conn.send(embedded)
            return
        if envelope_error == ErrorCode.unsupported_version:
            await self._audit_error(
                session,
                header,
                resources,
                request_id,
                started,
                envelope_error,
                ErrorCode.unsupported_version,
                "controller refused the embedded version",
            )
            raise CloseConnection("controller answered the envelope with UNSUPPORTED_VERSION", CAUSE_VERSIONS_CHANGED)
        if envelope_error == ErrorCode.cluster_authorization_failed:
            message = f"the proxy's principal {self.settings.forwarding_principal} lacks CLUSTER_ACTION on the controller"
            log.error(
                "%s: grant it with kafka-acls --add --allow-principal %s --operation ClusterAction --cluster",
                message,
                self.settings.forwarding_principal,
            )
            await self._answer_error(
                session, header, body, ErrorCode.cluster_authorization_failed, message, resources, request_id, started, envelope_error
            )
            return
        code = ErrorCode.not_controller if envelope_error == ErrorCode.not_controller else ErrorCode.unknown_server_error
        await self._answer_error(
            session, header, body, code, f"envelope error {envelope_error}", resources, request_id, started, envelope_error
        )

    async def _answer_error(
        self,
        session: Session,
        header: RequestHeaderInfo,
        body: Any,
        code: int,
        message: str,
        resources: list[ResourceAccess],
        request_id: str,
        started: float,
        envelope_error: int | None,
    ) -> None:
        await self._audit_error(session, header, resources, request_id, started, envelope_error, code, message)
        answer = error_response(header.api_key, header.api_version, body, code, message)
        await session.conn.send(encode_response(answer, correlation_id=header.correlation_id))

    async def _reject_unaudited(self, session: Session, header: RequestHeaderInfo, body: Any, exc: AuditUnavailable) -> None:
        """audit.on.failure=reject and the intent could not be written: answer with an error, forward nothing."""
        message = "the proxy could not write the audit record of this request; it was not forwarded"
        log.error("connection %s (%s): %s %s: %s", session.conn.connection_id, session.principal, api_name(header.api_key), message, exc)
        self._count(session, header, "failed", time.perf_counter())
        answer = error_response(header.api_key, header.api_version, body, ErrorCode.kafka_storage_error, message)
        await session.conn.send(encode_response(answer, correlation_id=header.correlation_id))

    # -- audit ---------------------------------------------------------------------

    def _data(
        self,
        session: Session,
        header: RequestHeaderInfo,
        stage: str,
        resources: list[ResourceAccess],
        *,
        forwarded: bool,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        data: dict[str, Any] = {
            "requestId": request_id or str(uuid.uuid4()),
            "stage": stage,
            "methodName": f"kafka.{api_name(header.api_key)}",
            "apiKey": header.api_key,
            "apiVersion": header.api_version,
            "authenticationInfo": {
                "principal": str(session.principal),
                "mechanism": session.mechanism,
                "listener": session.listener.name,
                "securityProtocol": session.listener.security_protocol,
            },
            "forwardingPrincipal": self.settings.forwarding_principal if forwarded else None,
            "requestMetadata": {
                "clientAddress": str(session.client_address),
                "clientPort": session.conn.peer.port,
                "clientId": header.client_id,
                "clientSoftwareName": session.software_name,
                "clientSoftwareVersion": session.software_version,
                "correlationId": header.correlation_id,
                "connectionId": session.conn.connection_id,
            },
            "resources": [],
            "authorizationInfo": None,
            "result": None,
            "timings": None,
            "upstream": {"address": self.upstream.settings.address, "nodeId": None} if forwarded else None,
            "connection": None,
        }
        data["resources"] = [r.as_audit() for r in first_entries(data, resources, self.audit.limits.max_resources, "resources")]
        return data

    async def _audit_connection(self, session: Session, stage: str, *, cause: str | None = None) -> None:
        """`connected`, `authenticated` or `disconnected` (with its cause, duration and request count)."""
        closing = stage == DISCONNECTED
        principal = str(session.principal) if session.authenticated and stage != CONNECTED else None
        record = connection_record(
            self.settings.node_id,
            stage,
            listener=session.listener.name,
            security_protocol=session.listener.security_protocol,
            host=session.conn.peer.host,
            port=session.conn.peer.port,
            connection_id=session.conn.connection_id,
            principal=principal,
            mechanism=session.mechanism if principal is not None else None,
            cause=cause,
            duration_ms=(time.monotonic() - session.opened) * 1000 if closing else None,
            requests=session.requests if closing else None,
            software=(session.software_name, session.software_version) if stage != CONNECTED else (None, None),
        )
        await self.audit.write(record)

    async def _audit_login_failure(self, session: Session, failure: LoginFailure) -> None:
        record = connection_record(
            self.settings.node_id,
            AUTHENTICATION_FAILED,
            listener=session.listener.name,
            security_protocol=session.listener.security_protocol,
            host=session.conn.peer.host,
            port=session.conn.peer.port,
            connection_id=session.conn.connection_id,
            principal=f"User:{failure.user}" if failure.user is not None else None,
            mechanism=failure.mechanism,
            authorization={"decision": "DENIED", "reason": AUTHENTICATION_FAILED, "detail": failure.message},
            result=authentication_failed_result(failure.error_code),
            software=(session.software_name, session.software_version),
        )
        await self.audit.write(record)

    def _count(self, session: Session, header: RequestHeaderInfo, outcome: str, started: float, *, forwarded: bool = False) -> None:
        api = api_name(header.api_key)
        self.metrics.requests.labels(session.listener.name, api, outcome).inc()
        if forwarded:
            # No queue in front of the upstream yet: all of the time after the intent is upstream time (KIP-938 split).
            elapsed = time.perf_counter() - started
            self.metrics.queue_time.labels(api).observe(0.0)
            self.metrics.upstream_time.labels(api).observe(elapsed)
            self.metrics.total_time.labels(api).observe(elapsed)

    def _timings(self, started: float, upstream_ms: float = 0.0) -> dict[str, float]:
        total = (time.perf_counter() - started) * 1000
        return {"queueMs": 0.0, "upstreamMs": round(upstream_ms, 3), "totalMs": round(total, 3)}

    async def _audit_local(self, session: Session, header: RequestHeaderInfo, started: float) -> None:
        data = self._data(session, header, "local", [], forwarded=False)
        data["result"] = {"status": "SUCCESS", "envelopeErrorCode": None, "errorCode": 0, "errors": []}
        data["timings"] = self._timings(started)
        await self.audit.write(make_record(self.settings.node_id, None, data))
        self._count(session, header, "local", started)

    async def _audit_read(self, session: Session, header: RequestHeaderInfo, started: float, result: ReadResult) -> None:
        data = self._data(session, header, "read", result.resources, forwarded=False)
        data["authorizationInfo"] = {
            "decision": "DENIED" if result.denied and len(result.denied) == len(result.resources) else "ALLOWED",
            "reason": f"edge authorizer ({self.settings.edge.policy})",
            "denied": [r.as_audit() for r in first_entries(data, result.denied, self.audit.limits.max_resources, "authorizationInfo.denied")],
        }
        failed = result.error_code != 0
        data["result"] = {
            "status": "ERROR" if failed else "FAILURE" if result.denied else "SUCCESS",
            "envelopeErrorCode": None,
            "errorCode": result.error_code,
            "errors": [
                _error_row(r.name, denial_code(r), "denied at the edge")
                for r in first_entries(data, result.denied, self.audit.limits.max_resources, "result.errors")
            ]
            + ([_error_row("upstream", result.error_code, result.error_message)] if failed else []),
        }
        data["timings"] = self._timings(started)
        await self.audit.write(make_record(self.settings.node_id, subject_of(result.resources), data))
        self._count(session, header, "read", started)

    async def _refuse(self, session: Session, header: RequestHeaderInfo, reason: str) -> None:
        log.warning(
            "connection %s from %s (%s): refused %s: %s",
            session.conn.connection_id,
            session.conn.peer.host,
            session.principal,
            api_name(header.api_key),
            reason,
        )
        session.refusal_audited = True
        data = self._data(session, header, "refused", [], forwarded=False)
        data["authorizationInfo"] = {"decision": "DENIED", "reason": reason}
        data["result"] = {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": 42, "errors": []}
        data["timings"] = {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.0}
        await self.audit.write(make_record(self.settings.node_id, None, data))
        self._count(session, header, "refused", time.perf_counter())

    async def _audit_outcome(
        self,
        session: Session,
        header: RequestHeaderInfo,
        resources: list[ResourceAccess],
        request_id: str,
        started: float,
        envelope_error: int,
        embedded: bytes,
    ) -> None:
        try:
            top, results = await self.offload.frame(len(embedded), _response_errors, header.api_key, header.api_version, embedded)
        except ProtocolError as exc:
            log.warning("cannot decode the controller's %s answer for the audit: %s", api_name(header.api_key), exc)
            top, results = ErrorCode.unknown_server_error, []
        failed = [r for r in results if r.error_code != 0]
        omitted: dict[str, Any] = {}
        result = {
            "status": "SUCCESS" if top == 0 and not failed else "FAILURE",
            "envelopeErrorCode": envelope_error,
            "errorCode": top,
            "errors": [_error_row(r.resource, r.error_code, r.message) for r in first_entries(omitted, failed, self.audit.limits.max_resources, "result.errors")],
        }
        await self._write_outcome(session, header, resources, request_id, started, result, "forwarded", answered_by_upstream=True, omitted=omitted)

    async def _audit_error(
        self,
        session: Session,
        header: RequestHeaderInfo,
        resources: list[ResourceAccess],
        request_id: str,
        started: float,
        envelope_error: int | None,
        code: int,
        message: str,
    ) -> None:
        omitted: dict[str, Any] = {}
        result = {
            "status": "ERROR",
            "envelopeErrorCode": envelope_error,
            "errorCode": code,
            "errors": [_error_row(r.name, code, message) for r in first_entries(omitted, resources, self.audit.limits.max_resources, "result.errors")],
        }
        await self._write_outcome(session, header, resources, request_id, started, result, "failed", answered_by_upstream=False, omitted=omitted)

    async def _write_outcome(
        self,
        session: Session,
        header: RequestHeaderInfo,
        resources: list[ResourceAccess],
        request_id: str,
        started: float,
        result: dict[str, Any],
        outcome: str,
        *,
        answered_by_upstream: bool,
        omitted: dict[str, Any],
    ) -> None:
        """The outcome record that pairs with the intent (same requestId), and its metrics.
        `omitted` holds the `truncated` counts of `result` rows left out (audit_bounds.first_entries)."""
        data = self._data(session, header, "outcome", resources, forwarded=True, request_id=request_id)
        data["result"] = result
        for where, count in (omitted.get("truncated") or {}).get("omitted", {}).items():
            count_omitted(data, where, count)
        # The proxy does not queue yet, so the whole wait after the intent is upstream time.
        upstream_ms = (time.perf_counter() - started) * 1000 if answered_by_upstream else 0.0
        data["timings"] = self._timings(started, upstream_ms=upstream_ms)
        await self.audit.write(make_record(self.settings.node_id, subject_of(resources), data))
        self._count(session, header, outcome, started, forwarded=True)
