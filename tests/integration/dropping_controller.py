"""A controller stand-in on loopback that drops the connection on chosen requests, and counts connects.

It answers ApiVersions, and every Envelope with its embedded request answered by success for each
resource, except that it closes the connection without an answer on an Envelope whose bytes hold
`poison` (or on every Envelope, with `drop_all`): the fault of a controller that crashes on a request.
It advertises neither DescribeCluster nor DescribeQuorum, so the proxy probes it and takes the node
it reached as the active controller. PLAINTEXT: the proxy logs in as ANONYMOUS.
"""

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
from envelope.wrap import unwrap_request, wrap_response

RANGES: dict[int, VersionRange] = {
    ApiKey.API_VERSIONS: VersionRange(0, 3),
    ApiKey.ENVELOPE: VersionRange(0, 0),
    ApiKey.CREATE_TOPICS: apiversions.kio_range(ApiKey.CREATE_TOPICS),
}


@dataclass
class DroppingController:
    poison: bytes = b"poison"
    drop_all: bool = False
    connects: list[float] = field(default_factory=list)
    """When (trio's clock) each connection was accepted."""
    dropped: list[float] = field(default_factory=list)
    """When each Envelope answered by closing the connection arrived."""
    answered: int = 0
    port: int = 0

    def connects_between(self, start: float, end: float) -> int:
        return sum(1 for at in self.connects if start <= at <= end)

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
                if header.api_key != ApiKey.ENVELOPE or self.drop_all or self.poison in frame:
                    self.dropped.append(trio.current_time())
                    return
                await stream.send_all(encode_frame(self._answer(frame)))

    def _answer(self, frame: bytes) -> bytes:
        correlation_id, parts = unwrap_request(frame)
        embedded = peek_request_header(parts.request_data)
        body = decode_body(embedded.api_key, embedded.api_version, parts.request_data, embedded.header_size)
        answer = error_response(embedded.api_key, embedded.api_version, body, ErrorCode.none)
        self.answered += 1
        return wrap_response(correlation_id, ErrorCode.none, encode_response(answer, correlation_id=embedded.correlation_id))
