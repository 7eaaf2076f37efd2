"""`send_all` (proxy/net/connection.py) against trio's own `SocketStream.send_all`, its oracle: the same bytes arrive,
the same errors are raised, a cancellation is seen before anything is sent, and only the run loop's pass after a
send that did not block is gone."""

from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from proxy.net.connection import send_all

Sender = Callable[[trio.abc.Stream, bytes], Awaitable[None]]
LARGE = 8 * 1024 * 1024
"""More than loopback's socket buffers hold: the send must wait for the peer to read."""


async def _trio_way(stream: trio.abc.Stream, data: bytes) -> None:
    await stream.send_all(data)


SENDERS = pytest.mark.parametrize("send", [send_all, _trio_way], ids=["eager", "trio's oracle"])


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
    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1


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
