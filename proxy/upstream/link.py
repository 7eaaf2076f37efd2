"""One connection of the proxy to one controller (or broker): ApiVersions and the proxy's own
login first, then one request at a time, as the controller serves a connection.

A link that fails or is interrupted in the middle of an exchange is broken for good: a late
answer would otherwise be taken for the next request's.

When the controller gives the login a session lifetime (KIP-368: its connections.max.reauth.ms,
or the proxy's token's expiry), the link logs in again on the same connection between two
requests, at a random 85-95% of the lifetime as Kafka's clients do, so the controller never
closes it for an expired session.
"""

import collections
import itertools
import logging
from collections.abc import Callable
from typing import Any

import trio
from kio.schema.errors import ErrorCode

import apiversions
from apiversions import VersionRange
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, peek_correlation_id, request_schema
from envelope.errors import ProtocolError
from envelope.frames import FrameReader, encode_frame
from proxy.net.addresses import ControllerAddress
from proxy.net.connection import DeadlineWatch, receive_some, send_all
from proxy.net.sasl.client import LoginFailed
from proxy.net.sasl.machine import reauthentication_delay
from proxy.upstream.settings import UpstreamSettings

log = logging.getLogger(__name__)

SOFTWARE_NAME = "kafka-envelope-proxy"
SOFTWARE_VERSION = "0.1.0"
CLIENT_ID = "envelope-proxy"
_RECEIVE_SIZE = 65536
_SASL_ROUND_TRIPS = 3  # SCRAM needs two, PLAIN one, OAUTHBEARER one (two after an error), GSSAPI three; a server asking for more is not following the mechanism


class UpstreamUnavailable(Exception):
    """No answer could be had from the controller in time."""


class UpstreamAuthenticationError(Exception):
    """The proxy's own login was refused: a configuration problem, not a failover."""


class LinkBroken(UpstreamUnavailable):
    """The connection failed, closed, or an exchange on it was interrupted."""


async def open_stream(settings: UpstreamSettings, server: ControllerAddress) -> trio.abc.Stream:
    """The byte stream to `server`, before any Kafka protocol: TCP, and for SSL/SASL_SSL a finished TLS
    handshake (the certificate checked against the truststore and, with endpoint identification, the host)."""
    tcp = await trio.open_tcp_stream(server.host, server.port)
    if settings.tls_context is None:
        return tcp
    secured = trio.SSLStream(tcp, settings.tls_context.current(), server_hostname=server.host)
    try:
        await secured.do_handshake()
    except trio.BrokenResourceError as exc:
        await trio.aclose_forcefully(secured)
        raise trio.BrokenResourceError(f"TLS handshake with {server.address} failed: {exc.__cause__ or exc}") from exc
    except BaseException:
        await trio.aclose_forcefully(secured)
        raise
    return secured


