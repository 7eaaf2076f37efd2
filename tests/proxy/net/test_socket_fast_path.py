"""`send_all` and `receive_some` (proxy/net/connection.py) against trio's own `SocketStream` methods, their oracles:
the same bytes, the same errors, a cancellation seen before anything is sent or read; the send without the run loop's
pass after a send that did not block, the receive with trio's passes exactly."""

from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from envelope.frames import encode_frame
from proxy.net.connection import KafkaConnection, Peer, receive_some, send_all
from proxy.net.proxied import PrefixedStream

Sender = Callable[[trio.abc.Stream, bytes], Awaitable[None]]
LARGE = 8 * 1024 * 1024
"""More than loopback's socket buffers hold: the send must wait for the peer to read."""


async def _trio_way(stream: trio.abc.Stream, data: bytes) -> None:
    await stream.send_all(data)


SENDERS = pytest.mark.parametrize("send", [send_all, _trio_way], ids=["eager", "trio's oracle"])
Receiver = Callable[[trio.abc.Stream, int], Awaitable[bytes | bytearray]]


async def _trio_receive(stream: trio.abc.Stream, max_bytes: int) -> bytes | bytearray:
    return await stream.receive_some(max_bytes)


RECEIVERS = pytest.mark.parametrize("receive", [receive_some, _trio_receive], ids=["direct", "trio's oracle"])


async def _tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        accepted: list[trio.SocketStream] = []

        async def accept() -> None:
            stream = await listeners[0].accept()
            assert isinstance(stream, trio.SocketStream)
            accepted.append(stream)

        nursery.start_soon(accept)
        client = await trio.open_tcp_stream("127.0.0.1", port)
    await listeners[0].aclose()
    return client, accepted[0]


async def _receive_exactly(stream: trio.abc.Stream, size: int) -> bytes:
    received = bytearray()
    while len(received) < size:
        chunk = await stream.receive_some(65536)
        assert chunk, "the peer closed early"
        received += chunk
    return bytes(received)


@SENDERS
async def test_the_same_bytes_arrive_also_when_the_kernel_cannot_take_them_at_once(send: Sender) -> None:
    client, server = await _tcp_pair()
    data = bytes(range(256)) * (LARGE // 256)
    async with trio.open_nursery() as nursery:
        got: list[bytes] = []

        async def read() -> None:
            got.append(await _receive_exactly(server, len(data)))

        nursery.start_soon(read)
        await send(client, data)
    assert got == [data]
    await client.aclose()
    await server.aclose()


@SENDERS
async def test_a_socket_closed_here_raises_closed_resource_error(send: Sender) -> None:
    client, server = await _tcp_pair()
    await client.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await send(client, b"frame")
    await server.aclose()


@SENDERS
async def test_a_socket_closed_during_the_wait_for_room_raises_closed_resource_error(send: Sender) -> None:
    # As a DeadlineWatch closes a link under a round trip that outlived its deadline.
    client, server = await _tcp_pair()
    async with trio.open_nursery() as nursery:

        async def close_soon() -> None:
            await trio.sleep(0.2)
            await client.aclose()

        nursery.start_soon(close_soon)
        with pytest.raises(trio.ClosedResourceError):
            await send(client, b"x" * LARGE)  # nobody reads: the send waits for room
    await server.aclose()


@SENDERS
async def test_a_peer_that_reset_the_connection_raises_broken_resource_error(send: Sender) -> None:
    client, server = await _tcp_pair()
    server.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close sends RST
    await server.aclose()
    await trio.sleep(0.05)
    with pytest.raises(trio.BrokenResourceError):
        for _ in range(100):  # the first send after a reset may still be taken
            await send(client, b"frame")
            await trio.sleep(0.01)
    await client.aclose()


@SENDERS
async def test_a_cancelled_task_sends_nothing(send: Sender) -> None:
    client, server = await _tcp_pair()
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await send(client, b"frame")
    await client.aclose()
    assert await server.receive_some(16) == b""
    await server.aclose()


async def test_a_stream_that_is_not_plain_tcp_sends_the_trio_way() -> None:
    client, server = trio.testing.memory_stream_pair()
    await send_all(client, b"frame")
    assert await server.receive_some(16) == b"frame"


class _Steps(trio.abc.Instrument):
    """The steps of the task that made it (another task's, such as a sender's, would make the count depend on timing)."""

    def __init__(self) -> None:
        self.steps = 0
        self._task = trio.lowlevel.current_task()

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += task is self._task


async def _steps_of(send: Sender) -> int:
    client, server = await _tcp_pair()
    steps = _Steps()
    trio.lowlevel.add_instrument(steps)
    try:
        for _ in range(10):
            await send(client, b"frame")
    finally:
        trio.lowlevel.remove_instrument(steps)
    await client.aclose()
    await server.aclose()
    return steps.steps


async def test_a_send_the_kernel_takes_at_once_takes_no_pass_of_the_run_loop() -> None:
    assert await _steps_of(send_all) == 0
    assert await _steps_of(_trio_way) == 10  # the oracle: one pass after each send


@RECEIVERS
async def test_a_receive_returns_what_is_there_or_waits_for_it(receive: Receiver) -> None:
    client, server = await _tcp_pair()
    await client.send_all(b"ready")
    await trio.sleep(0.01)
    assert await receive(server, 65536) == b"ready"
    async with trio.open_nursery() as nursery:

        async def send_soon() -> None:
            await trio.sleep(0.05)
            await client.send_all(b"later")

        nursery.start_soon(send_soon)
        assert await receive(server, 65536) == b"later"
    await client.aclose()
    assert await receive(server, 65536) == b""  # the peer closed
    await server.aclose()


@RECEIVERS
async def test_a_receive_on_a_socket_closed_here_raises_closed_resource_error(receive: Receiver) -> None:
    client, server = await _tcp_pair()
    await server.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await receive(server, 65536)
    await client.aclose()


@RECEIVERS
async def test_a_receive_waiting_when_its_socket_is_closed_raises_closed_resource_error(receive: Receiver) -> None:
    client, server = await _tcp_pair()
    async with trio.open_nursery() as nursery:

        async def close_soon() -> None:
            await trio.sleep(0.05)
            await server.aclose()

        nursery.start_soon(close_soon)
        with pytest.raises(trio.ClosedResourceError):
            await receive(server, 65536)
    await client.aclose()


@RECEIVERS
async def test_a_receive_from_a_peer_that_reset_raises_broken_resource_error(receive: Receiver) -> None:
    client, server = await _tcp_pair()
    await server.send_all(b"unread")  # unread data at close makes the kernel reset the connection
    await trio.sleep(0.01)
    client.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    await client.aclose()
    await trio.sleep(0.05)
    with pytest.raises(trio.BrokenResourceError):
        await receive(server, 65536)
    await server.aclose()


@RECEIVERS
async def test_a_cancelled_receive_reads_nothing(receive: Receiver) -> None:
    client, server = await _tcp_pair()
    await client.send_all(b"kept")
    await trio.sleep(0.01)
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await receive(server, 65536)
    assert await server.receive_some(65536) == b"kept"
    await client.aclose()
    await server.aclose()


async def test_a_receive_that_is_not_plain_tcp_reads_the_trio_way() -> None:
    client, server = trio.testing.memory_stream_pair()
    await client.send_all(b"frame")
    assert await receive_some(server, 16) == b"frame"


async def _receive_steps(receive: Receiver, *, ready: bool) -> int:
    client, server = await _tcp_pair()
    steps = _Steps()
    if ready:
        await client.send_all(b"ready")
        await trio.sleep(0.01)
        trio.lowlevel.add_instrument(steps)
        try:
            await receive(server, 65536)
        finally:
            trio.lowlevel.remove_instrument(steps)
    else:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_send_later, client)
            trio.lowlevel.add_instrument(steps)
            try:
                await receive(server, 65536)
            finally:
                trio.lowlevel.remove_instrument(steps)
    await client.aclose()
    await server.aclose()
    return steps.steps


