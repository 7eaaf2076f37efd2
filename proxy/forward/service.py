"""The proxy's request path: one task per client connection, its login, and each request routed.

Requests of one connection are handled one at a time, like a Kafka broker
(which mutes a channel while its request is in flight), so responses keep
the order of requests. Each route handler returns what to answer (`Answer`), and one
respond step (`ProxyService._respond`) audits, counts and sends it, in that order. The routes
themselves live beside it: forwarding in proxy/forward/forwarding.py, what the proxy answers itself
in proxy/forward/local_routes.py, refusals in proxy/forward/refusing.py.
"""

import logging
from contextlib import aclosing

import trio
from kio.schema.errors import ErrorCode

import apiversions
from apiversions import VersionRange
from envelope.apis import FORWARDABLE, ApiKey
from envelope.codec import decode_body
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.served import pinned_ranges
from proxy.audit.connection_events import AUTHENTICATED, CONNECTED, DISCONNECTED, REAUTHENTICATED, AuditedRefusals
from proxy.audit.pipeline import AuditLog
from proxy.audit.request_records import Forwarding, Local, Refused, RequestAudit
from proxy.forward.edge_authz import EdgeAuthorizer
from proxy.forward.forwarding import Forwarder, decode_readable
from proxy.forward.local_routes import LocalRoutes
from proxy.forward.offload import CpuOffload
from proxy.forward.read_routes import READ_ROUTES
from proxy.forward.reads import ReadPath, ReadUnavailable
from proxy.forward.refusing import connection_refusal_cause, refusal, undecodable
from proxy.forward.routing import SASL_APIS, Answer, CloseConnection, Route, route
from proxy.forward.session import Session
from proxy.forward.settings import ServiceSettings
from proxy.forward.token_mirror import TokenMirror
from proxy.net.connection import KafkaConnection
from proxy.net.login import SESSION_EXPIRED, ApiVersionsRequest, Login, LoginFailed, SessionLogin, SessionStep, refused_connection
from proxy.net.refusals import (
    CAUSE_CLIENT,
    CAUSE_ERROR,
    CAUSE_IDLE,
    CAUSE_PROTOCOL_ERROR,
    CAUSE_SESSION_EXPIRED,
    CAUSE_SHUTDOWN,
    CAUSE_VERSIONS_CHANGED,
    RefusedConnection,
)
from proxy.net.settings import ListenerConfig
from proxy.ops.metrics import ProxyMetrics
from proxy.upstream.pool import ControllerPool, UpstreamEvent

log = logging.getLogger(__name__)

_DISCONNECT_AUDIT_TIMEOUT = 10.0
#: Listeners whose connections have no SASL login: the first request is held to connections.preauth.idle.ms.
WITHOUT_SASL = frozenset({"PLAINTEXT", "SSL"})


def own_ranges() -> dict[int, VersionRange]:
    """What the proxy itself can serve (before intersecting with the controller): envelope/served.py's pinned ranges."""
    return pinned_ranges()