class Link:
    def __init__(self, settings: UpstreamSettings, server: ControllerAddress) -> None:
        self.settings = settings
        self.server = server
        self.ranges: dict[int, VersionRange] = {}
        self.broken = False
        self.opened_at = trio.current_time()
        """When its connect began: a failure of a connection older than the node's latest counted one is not counted again."""
        self._stream: trio.abc.Stream | None = None
        self._reader = FrameReader()
        self._correlation = itertools.count(1)
        self.reauthenticate_at: float | None = None
        """When the login must be made again (trio's clock); None when the controller's session does not expire."""
        self.reauthentications = 0
        self.overdue = False
        """Closed by a `DeadlineWatch` because its round trip outlived its deadline."""

    @classmethod
    async def open(cls, settings: UpstreamSettings, server: ControllerAddress) -> "Link":
        """Connected, ApiVersions asked, logged in; raises LinkBroken, UpstreamAuthenticationError or ProtocolError."""
        link = cls(settings, server)
        try:
            with trio.fail_after(settings.connect_timeout):
                link._stream = await open_stream(settings, server)
                await link._handshake()
        except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            await link.aclose()
            raise LinkBroken(f"{server.address}: {exc!r}") from exc
        except BaseException:
            await link.aclose()
            raise
        return link

    async def expire(self) -> None:
        """Its round trip outlived its deadline (`DeadlineWatch`): closed under it, which ends the round trip."""
        self.overdue = True
        await self.aclose()

    async def aclose(self) -> None:
        self.broken = True
        stream, self._stream = self._stream, None
        if stream is not None:
            await trio.aclose_forcefully(stream)

    async def exchange(self, build: Callable[[int], bytes], *, deadline: float, watch: "DeadlineWatch | None" = None) -> bytes:
        """Send the frame `build(correlation_id)` and return its answer frame; LinkBroken on any failure or at `deadline`.

        With a running `watch` the deadline is kept by the watch's task, not by a cancel scope of this round trip."""
        if self.reauthenticate_at is not None:  # only a login with a session lifetime (KIP-368) pays a coroutine here
            await self._reauthenticate_when_due(deadline)
        return await self._exchange(build, deadline=deadline, watch=watch)

    async def _exchange(self, build: Callable[[int], bytes], *, deadline: float, watch: "DeadlineWatch | None" = None) -> bytes:
        stream = self._stream
        if stream is None or self.broken:
            raise LinkBroken(f"{self.server.address}: connection closed")
        correlation_id = next(self._correlation)
        finished = False
        watched = watch is not None and watch.watch(self, deadline)
        try:
            if watched:
                await send_all(stream, encode_frame(build(correlation_id)))  # no run loop pass when the kernel takes it
                reader = self._reader  # `_next_frame`, inline: one coroutine less on every forwarded request
                while (answer := reader.next_frame()) is None:
                    data = await receive_some(stream, _RECEIVE_SIZE)
                    if not data:
                        raise trio.BrokenResourceError(f"{self.server.address} closed the connection")
                    reader.feed(bytes(data))
                frame = answer
                finished = True
            else:
                with trio.move_on_at(deadline):
                    await send_all(stream, encode_frame(build(correlation_id)))
                    frame = await self._next_frame(stream)
                    finished = True
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError) as exc:
            if not self.overdue:
                raise LinkBroken(f"{self.server.address}: {exc!r}") from exc
        finally:
            if watched:
                assert watch is not None
                watch.done(self)
            if not finished:
                # Interrupted (deadline, failure or cancellation): a late answer must not meet the next request.
                with trio.CancelScope(shield=True):
                    await self.aclose()
        if not finished:
            raise LinkBroken(f"no answer from {self.server.address} in time")
        if peek_correlation_id(frame) != correlation_id:
            await self.aclose()
            raise LinkBroken(f"{self.server.address} answered correlation id {peek_correlation_id(frame)}, expected {correlation_id}")
        return frame

    async def wait_closed(self) -> str:
        """For a link nobody sends on: returns why it ended (the server closed it, an error, or unexpected bytes)."""
        stream = self._stream
        if stream is None or self.broken:
            return "connection closed"
        try:
            data = await receive_some(stream, _RECEIVE_SIZE)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            return f"connection lost: {exc!r}"
        finally:
            self.broken = True
        return "sent bytes nobody asked for" if data else "closed the connection"

    async def call(self, api_key: ApiKey, version: int, values: dict[str, object], *, deadline: float) -> Any:
        """The proxy's own request (discovery), decoded; ProtocolError for an undecodable answer."""
        await self._reauthenticate_when_due(deadline)
        return await self._call(api_key, version, values, deadline=deadline)

    async def _reauthenticate_when_due(self, deadline: float) -> None:
        if self.reauthenticate_at is None or trio.current_time() < self.reauthenticate_at:
            return
        try:
            await self._authenticate(deadline)
        except (UpstreamAuthenticationError, ProtocolError) as exc:
            await self.aclose()
            raise LinkBroken(f"re-authentication to {self.server.address} failed: {exc}") from exc
        self.reauthentications += 1
        log.debug("re-authenticated to %s", self.server.address)

    async def _call(self, api_key: ApiKey, version: int, values: dict[str, object], *, deadline: float) -> Any:
        body = build_entity(request_schema(api_key, version), values)
        frame = await self._exchange(
            lambda cid: encode_request(body, correlation_id=cid, client_id=CLIENT_ID, api_version=version), deadline=deadline
        )
        _, response = decode_response_body(api_key, version, frame)
        return response

    async def _next_frame(self, stream: trio.abc.Stream) -> bytes:
        while (frame := self._reader.next_frame()) is None:
            data = await receive_some(stream, _RECEIVE_SIZE)
            if not data:
                raise trio.BrokenResourceError(f"{self.server.address} closed the connection")
            self._reader.feed(bytes(data))
        return frame

    async def _handshake(self) -> None:
        deadline = trio.current_time() + self.settings.connect_timeout
        answer = await self._call(
            ApiKey.API_VERSIONS, 3, {"client_software_name": SOFTWARE_NAME, "client_software_version": SOFTWARE_VERSION}, deadline=deadline
        )
        error = int(answer.error_code)
        if error != ErrorCode.none:
            raise ProtocolError(f"{self.server.address} answered ApiVersions with error {error}")
        self.ranges = apiversions.ranges_of(answer)
        if self.settings.security_protocol.startswith("SASL_"):
            await self._authenticate(deadline)

    async def _authenticate(self, deadline: float) -> None:
        login_settings = self.settings.login
        if login_settings is None:
            raise UpstreamAuthenticationError(f"{self.settings.security_protocol} needs sasl.mechanism.controller.protocol and its login")
        mechanism = login_settings.mechanism
        answer = await self._call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism}, deadline=deadline)
        if int(answer.error_code) != ErrorCode.none:
            raise UpstreamAuthenticationError(
                f"{self.server.address} does not accept SASL mechanism {mechanism}: enabled {list(answer.mechanisms)}"
            )
        try:
            login = await login_settings.exchange(self.server.host)
        except LoginFailed as exc:
            raise UpstreamAuthenticationError(f"the proxy's own {mechanism} login to {self.server.address} could not start: {exc}") from None
        token: bytes | None = login.initial()
        for _ in range(_SASL_ROUND_TRIPS):
            if token is None:
                return
            result = await self._call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}, deadline=deadline)
            if int(result.error_code) != ErrorCode.none:
                raise UpstreamAuthenticationError(f"the proxy's own login to {self.server.address} failed: {result.error_message}")
            self._session_lifetime(result.session_lifetime.total_seconds())
            try:
                token = login.respond(bytes(result.auth_bytes))
            except LoginFailed as exc:
                raise UpstreamAuthenticationError(f"the proxy's own {mechanism} login to {self.server.address} failed: {exc}") from None
        if token is None:
            return  # the last answer completed the login
        raise UpstreamAuthenticationError(f"the {mechanism} exchange with {self.server.address} did not complete")

    def _session_lifetime(self, seconds: float) -> None:
        """The lifetime the controller gave this login (0: none, the session does not expire)."""
        delay = reauthentication_delay(seconds)
        self.reauthenticate_at = None if delay is None else trio.current_time() + delay


