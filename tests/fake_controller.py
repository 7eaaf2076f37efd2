"""The one controller stand-in on loopback, for the pool's and the proxy's failure tests: it answers ApiVersions at
once, and every other request when the test lets it, or closes the connection instead.

- An Envelope gets a real answer: its embedded request answered with success for every resource.
- Any other request gets its correlation id and a marker (the pool reads nothing else).
- `close_first`, `poison` and `drop_all` choose the requests answered by closing the connection (the fault of a
  controller that crashes on a request); `held` keeps every answer until `release()`.

It advertises neither DescribeCluster nor DescribeQuorum, so a pool probes it and takes the node it reached as the
active controller. PLAINTEXT: the proxy logs in as ANONYMOUS.
"""

import struct
from dataclasses import dataclass, field

import trio
from kio.schema.errors import ErrorCode

import apiversions
from apiversions import VersionRange
from authz.admin_apis import error_response
from envelope.apis import ApiKey
from envelope.codec import decode_body, encode_response
from envelope.frames import FrameReader, encode_frame
from envelope.header import peek_request_header
from envelope.served import ENVELOPE_RANGE, SERVED
from envelope.wrap import unwrap_request, wrap_response

RANGES: dict[int, VersionRange] = {
    ApiKey.API_VERSIONS: VersionRange(0, 3),
    ApiKey.ENVELOPE: ENVELOPE_RANGE,
    ApiKey.CREATE_TOPICS: SERVED[ApiKey.CREATE_TOPICS].versions,
}


@dataclass
class FakeController:
    close_first: int = 0
    """Close the connection instead of answering the first `close_first` requests."""
    poison: bytes | None = None
    """Close the connection instead of answering every request whose frame holds these bytes."""
    drop_all: bool = False
    """Close the connection on every request but ApiVersions."""
    held: bool = False
    """Answer nothing until `release()`."""
    received: list[int] = field(default_factory=list)
    """The correlation id of every request other than ApiVersions, in arrival order."""
    connects: list[float] = field(default_factory=list)
    """When (trio's clock) each connection was accepted."""
    dropped: list[float] = field(default_factory=list)
    """When each request answered by closing the connection arrived."""
    answered: int = 0
    """Envelopes answered."""
    port: int = 0
    _released: trio.Event = field(default_factory=trio.Event)

    @property
    def connections(self) -> int:
        return len(self.connects)

    def connects_between(self, start: float, end: float) -> int:
        return sum(1 for at in self.connects if start <= at <= end)

    def release(self) -> None:
        self._released.set()

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        self.connects.append(trio.current_time())
        reader = FrameReader()
        async with stream:
            while True:
                while (frame := reader.next_frame()) is None:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    reader.feed(bytes(data))
                header = peek_request_header(frame)
                if header.api_key == ApiKey.API_VERSIONS:
                    await stream.send_all(encode_frame(apiversions.build_response(header.api_version, header.correlation_id, RANGES)))
                    continue
                self.received.append(header.correlation_id)
                if self.drop_all or len(self.received) <= self.close_first or (self.poison is not None and self.poison in frame):
                    self.dropped.append(trio.current_time())
                    return
                if self.held:
                    await self._released.wait()
                answer = self._answer(frame) if header.api_key == ApiKey.ENVELOPE else struct.pack(">i", header.correlation_id) + b"answered"
                await stream.send_all(encode_frame(answer))

    def _answer(self, frame: bytes) -> bytes:
        correlation_id, parts = unwrap_request(frame)
        embedded = peek_request_header(parts.request_data)
        body = decode_body(embedded.api_key, embedded.api_version, parts.request_data, embedded.header_size)
        answer = error_response(embedded.api_key, embedded.api_version, body, ErrorCode.none)
        self.answered += 1
        return wrap_response(correlation_id, ErrorCode.none, encode_response(answer, correlation_id=embedded.correlation_id))
