"""A ProxyService over in-memory streams: a fake controller connection, a list-backed audit sink, a client that speaks frames.

No sockets and no real time: the client's connection is `trio.testing.memory_stream_pair()`,
and the tests run under `autojump_clock`, so timeouts and backoffs cost nothing.
"""

import itertools
import math
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import trio
import trio.testing
from kio.schema.errors import ErrorCode

from apiversions import VersionRange
from authz.admin_apis import error_response
from devkit import wire
from devkit.wire import plain_token
from envelope.apis import ApiKey
from envelope.codec import decode_body, decode_response_body, encode_response
from envelope.frames import FrameReader, encode_frame
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.wrap import EnvelopeRequestParts, unwrap_request, wrap_response
from proxy.audit.pipeline import AuditEntry
from proxy.backoff import Backoff
from proxy.config import ProxyConfig, parse_proxy_config
from proxy.forward.service import ProxyService
from proxy.net.connection import KafkaConnection, Peer
from proxy.net.settings import ListenerConfig
from proxy.upstream.cluster_identity import ClusterIdentity
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import Attempt, EnvelopeReply, send_envelope
from proxy.upstream.settings import UpstreamSettings

NODE_ID = 100
CLUSTER_ID = "Zm9yd2FyZGluZy11bml0LQ"  # a Kafka Uuid (22 characters of URL-safe base64)
PREAUTH_IDLE_SECONDS = 2.0
USERS = {"alice": "alice-secret"}
PEER = Peer("127.0.0.1", 5555)

_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required " + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";"
PROPERTIES = {
    "node.id": str(NODE_ID),
    "cluster.id": CLUSTER_ID,
    "listeners": "PLAIN://127.0.0.1:9092,CLIENT://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAIN:PLAINTEXT,CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.client.plain.sasl.jaas.config": _JAAS,
    "controller.quorum.bootstrap.servers": "127.0.0.1:9999",
    "controller.listener.names": "CONTROLLER",
    "connections.preauth.idle.ms": str(int(PREAUTH_IDLE_SECONDS * 1000)),
}

# What the fake controller serves: CreateTopics narrower than the proxy's own 2..7, so the intersection shows.
CONTROLLER_RANGES: dict[int, VersionRange] = {ApiKey.CREATE_TOPICS: VersionRange(0, 5), ApiKey.DELETE_TOPICS: VersionRange(0, 6)}
CREATE_TOPICS_VERSION = 5


def config() -> ProxyConfig:
    return parse_proxy_config(dict(PROPERTIES))


# -- the audit sink ------------------------------------------------------------------------


