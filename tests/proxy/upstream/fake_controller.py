"""A controller stand-in on loopback whose timing the test decides: it answers ApiVersions at once, and
every other request when the test lets it, or it closes the connection instead.

The pool only reads an answer's correlation id, so the answers carry that and a marker.
"""

import struct
from dataclasses import dataclass, field

import trio

import apiversions
from apiversions import VersionRange
from envelope.apis import ApiKey
from envelope.frames import FrameReader, encode_frame
from envelope.header import peek_request_header

# No DescribeCluster or DescribeQuorum: the pool probes, i.e. takes the node it reached as the active one.
RANGES = {ApiKey.API_VERSIONS: VersionRange(0, 3), ApiKey.ENVELOPE: VersionRange(0, 0)}


@dataclass
class FakeController:
    close_first: int = 0
    """Close the connection instead of answering the first `close_first` requests."""
    poison: bytes | None = None
    """Close the connection instead of answering every request whose frame holds these bytes."""
    held: bool = False
    """Answer nothing until `release()`."""
    received: list[int] = field(default_factory=list)
    """The correlation id of every request other than ApiVersions, in arrival order."""
    connections: int = 0
    dropped: list[float] = field(default_factory=list)
    """When (trio's clock) each request answered by closing the connection arrived."""
    port: int = 0
    _released: trio.Event = field(default_factory=trio.Event)

    def release(self) -> None:
        self._released.set()

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        self.connections += 1
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
                if len(self.received) <= self.close_first or (self.poison is not None and self.poison in frame):
                    self.dropped.append(trio.current_time())
                    return
                if self.held:
                    await self._released.wait()
                await stream.send_all(encode_frame(struct.pack(">i", header.correlation_id) + b"answered"))
