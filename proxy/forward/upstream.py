"""The proxy's own connection to the controller listener.

One connection, multiplexed by correlation id: a reader task delivers each
response to the waiting request. The connection is re-established with
exponential backoff, and ApiVersions is fetched again every time.
"""

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import trio

import apiversions
from apiversions import VersionRange
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from envelope.errors import ProtocolError
from envelope.frames import FrameReader, encode_frame
from envelope.header import peek_correlation_id
from proxy.net.sasl.client import LoginFailed, client_exchange
from proxy.net.tls.context import ReloadingServerContext
from proxy.net.tls.options import TlsSettings

log = logging.getLogger(__name__)

SOFTWARE_NAME = "kafka-envelope-proxy"
SOFTWARE_VERSION = "0.1.0"
CLIENT_ID = "envelope-proxy"


class UpstreamUnavailable(Exception):
    """No answer could be had from the controller in time."""


class UpstreamAuthenticationError(Exception):
    pass


@dataclass(frozen=True)
class UpstreamSettings:
    host: str
    port: int
    security_protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    sasl_mechanism: str | None = None  # PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    # SSL and SASL_SSL: the client context (truststore, optional client certificate), re-read when its files change.
    tls: TlsSettings | None = None
    tls_context: ReloadingServerContext | None = field(default=None, repr=False, compare=False)
    certificate_dn: str | None = None  # the client certificate's subject (RFC 2253), if one is configured
    connect_timeout: float = 10.0
    request_timeout: float = 30.0
    backoff_initial: float = 0.05
    backoff_max: float = 1.0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


async def open_stream(settings: UpstreamSettings) -> trio.abc.Stream:
    """The byte stream to the controller listener, before any Kafka protocol.

    SSL and SASL_SSL wrap the TCP stream in a `trio.SSLStream` and complete the handshake
    here (the server certificate is checked against the truststore and, with
    `ssl.endpoint.identification.algorithm=https`, against `settings.host`); everything
    after (ApiVersions, SASL, envelopes) only needs a `trio.abc.Stream`.
    """
    tcp = await trio.open_tcp_stream(settings.host, settings.port)
    if settings.tls_context is None:
        return tcp
    secured = trio.SSLStream(tcp, settings.tls_context.current(), server_hostname=settings.host)
    try:
        await secured.do_handshake()
    except trio.BrokenResourceError as exc:
        await trio.aclose_forcefully(secured)
        raise trio.BrokenResourceError(f"TLS handshake with {settings.address} failed: {exc.__cause__ or exc}") from exc
    except BaseException:
        await trio.aclose_forcefully(secured)
        raise
    return secured


class _Pending:
    __slots__ = ("done", "error", "response")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.response: bytes | None = None
        self.error: Exception | None = None


class UpstreamEvent(Enum):
    """What an upstream reports on its events channel."""

    APIVERSIONS = "apiversions"  # a (re)connect asked ApiVersions
    RECONNECT = "reconnect"  # the connection was lost
    VERSIONS_CHANGED = "versions-changed"  # the controller's ranges differ from the previous connection's


