"""The embedded controller's listener: Kafka's Envelope semantics over the shared stack."""

import ipaddress
import logging
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass, field

import trio
from kio.schema.errors import ErrorCode

import apiversions
from apiversions import VersionRange
from authz import AclStore, Action, Authorizer, Decision, Operation, RequestContext
from authz.admin_apis import error_response
from controller.authorize import cluster_allowed
from controller.config import ControllerConfig
from controller.handlers import Handlers
from controller.identity import cluster_id_for
from controller.image import MetadataImage
from controller.leadership import Leadership
from controller.persistence import MetadataStore
from controller.quorum import INITIAL_FEATURES, features_of, format_image
from envelope.apis import ApiKey, api_name, is_forwardable
from envelope.build import build_entity
from envelope.codec import decode_body, encode_response, response_schema
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import ANONYMOUS, Principal
from envelope.served import pinned_ranges
from envelope.wrap import EnvelopeError, unwrap_request, wrap_response
from proxy.net.addresses import ControllerAddress
from proxy.net.connection import KafkaConnection
from proxy.net.limits import ConnectionTracker
from proxy.net.listener import serve_listener
from proxy.net.login import ApiVersionsRequest, Login, Refused, SessionExpiry, SessionLogin, SessionStep, refused_connection
from proxy.net.refusals import RefusalCounter
from proxy.net.sasl.machine import illegal_sasl_state
from proxy.net.settings import ListenerConfig

log = logging.getLogger(__name__)


class AllowEverything:
    """Kafka without `authorizer.class.name`: every action is allowed."""

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        return [Decision.ALLOWED for _ in actions]


@dataclass
class ControllerConnection:
    conn: KafkaConnection
    listener: ListenerConfig
    principal: Principal = ANONYMOUS
    mechanism: str | None = None
    address: ipaddress.IPv4Address | ipaddress.IPv6Address = field(init=False)
    expiry: SessionExpiry = field(default_factory=SessionExpiry)

    def __post_init__(self) -> None:
        self.address = self.conn.peer.address