class ListSink:
    """An AuditSink that keeps every committed record in a list."""

    name = "memory"

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    async def start(self, nursery: trio.Nursery) -> None:
        pass

    def commit_now(self, batch: Sequence[AuditEntry]) -> bool:
        return False  # every batch goes through the writer, as a Kafka sink's does

    async def commit(self, batch: Sequence[AuditEntry]) -> None:
        self.records.extend(orjson.loads(entry.line) for entry in batch)

    def deadline(self) -> float:
        return math.inf

    async def tick(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    def close_now(self) -> None:
        pass


# -- the fake controller connection ----------------------------------------------------------


@dataclass(frozen=True)
class ReceivedEnvelope:
    correlation_id: int
    parts: EnvelopeRequestParts

    @property
    def header(self) -> RequestHeaderInfo:
        """The embedded (client's) request header."""
        return peek_request_header(self.parts.request_data)


Answer = tuple[int, bytes | None]
"""(envelope error code, embedded response bytes)."""
Responder = Callable[[ReceivedEnvelope], Awaitable[Answer]]


def success_answer(envelope: ReceivedEnvelope) -> bytes:
    """The controller's answer to the embedded request: error 0 for every resource."""
    header = envelope.header
    body = decode_body(header.api_key, header.api_version, envelope.parts.request_data, header.header_size)
    response = error_response(header.api_key, header.api_version, body, ErrorCode.none, None)
    return encode_response(response, correlation_id=header.correlation_id)


async def answer_ok(envelope: ReceivedEnvelope) -> Answer:
    return ErrorCode.none, success_answer(envelope)


def envelope_errors(*codes: int) -> Responder:
    """Answer the envelope errors `codes` in turn, then 0 with the embedded answer."""
    queue = list(codes)

    async def respond(envelope: ReceivedEnvelope) -> Answer:
        if queue:
            return queue.pop(0), None
        return await answer_ok(envelope)

    return respond


def envelope_error_forever(code: int) -> Responder:
    async def respond(envelope: ReceivedEnvelope) -> Answer:
        return code, None

    return respond


async def unavailable(envelope: ReceivedEnvelope) -> Answer:
    raise UpstreamUnavailable("no answer from controller 127.0.0.1:9999 in time")


class FakeUpstream:
    """The surface of proxy.upstream.pool.ControllerPool the service uses: settings, controller_ranges, connected,
    active_id, queue_length, identity, request(), and send_envelope() with what its retry loop needs (backoff,
    attempt(), retry_after(), not_controller())."""

    def __init__(self, settings: UpstreamSettings, respond: Responder = answer_ok) -> None:
        self.settings = settings
        self.controller_ranges: dict[int, VersionRange] | None = dict(CONTROLLER_RANGES)
        self.connected = True
        self.active_id = settings.servers[0].node_id if settings.servers[0].node_id is not None else -1
        self.queue_length = 0
        self.identity = ClusterIdentity()
        self.identity.accept("the fake controller", CLUSTER_ID)  # as discovery learns it from DescribeCluster
        self.backoff = Backoff(settings.backoff_initial, settings.backoff_max)
        self.respond = respond
        self.envelopes: list[ReceivedEnvelope] = []
        self.forgotten: list[str] = []
        """The addresses the service reported as NOT_CONTROLLER, in order."""
        self.arrived = trio.Event()
        """Set when the first envelope arrives."""
        self._ids = itertools.count(1)

    async def send_envelope(
        self, build: Callable[[int], bytes], *, deadline: float, answered: Callable[[EnvelopeReply], None] | None = None
    ) -> EnvelopeReply:
        """The pool's own retry loop, over this fake's attempts."""
        return await send_envelope(self, build, deadline=deadline, answered=answered)

    async def attempt(self, build: Callable[[int], bytes], deadline: float, *, admitted: bool) -> Attempt:
        with trio.fail_at(deadline):
            response = await self.request(build)
        return Attempt(self.settings.servers[0], response, 0.0, 0.0)

    async def retry_after(self, delay: float) -> None:
        await trio.sleep(delay)

    def not_controller(self, server: Any) -> None:
        self.forgotten.append(server.address)

    async def request(self, build: Callable[[int], bytes], *, timeout: float | None = None) -> bytes:
        correlation_id = next(self._ids)
        frame = build(correlation_id)
        assert peek_request_header(frame).api_key == ApiKey.ENVELOPE, "only envelopes are sent on the request path"
        envelope_id, parts = unwrap_request(frame)
        assert envelope_id == correlation_id
        envelope = ReceivedEnvelope(correlation_id, parts)
        self.envelopes.append(envelope)
        self.arrived.set()
        error, embedded = await self.respond(envelope)
        return wrap_response(correlation_id, error, embedded)


# -- the client side -------------------------------------------------------------------------


def create_topics(name: str = "orders", correlation_id: int = 7, version: int = CREATE_TOPICS_VERSION) -> bytes:
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    return wire.request(ApiKey.CREATE_TOPICS, version, {"topics": [topic], "timeout": 30000, "validate_only": False}, correlation_id)


def with_unknown_tag(flexible_request: bytes, tag: int = 99, value: bytes = b"future") -> bytes:
    """The request with a tagged field no schema knows at the end of its body (its top-level tag section was empty).

    Kafka skips such fields; re-encoding the decoded body would drop it, so it shows whether bytes are forwarded untouched.
    """
    assert flexible_request.endswith(b"\x00") and tag < 128 and len(value) < 128
    return flexible_request[:-1] + bytes([1, tag, len(value)]) + value


def api_versions(correlation_id: int = 1) -> bytes:
    values = {"client_software_name": "unit-client", "client_software_version": "1.0"}
    return wire.request(ApiKey.API_VERSIONS, 3, values, correlation_id)


def raw_request(api_key: int, api_version: int, correlation_id: int, body: bytes = b"") -> bytes:
    """A request header v1 (null client id) and any body: for API keys kio has no schema of."""
    return struct.pack(">hhih", api_key, api_version, correlation_id, -1) + body


@dataclass
class Client:
    stream: trio.abc.Stream
    conn: KafkaConnection
    """The proxy's side of this connection."""
    finished: trio.Event = field(default_factory=trio.Event)
    error: BaseException | None = None
    """What handle_connection raised (ProtocolError, a broken stream), as the listener would log it."""
    _reader: FrameReader = field(default_factory=FrameReader)

    @property
    def connection_id(self) -> str:
        return self.conn.connection_id

    async def send(self, payload: bytes) -> None:
        await self.stream.send_all(encode_frame(payload))

    async def receive(self) -> bytes | None:
        """The next frame from the proxy; None once the proxy closed the connection."""
        while (frame := self._reader.next_frame()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self._reader.feed(bytes(data))
        return frame

    async def exchange(self, payload: bytes) -> bytes:
        await self.send(payload)
        frame = await self.receive()
        assert frame is not None, "the proxy closed the connection instead of answering"
        return frame

    async def call(self, api_key: int, version: int, values: dict[str, Any], correlation_id: int = 1) -> Any:
        frame = await self.exchange(wire.request(api_key, version, values, correlation_id))
        received, body = decode_response_body(api_key, version, frame)
        assert received == correlation_id
        return body

    async def assert_closed(self) -> None:
        """The proxy closes the connection without sending anything more, and its task ends."""
        assert await self.receive() is None
        await self.finished.wait()

    async def sasl_plain(self, user: str, password: str) -> Any:
        """SaslHandshake v1 + SaslAuthenticate v2 with PLAIN; the SaslAuthenticate answer."""
        handshake = await self.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, correlation_id=2)
        assert int(handshake.error_code) == 0 and list(handshake.mechanisms) == ["PLAIN"]
        return await self.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": plain_token(user, password)}, correlation_id=3)


# -- the proxy --------------------------------------------------------------------------------


@dataclass
class Proxy:
    config: ProxyConfig
    service: ProxyService
    upstream: FakeUpstream
    sink: ListSink
    nursery: trio.Nursery

    def listener(self, name: str) -> ListenerConfig:
        return next(item for item in self.config.listeners if item.name == name)

    def connect(self, listener_name: str = "PLAIN") -> Client:
        """A client connection, served by handle_connection as the listener would (then closed)."""
        listener = self.listener(listener_name)
        client_stream, server_stream = trio.testing.memory_stream_pair()
        conn = KafkaConnection(
            server_stream,
            listener=listener.name,
            max_frame_size=self.config.transport.max_frame_size,
            idle_timeout=listener.idle_timeout,
            peer=PEER,
        )
        client = Client(client_stream, conn)
        self.nursery.start_soon(self._serve, client, listener)
        return client

    async def _serve(self, client: Client, listener: ListenerConfig) -> None:
        try:
            await self.service.handle_connection(client.conn, listener)
        except Exception as exc:  # the listener logs these and closes the connection
            client.error = exc
        finally:
            await client.conn.aclose()
            client.finished.set()

    def records(self, client: Client | None = None, *, stage: str | None = None) -> list[dict[str, Any]]:
        """The `data` of committed records, of one connection and one stage if given."""
        found = [record["data"] for record in self.sink.records]
        if client is not None:
            found = [data for data in found if data["requestMetadata"]["connectionId"] == client.connection_id]
        if stage is not None:
            found = [data for data in found if data["stage"] == stage]
        return found

    def stages(self, client: Client) -> list[str]:
        return [data["stage"] for data in self.records(client)]

    def disconnect_cause(self, client: Client) -> str:
        (record,) = self.records(client, stage="disconnected")
        cause: str = record["connection"]["cause"]
        return cause