class ProxyService:
    def __init__(
        self,
        settings: ServiceSettings,
        upstream: ControllerPool,
        audit: AuditLog,
        *,
        read_upstream: ControllerPool | None = None,
        metrics: ProxyMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics if metrics is not None else ProxyMetrics()
        self.upstream = upstream
        self.audit = audit
        # Connections refused as a whole (IP filter, limits, privileged principals): counted and audited.
        self.refusals = AuditedRefusals(audit, settings.node_id)
        self.own = own_ranges()
        self._advertised: dict[int, VersionRange] | None = None
        self._advertised_for: dict[int, VersionRange] | None = None
        self.offload = CpuOffload()
        self.edge = EdgeAuthorizer(settings.edge, upstream)
        self.edge.offload = self.offload
        self.sessions: set[Session] = set()
        self.draining = False
        self.drained = trio.Event()
        # What clients were told last; None until the controller's ranges are first known (KIP-590: only a real
        # change of the intersection closes clients, not the first connection).
        self._advertised_before: dict[int, VersionRange] | None = None
        self.metrics.upstream_connected.set_function(lambda: 1.0 if upstream.connected else 0.0)
        self.metrics.upstream_controller_id.set_function(lambda: float(upstream.active_id))
        self.metrics.forwarding_queue.set_function(lambda: float(upstream.queue_length))
        self.metrics.upstream_requests_backing_off.set_function(lambda: float(upstream.backing_off))
        self.reads = ReadPath(
            read_upstream or upstream, self.edge, node_id=settings.node_id, identity=upstream.identity, offload=self.offload
        )
        self.local = LocalRoutes(self.reads, settings.edge.policy)
        self.tokens = TokenMirror(self.reads, settings.edge.token_refresh_seconds)
        self.forwarder = Forwarder(upstream, self.edge, self.metrics, self.offload, self.tokens, forwarding_principal=settings.forwarding_principal)
        self._forwarding = Forwarding(settings.forwarding_principal, upstream.settings.address)
        # An OAUTHBEARER login learns the proxy's principal (its token's subject) when it first logs in.
        self._forwarding_known = upstream.settings.principal is not None

    def advertised(self) -> dict[int, VersionRange]:
        """The intersection, computed again only when the controller's ranges change (every request routes on it)."""
        ranges = self.upstream.controller_ranges
        if ranges is not self._advertised_for or self._advertised is None:
            self._advertised = apiversions.intersect(self.own, ranges, FORWARDABLE)
            self._advertised_for = ranges
        return self._advertised

    async def on_refused(self, event: RefusedConnection) -> None:
        """A connection refused as a whole: audited and counted by cause (bounded label values)."""
        await self.refusals(event)
        self.metrics.connections_refused.labels(event.listener, connection_refusal_cause(event.reason)).inc()

    async def follow_upstream(self, events: trio.MemoryReceiveChannel[UpstreamEvent]) -> None:
        """Count the controller connection's events, and close clients when its versions change."""
        async for event in events:
            if event is UpstreamEvent.APIVERSIONS:
                self.metrics.upstream_apiversions_refreshes.inc()
                if self._advertised_before is None and self.upstream.controller_ranges is not None:
                    self._advertised_before = self.advertised()
            elif event is UpstreamEvent.RECONNECT:
                self.metrics.upstream_reconnects.inc()
            elif event is UpstreamEvent.CONNECTED:
                self.metrics.upstream_connection_attempts.labels("connected").inc()
            elif event is UpstreamEvent.CONNECT_FAILED:
                self.metrics.upstream_connection_attempts.labels("failed").inc()
            elif event is UpstreamEvent.RETRY:
                self.metrics.upstream_request_retries.inc()
            elif event is UpstreamEvent.REAUTHENTICATED:
                self.metrics.upstream_reauthentications.inc()
            elif event is UpstreamEvent.VERSIONS_CHANGED:
                self._versions_changed()

    def drain(self) -> None:
        """Shutdown: every session closes after its request in flight (whose audit record completes)."""
        self.draining = True
        for session in list(self.sessions):
            session.close_when_idle()
        self._check_drained()

    async def wait_drained(self) -> None:
        await self.drained.wait()

    def _check_drained(self) -> None:
        if self.draining and not self.sessions:
            self.drained.set()

    def on_connection_error(self, listener: str, cause: str) -> None:
        self.metrics.connections_refused.labels(listener, cause).inc()

    def _versions_changed(self) -> None:
        """KIP-590: a controller with other versions means clients must ask ApiVersions again, so close them."""
        before, after = self._advertised_before, self.advertised()
        self._advertised_before = after
        if before is None or not apiversions.must_reconnect_clients(before, after):
            return
        log.warning("the controller's API versions changed: closing %d client connections so they ask again", len(self.sessions))
        for session in list(self.sessions):
            session.close_when_idle(CAUSE_VERSIONS_CHANGED)

    # -- one connection ---------------------------------------------------------------------

    async def handle_connection(self, conn: KafkaConnection, listener: ListenerConfig) -> None:
        self.metrics.connections_accepted.labels(listener.name).inc()
        active = self.metrics.connections_active.labels(listener.name)
        active.inc()
        session = Session(conn, listener)
        cause: str | None = None
        try:
            await self.audit.write(session.event(self.settings.node_id, CONNECTED))
            await self._session(session)
        except trio.Cancelled:
            cause = CAUSE_SHUTDOWN
            raise
        except ProtocolError as exc:
            cause = CAUSE_PROTOCOL_ERROR
            if not session.refusal_audited:
                # A bad frame size, header or SASL frame: Kafka closes the connection; we say why first.
                with trio.move_on_after(_DISCONNECT_AUDIT_TIMEOUT):
                    await self.on_refused(session.protocol_refusal(str(exc)))
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
                await self.audit.write(session.event(self.settings.node_id, DISCONNECTED, cause=cause))

    async def _run_login(self, session: Session, login: Login, *, reauthentication: bool = False) -> None:
        """Run a login's (or a re-authentication's) exchange: answer its ApiVersions, audit its failure or refusal."""
        conn, listener = session.conn, session.listener
        counted = self.metrics.reauthentications if reauthentication else self.metrics.authentications
        async with aclosing(login.events()) as events:
            async for event in events:
                if isinstance(event, ApiVersionsRequest):
                    audit = self._request_audit(session, event.header)
                    answer = await self._api_versions(session, event.header, event.frame, audit)
                    await self._respond(session, audit, answer)
                    # An answer with an error (INVALID_REQUEST, UNSUPPORTED_VERSION) lets the client ask again, as in Kafka.
                    login.api_versions_answered(isinstance(answer.outcome, Local) and event.header.api_version in self.advertised()[ApiKey.API_VERSIONS])
                elif isinstance(event, LoginFailed):
                    if event.failure.error_code == ErrorCode.sasl_authentication_failed:
                        counted.labels(listener.name, event.failure.mechanism, "failure").inc()
                        self.metrics.connections_refused.labels(listener.name, "auth").inc()
                    await self.audit.write(session.login_failed_event(self.settings.node_id, event.failure))
                else:
                    await self.on_refused(refused_connection(conn, listener, event))

    async def _login(self, session: Session) -> bool:
        conn, listener = session.conn, session.listener
        login = Login(conn, listener, self.settings.transport)
        await self.tokens.current()  # a token changed through any process of the port counts for this login (one stat)
        await self._run_login(session, login)
        if login.result is None:
            session.close_cause = login.cause
            return False
        session.logged_in(login.result.principal, login.result.mechanism, login.result.authentication_id)
        session.authenticated = True
        session.expiry.logged_in(login.result.session_lifetime_ms, trio.current_time())
        if session.mechanism is not None:
            self.metrics.authentications.labels(listener.name, session.mechanism, "success").inc()
            proved = f", as {session.authentication_id}" if session.authentication_id is not None else ""
            log.info("connection %s authenticated as %s (%s%s)", conn.connection_id, session.principal, session.mechanism, proved)
            await self.audit.write(session.event(self.settings.node_id, AUTHENTICATED))
        return True

    async def _session(self, session: Session) -> None:
        conn, listener = session.conn, session.listener
        log.info("connection %s accepted from %s on %s", conn.connection_id, conn.peer, listener.name)
        if not await self._login(session):
            return
        self.sessions.add(session)
        if self.draining:
            session.close_when_idle(CAUSE_SHUTDOWN)  # logged in while the proxy drains: answer nothing more
        try:
            with conn.serving():
                while not session.closing:
                    # Without a SASL login (PLAINTEXT, SSL: a TLS handshake needs no Kafka client, and with client auth
                    # none or requested proves nothing), the first request is all that shows a Kafka client, so it must
                    # come as soon as a login's would (connections.preauth.idle.ms); after a SASL login, only
                    # connections.max.idle.ms applies, as in Kafka.
                    first = not session.requests and session.listener.security_protocol in WITHOUT_SASL
                    timeout = min(conn.idle_timeout, self.settings.transport.preauth_idle_timeout) if first else conn.idle_timeout
                    frame = await conn.receive_frame(timeout)
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
            self._check_drained()

    # -- one request ------------------------------------------------------------------------

    def _request_audit(self, session: Session, header: RequestHeaderInfo, *, forwarded: bool = False) -> RequestAudit:
        return RequestAudit(self.audit, self.settings.node_id, session.caller, header, forwarding=self._forwarding_side() if forwarded else None)

    def _forwarding_side(self) -> Forwarding:
        """The proxy's side of a forwarded request's records, named by its principal on the controller."""
        if not self._forwarding_known and (principal := self.upstream.settings.principal) is not None:
            self._forwarding = Forwarding(principal, self.upstream.settings.address)
            self.forwarder.forwarding_principal = principal
            self._forwarding_known = True
        return self._forwarding

    async def _reauthenticate(self, session: Session, handshake: bytes) -> None:
        """KIP-368: the session's client logs in again on its connection, with the same mechanism and principal."""
        conn, listener, mechanism = session.conn, session.listener, session.mechanism
        assert mechanism is not None  # only SASL sessions expire
        login = Login.reauthenticate(conn, listener, self.settings.transport, SessionLogin(mechanism, session.principal), handshake)
        await self.tokens.current()
        await self._run_login(session, login, reauthentication=True)
        if login.result is None:
            raise CloseConnection("re-authentication failed", login.cause or CAUSE_PROTOCOL_ERROR)
        session.logged_in(login.result.principal, mechanism, session.authentication_id)
        session.expiry.logged_in(login.result.session_lifetime_ms, trio.current_time())
        self.metrics.reauthentications.labels(listener.name, mechanism, "success").inc()
        log.info("connection %s re-authenticated as %s (%s)", conn.connection_id, session.principal, mechanism)
        await self.audit.write(session.event(self.settings.node_id, REAUTHENTICATED))

    async def handle_request(self, session: Session, frame: bytes) -> None:
        header = peek_request_header(frame)
        if session.expiry.expires_at is not None:  # only sessions with a lifetime (KIP-368) pay for this
            step = session.expiry.step(header.api_key, trio.current_time())
            if step is SessionStep.REAUTHENTICATE:
                session.requests -= 1  # a re-authentication is not a request (the `disconnected` record's count)
                await self._reauthenticate(session, frame)
                return
            if step is SessionStep.EXPIRED:
                # Kafka's SocketServer closes the connection unanswered; the record says why.
                self.metrics.connections_expired.labels(session.listener.name).inc()
                then = CloseConnection(SESSION_EXPIRED, CAUSE_SESSION_EXPIRED)
                await self._respond(session, self._request_audit(session, header), refusal(session, header, SESSION_EXPIRED, then=then))
                return
        routed = route(header, self.advertised(), READ_ROUTES)
        audit = self._request_audit(session, header, forwarded=routed.route is Route.FORWARD)
        try:
            if routed.route is Route.API_VERSIONS:
                answer = await self._api_versions(session, header, frame, audit)
            elif routed.route is Route.REFUSE:
                assert routed.reason is not None
                answer = refusal(session, header, routed.reason, then=CloseConnection(routed.reason))
            elif routed.route is Route.LOCAL and header.api_key in SASL_APIS:
                answer = self.local.sasl_after_login(session, header, frame)
            elif routed.route is Route.LOCAL:
                answer = await self.local.describe_cluster(session, header, frame)
            elif routed.route is Route.READ:
                answer = await self._read(session, header, frame)
            else:
                answer = await self.forwarder.answer(session, header, frame, audit)
        except ReadUnavailable as exc:
            # No cluster id known yet: no Kafka broker answers without one (and librdkafka crashes on a null id).
            answer = refusal(session, header, str(exc), then=CloseConnection(str(exc)))
        await self._respond(session, audit, answer)

    async def _respond(self, session: Session, audit: RequestAudit, answer: Answer) -> None:
        """The one respond step of every route: the outcome record is committed before the client can read the
        answer, the metrics count it once, then the answer is sent and what follows it (a close) raised."""
        outcome = answer.outcome
        if isinstance(outcome, Refused) and answer.then is not None:
            session.refusal_audited = True  # the `refused` record says why the connection closes
        await audit.record(outcome)
        self.metrics.count_request(
            audit.caller.listener, audit.api, outcome.metric, forwarded=outcome.forwarded, elapsed=audit.elapsed_ms() / 1000, queued=audit.queued
        )
        if answer.frame is not None:
            await session.conn.send(answer.frame)
        if answer.then is not None:
            raise answer.then

    async def _api_versions(self, session: Session, header: RequestHeaderInfo, frame: bytes, audit: RequestAudit) -> Answer:
        """Answer ApiVersions (INVALID_REQUEST for a software name Kafka refuses, the supported range for an unsupported
        version: the client may ask again)."""
        advertised = self.advertised()
        if header.api_version >= 3 and header.api_version in advertised[ApiKey.API_VERSIONS]:
            try:
                body = decode_body(ApiKey.API_VERSIONS, header.api_version, frame, header.header_size)
            except ProtocolError as exc:
                return undecodable(session, header, exc)
            name, version = str(body.client_software_name), str(body.client_software_version)
            if not apiversions.valid_software(name, version):
                # Kafka's answer; nothing the client chose is kept for later records, and the connection goes on.
                error = apiversions.build_error_response(header.api_version, header.correlation_id, ErrorCode.invalid_request)
                return refusal(session, header, "client software name or version does not match Kafka's pattern", then=None, frame=error)
            session.software(name, version)
            audit.caller = session.caller
        return Answer(Local(), apiversions.build_response(header.api_version, header.correlation_id, advertised))

    async def _read(self, session: Session, header: RequestHeaderInfo, frame: bytes) -> Answer:
        try:
            body = await self.offload.frame(len(frame), decode_readable, header.api_key, header.api_version, frame, header.header_size)
        except ProtocolError as exc:
            return undecodable(session, header, exc)
        return await self.local.read(session, header, body)