class EmbeddedController:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.refusals = RefusalCounter()
        self.image = MetadataImage()
        self.store = MetadataStore(config.metadata_dir) if config.metadata_dir else None
        stored_acls = self.store.load(self.image) if self.store else []
        self.authorizer: Authorizer = config.make_authorizer() or AllowEverything()
        if stored_acls and isinstance(self.authorizer, AclStore):
            self.authorizer.create_acls(stored_acls)
        self.leadership = Leadership(
            config.node_id,
            config.voters,
            config.active_id,
            listener_name=config.listeners[0].name if config.listeners else "CONTROLLER",
            cluster_id=cluster_id_for(config.node_id, config.cluster_id, config.metadata_dir, voters=len(config.voters)),
        )
        self.handlers = Handlers(
            self.image,
            self.authorizer,
            leadership=self.leadership,
            default_partitions=config.default_partitions,
            default_replication_factor=config.default_replication_factor,
            broker_count=config.broker_count,
            static_config=config.properties,
            tokens=config.tokens,
        )
        if self.store is None or not self.store.path.exists():
            format_image(self.image, config.properties, static_voters=len(config.voters) > 0)
        elif not self.image.finalized_features:
            self.image.finalized_features.update(INITIAL_FEATURES)  # an image stored before features were kept
        # Durable before the answer leaves: `execute` counts the forwardable requests it applied (each
        # may have changed the image); `_until_stored` writes the image, off the event loop, until the
        # stored image holds all of them. One write at a time, under `_store_lock`.
        self._applied = 0
        self._stored = 0  # how many of the applied requests the stored image holds
        self._store_lock = trio.Lock()
        # The versions envelope/served.py pins for what the proxy serves, which the controller serves too.
        self.ranges: dict[int, VersionRange] = {
            **apiversions.CONNECTION_RANGES,
            ApiKey.ENVELOPE: apiversions.ENVELOPE_RANGE,
            **pinned_ranges(frozenset(self.handlers.by_key)),
        }

    async def run(self, *, task_status: trio.TaskStatus[list[ListenerConfig]] = trio.TASK_STATUS_IGNORED) -> None:
        # One tracker for all listeners, so per-IP and process-wide limits span them; refusals are only logged and counted.
        tracker = ConnectionTracker()
        async with trio.open_nursery() as nursery:
            bound = []
            for listener in self.config.listeners:
                bound.append(
                    await nursery.start(
                        lambda task_status, listener=listener: serve_listener(
                            listener,
                            self.handle_connection,
                            transport=self.config.transport,
                            tracker=tracker,
                            on_refused=self.refusals,
                            task_status=task_status,
                        )
                    )
                )
            self.leadership.own_endpoints = {b.name: ControllerAddress(b.advertised_host, b.port, self.config.node_id) for b in bound}
            nursery.start_soon(self._sweep_expired_tokens)
            task_status.started(bound)

    async def _sweep_expired_tokens(self) -> None:
        """Kafka's periodic expireDelegationTokens task: every `delegation.token.expiry.check.interval.ms`, the active
        controller removes the tokens past their expiry or maximum time, durably."""
        while True:
            await trio.sleep(self.config.tokens.check_interval_ms / 1000)
            if self.leadership.is_active and self.handlers.tokens.sweep():
                self._applied += 1
                await self._until_stored()

    def set_active(self, node_id: int | None) -> None:
        """Make `node_id` the quorum's active controller (None: no leader), as an election would."""
        self.leadership.set_active(node_id)
        log.info("controller %s: the active controller is now %s", self.config.node_id, "none" if node_id is None else node_id)

    async def handle_connection(self, conn: KafkaConnection, listener: ListenerConfig) -> None:
        session = ControllerConnection(conn, listener)

        if not await self._login(session, Login(conn, listener, self.config.transport)):
            return
        while (frame := await conn.receive_frame()) is not None:
            header = peek_request_header(frame)
            step = session.expiry.step(header.api_key, trio.current_time())
            if step is SessionStep.REAUTHENTICATE:
                assert session.mechanism is not None  # only SASL sessions expire
                relogin = Login.reauthenticate(conn, listener, self.config.transport, SessionLogin(session.mechanism, session.principal), frame)
                if not await self._login(session, relogin):
                    return
            elif step is SessionStep.EXPIRED:
                log.info("controller: closing connection %s: its session expired without re-authentication (KIP-368)", conn.connection_id)
                return
            elif header.api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE) and header.api_version in self.ranges[header.api_key]:
                await conn.send(illegal_sasl_state(header))
            elif header.api_key == ApiKey.API_VERSIONS:
                await conn.send(apiversions.build_response(header.api_version, header.correlation_id, self.ranges, features=features_of(self.image)))
            elif header.api_key == ApiKey.ENVELOPE:
                response = self.handle_envelope(session, header, frame)
                await self._until_stored()
                await conn.send(response)
            elif header.api_key in self.handlers.by_key and header.api_version in self.ranges[header.api_key]:
                ctx = self._context(session.principal, session.address, session, header.client_id, None)
                response = self.execute(header, frame, header.header_size, ctx)
                await self._until_stored()
                await conn.send(response)
            else:
                log.info("controller: closing connection %s: api %s v%s not served", conn.connection_id, header.api_key, header.api_version)
                return

    async def _login(self, session: ControllerConnection, login: Login) -> bool:
        """Run a login or a re-authentication; the session takes its principal and lifetime when it succeeds."""
        conn = session.conn
        async with aclosing(login.events()) as events:
            async for event in events:
                if isinstance(event, ApiVersionsRequest):
                    await conn.send(apiversions.build_response(event.header.api_version, event.header.correlation_id, self.ranges, features=features_of(self.image)))
                    login.api_versions_answered(event.header.api_version in self.ranges[ApiKey.API_VERSIONS])
                elif isinstance(event, Refused):
                    await self.refusals(refused_connection(conn, session.listener, event))
        if login.result is None:
            return False
        session.principal, session.mechanism = login.result.principal, login.result.mechanism
        session.expiry.logged_in(login.result.session_lifetime_ms, trio.current_time())
        return True

    def _context(
        self,
        principal: Principal,
        address: ipaddress.IPv4Address | ipaddress.IPv6Address,
        session: ControllerConnection,
        client_id: str | None,
        forwarder: Principal | None,
    ) -> RequestContext:
        return RequestContext(
            principal=principal,
            client_address=address,
            listener=session.listener.name,
            security_protocol=session.listener.security_protocol,
            sasl_mechanism=session.mechanism if forwarder is None else None,
            client_id=client_id,
            forwarding_principal=forwarder,
        )

    def handle_envelope(self, session: ControllerConnection, header: RequestHeaderInfo, frame: bytes) -> bytes:
        """The whole EnvelopeResponse for one EnvelopeRequest, in Kafka's order of checks."""
        cid = header.correlation_id
        forwarder = self._context(session.principal, session.address, session, header.client_id, None)
        if not cluster_allowed(self.authorizer, forwarder, Operation.CLUSTER_ACTION):
            log.warning("controller: envelope from %s refused: no CLUSTER_ACTION", session.principal)
            return wrap_response(cid, ErrorCode.cluster_authorization_failed, None)
        try:
            _, parts = unwrap_request(frame)
        except EnvelopeError as exc:
            return wrap_response(cid, exc.error_code, None)
        except ProtocolError:
            return wrap_response(cid, ErrorCode.invalid_request, None)
        try:
            embedded = peek_request_header(parts.request_data)
        except ProtocolError:
            return wrap_response(cid, ErrorCode.unsupported_version, None)
        if not is_forwardable(embedded.api_key):
            return wrap_response(cid, ErrorCode.invalid_request, None)
        served = self.ranges.get(embedded.api_key)
        if served is None or embedded.api_version not in served:
            return wrap_response(cid, ErrorCode.unsupported_version, None)
        if self.leadership.refuses(embedded.api_key):
            # Kafka's RequestChannel turns an inner NOT_CONTROLLER into the envelope's own error, with no data.
            return wrap_response(cid, ErrorCode.not_controller, None)
        ctx = self._context(parts.principal, parts.client_address, session, embedded.client_id, session.principal)
        try:
            response = self.execute(embedded, parts.request_data, embedded.header_size, ctx)
        except ProtocolError:
            return wrap_response(cid, ErrorCode.unsupported_version, None)
        return wrap_response(cid, ErrorCode.none, response)

    def execute(self, header: RequestHeaderInfo, frame: bytes, offset: int, ctx: RequestContext) -> bytes:
        body = decode_body(header.api_key, header.api_version, frame, offset, allow_trailing=True)  # as Kafka does
        log.info(
            "controller: %s as %s from %s%s",
            api_name(header.api_key),
            ctx.principal,
            ctx.client_address,
            f" (forwarded by {ctx.forwarding_principal})" if ctx.forwarding_principal else "",
        )
        if self.leadership.refuses(header.api_key):
            return encode_response(error_response(header.api_key, header.api_version, body, ErrorCode.not_controller), correlation_id=header.correlation_id)
        try:
            values = self.handlers.by_key[header.api_key](body, ctx)
            entity = build_entity(response_schema(header.api_key, header.api_version), values)
        except ProtocolError:
            raise  # Kafka cannot read the request: the caller closes the connection or answers UNSUPPORTED_VERSION
        except Exception:
            # Kafka's ControllerApis.handle: an unexpected error is logged and answered with UNKNOWN_SERVER_ERROR.
            log.exception("controller: unexpected error handling %s from %s", api_name(header.api_key), ctx.principal)
            entity = error_response(header.api_key, header.api_version, body, ErrorCode.unknown_server_error)
        if is_forwardable(header.api_key):
            self._applied += 1  # the caller awaits `_until_stored` before it sends the answer
        return encode_response(entity, correlation_id=header.correlation_id)

    async def _until_stored(self) -> None:
        """Return once the stored image holds every request applied so far: durable before the answer leaves.

        Called between `execute` (or `handle_envelope`) and sending its answer, with no
        checkpoint in between, so "so far" includes that request. Every answer waits,
        not only a change's: a read must not show a change that a crash could still undo.
        """
        if self.store is None or self._stored >= self._applied:
            return
        wanted = self._applied
        async with self._store_lock:
            if self._stored >= wanted:
                return  # a write that began after our request already held it
            holds = self._applied
            # Encoded here, on the event loop: changes made while the thread writes cannot race it.
            data = self.store.encode(self.image, self.handlers.acl_store.acls if self.handlers.acl_store else [])
            await trio.to_thread.run_sync(self.store.write, data)  # not cancellable: the lock is held until the write ends
            self._stored = holds