class Upstream:
    def __init__(self, settings: UpstreamSettings, *, events: trio.MemorySendChannel[UpstreamEvent] | None = None) -> None:
        """`events`, when given, receives an UpstreamEvent for each reconnect, ApiVersions and change of versions
        (the upstream waits for room in it: a bounded channel, read by the service)."""
        self.settings = settings
        self.controller_ranges: dict[int, VersionRange] | None = None
        self._events = events
        self.reconnects = 0
        self._connected = trio.Event()
        self._stream: trio.abc.Stream | None = None
        self._pending: dict[int, _Pending] = {}
        self._correlation = itertools.count(1)
        self._send_lock = trio.Lock()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep a connection up forever; report started after the first attempt."""
        backoff = self.settings.backoff_initial
        started = False
        while True:
            try:
                stream = await self._connect()
            except (OSError, trio.TooSlowError, trio.BrokenResourceError, ProtocolError, UpstreamAuthenticationError) as exc:
                level = logging.ERROR if isinstance(exc, UpstreamAuthenticationError) else logging.WARNING
                log.log(level, "controller %s unreachable: %r; retrying in %.2fs", self.settings.address, exc, backoff)
                if not started:
                    task_status.started()
                    started = True
                await trio.sleep(backoff)
                backoff = min(backoff * 2, self.settings.backoff_max)
                continue
            backoff = self.settings.backoff_initial
            if not started:
                task_status.started()
                started = True
            try:
                await self._read_loop(stream)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError) as exc:
                log.warning("controller %s connection lost: %r", self.settings.address, exc)
            finally:
                self._disconnect(UpstreamUnavailable("controller connection lost"))
                with trio.CancelScope(shield=True):
                    await stream.aclose()
            self.reconnects += 1
            await self._report(UpstreamEvent.RECONNECT)

    async def _report(self, event: UpstreamEvent) -> None:
        if self._events is not None:
            await self._events.send(event)

    def _disconnect(self, error: Exception) -> None:
        self._stream = None
        if self._connected.is_set():
            self._connected = trio.Event()
        pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.error = error
            slot.done.set()

    async def _connect(self) -> trio.abc.Stream:
        with trio.fail_after(self.settings.connect_timeout):
            stream = await open_stream(self.settings)
            try:
                reader = FrameReader()
                ranges = await self._handshake(stream, reader)
            except BaseException:
                await stream.aclose()
                raise
        previous = self.controller_ranges
        self.controller_ranges = ranges
        self._stream = stream
        self._reader = reader
        self._connected.set()
        identity = self.settings.username or self.settings.certificate_dn or "ANONYMOUS"
        log.info("connected to controller %s (%s) as %s", self.settings.address, self.settings.security_protocol, identity)
        await self._report(UpstreamEvent.APIVERSIONS)  # every connection starts with a fresh ApiVersions
        if previous is not None and previous != ranges:
            await self._report(UpstreamEvent.VERSIONS_CHANGED)
        return stream

    async def _exchange(self, stream: trio.abc.Stream, reader: FrameReader, body: object, version: int) -> object:
        correlation_id = next(self._correlation)
        await stream.send_all(encode_frame(encode_request(body, correlation_id=correlation_id, client_id=CLIENT_ID, api_version=version)))
        while (frame := reader.next_frame()) is None:
            data = await stream.receive_some(65536)
            if not data:
                raise trio.BrokenResourceError("controller closed the connection during the handshake")
            reader.feed(bytes(data))
        api_key = int(body.__api_key__)  # type: ignore[attr-defined]
        received_id, response = decode_response_body(api_key, version, frame)
        if received_id != correlation_id:
            raise ProtocolError(f"correlation id {received_id} != {correlation_id}")
        return response

    async def _handshake(self, stream: trio.abc.Stream, reader: FrameReader) -> dict[int, VersionRange]:
        request = build_entity(
            request_schema(ApiKey.API_VERSIONS, 3), {"client_software_name": SOFTWARE_NAME, "client_software_version": SOFTWARE_VERSION}
        )
        response = await self._exchange(stream, reader, request, 3)
        error = int(response.error_code)  # type: ignore[attr-defined]
        if error != 0:
            raise ProtocolError(f"controller answered ApiVersions with error {error}")
        ranges = apiversions.ranges_of(response)
        if self.settings.security_protocol.startswith("SASL_"):
            await self._authenticate(stream, reader)
        return ranges

    async def _authenticate(self, stream: trio.abc.Stream, reader: FrameReader) -> None:
        mechanism = self.settings.sasl_mechanism or "PLAIN"
        handshake = build_entity(request_schema(ApiKey.SASL_HANDSHAKE, 1), {"mechanism": mechanism})
        answer = await self._exchange(stream, reader, handshake, 1)
        if int(answer.error_code) != 0:  # type: ignore[attr-defined]
            raise UpstreamAuthenticationError(f"controller does not accept SASL mechanism {mechanism}: enabled {list(answer.mechanisms)}")  # type: ignore[attr-defined]
        login = client_exchange(mechanism, self.settings.username or "", self.settings.password or "")
        token: bytes | None = login.initial()
        # SCRAM needs two round trips, PLAIN one; a server asking for more is not following the mechanism.
        for _ in range(3):
            if token is None:
                return
            authenticate = build_entity(request_schema(ApiKey.SASL_AUTHENTICATE, 2), {"auth_bytes": token})
            result = await self._exchange(stream, reader, authenticate, 2)
            if int(result.error_code) != 0:  # type: ignore[attr-defined]
                raise UpstreamAuthenticationError(f"the proxy's own login to the controller failed: {result.error_message}")  # type: ignore[attr-defined]
            try:
                token = login.respond(bytes(result.auth_bytes))  # type: ignore[attr-defined]
            except LoginFailed as exc:
                raise UpstreamAuthenticationError(f"the proxy's own {mechanism} login to the controller failed: {exc}") from None
        raise UpstreamAuthenticationError(f"the controller's {mechanism} exchange did not complete")

    async def _read_loop(self, stream: trio.abc.Stream) -> None:
        reader = self._reader
        while True:
            while (frame := reader.next_frame()) is not None:
                slot = self._pending.pop(peek_correlation_id(frame), None)
                if slot is not None:
                    slot.response = frame
                    slot.done.set()
            data = await stream.receive_some(65536)
            if not data:
                raise trio.BrokenResourceError("controller closed the connection")
            reader.feed(bytes(data))

    async def request(self, build: Callable[[int], bytes], *, timeout: float | None = None) -> bytes:
        """Send the payload `build(correlation_id)` and wait for its response frame."""
        deadline = trio.current_time() + (timeout if timeout is not None else self.settings.request_timeout)
        with trio.move_on_at(deadline):
            await self._connected.wait()
        stream = self._stream
        if stream is None or not self._connected.is_set():
            raise UpstreamUnavailable(f"controller {self.settings.address} not connected")
        correlation_id = next(self._correlation)
        slot = _Pending()
        self._pending[correlation_id] = slot
        try:
            with trio.move_on_at(deadline):
                async with self._send_lock:
                    await stream.send_all(encode_frame(build(correlation_id)))
                await slot.done.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise UpstreamUnavailable(f"controller {self.settings.address}: {exc!r}") from exc
        finally:
            self._pending.pop(correlation_id, None)
        if slot.error is not None:
            raise slot.error
        if slot.response is None:
            raise UpstreamUnavailable(f"no answer from controller {self.settings.address} in time")
        return slot.response


__all__ = ["Upstream", "UpstreamSettings", "UpstreamUnavailable"]