async def _send_later(stream: trio.SocketStream) -> None:
    await trio.sleep(0.02)
    await stream.send_all(b"later")


async def test_a_receive_takes_the_passes_of_the_run_loop_trio_takes() -> None:
    # Data there at once: one pass, so that a client that pipelines cannot keep the run loop. Data to wait for: the
    # wait's wake-up, and no pass more.
    assert await _receive_steps(receive_some, ready=True) == await _receive_steps(_trio_receive, ready=True) == 1
    assert await _receive_steps(receive_some, ready=False) == await _receive_steps(_trio_receive, ready=False)


PIPELINED = 5


async def _serving_steps(wrap: Callable[[trio.SocketStream], trio.abc.Stream]) -> int:
    """The steps of a connection's task that answers PIPELINED frames a client sent in one write."""
    client, server = await _tcp_pair()
    conn = KafkaConnection(wrap(server), listener="CLIENT", max_frame_size=1024, idle_timeout=30.0, peer=Peer("127.0.0.1", 5000))
    await client.send_all(b"".join(encode_frame(b"request %d" % n) for n in range(PIPELINED)))
    await trio.sleep(0.01)
    steps = _Steps()
    trio.lowlevel.add_instrument(steps)
    try:
        with conn.serving():
            for _ in range(PIPELINED):
                frame = await conn.receive_frame()
                assert frame is not None
                await conn.send(frame)
    finally:
        trio.lowlevel.remove_instrument(steps)
    answers = await _receive_exactly(client, sum(len(encode_frame(b"request %d" % n)) for n in range(PIPELINED)))
    assert answers == b"".join(encode_frame(b"request %d" % n) for n in range(PIPELINED))  # in request order
    await client.aclose()
    await server.aclose()
    return steps.steps


async def test_a_client_that_pipelines_is_answered_with_one_pass_of_the_run_loop_for_all_its_frames() -> None:
    # The frames of one read are handled before the next read; the answers' sends take no pass. The trio way (any
    # stream that is not plain TCP, as behind the PROXY protocol's wrapper) is the oracle: one pass more per answer.
    assert await _serving_steps(lambda stream: stream) == 1
    assert await _serving_steps(lambda stream: PrefixedStream(stream, b"")) == 1 + PIPELINED