class _SlotWait:
    __slots__ = ("slots", "taken", "task")

    def __init__(self, slots: "ConnectionSlots", task: trio.lowlevel.Task) -> None:
        self.slots, self.task = slots, task
        self.taken = False

    async def expire(self) -> None:
        self.slots.expire(self)


class ConnectionSlots:
    """A pool's `controller.connections` slots, taken first come, first served (as a trio.Semaphore), each wait for one
    ending at its deadline as its `DeadlineWatch` keeps it (or its own scope while the watch does not run)."""

    def __init__(self, total: int, watch: DeadlineWatch) -> None:
        self._free = total
        self._waits: collections.deque[_SlotWait] = collections.deque()
        self._watch = watch

    def acquire_nowait(self) -> None:
        """A free slot; trio.WouldBlock when none is (a slot released while requests wait goes to the first of them)."""
        if not self._free:
            raise trio.WouldBlock
        self._free -= 1

    def release(self) -> None:
        if self._waits:
            wait = self._waits.popleft()
            self._watch.done(wait)
            wait.taken = True  # the slot passes to the first waiting
            trio.lowlevel.reschedule(wait.task)
        else:
            self._free += 1

    async def acquire(self, deadline: float) -> bool:
        """Wait for a slot (after `acquire_nowait` found none); False when none came by `deadline`."""
        wait = _SlotWait(self, trio.lowlevel.current_task())
        self._waits.append(wait)

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._waits.remove(wait)
            self._watch.done(wait)
            return trio.lowlevel.Abort.SUCCEEDED

        if self._watch.watch(wait, deadline):
            await trio.lowlevel.wait_task_rescheduled(abort)
        else:
            with trio.move_on_at(deadline):
                await trio.lowlevel.wait_task_rescheduled(abort)
        return wait.taken

    def expire(self, wait: _SlotWait) -> None:
        """`wait` outlived its deadline: no slot for it."""
        self._waits.remove(wait)
        trio.lowlevel.reschedule(wait.task)


__all__ = ["CLIENT_ID", "ConnectionSlots", "DeadlineWatch", "Link", "LinkBroken", "UpstreamAuthenticationError", "UpstreamUnavailable", "open_stream"]
