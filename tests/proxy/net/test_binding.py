"""socket.reuse.port: several proxy processes on one port, the kernel spreading connections over them."""

import errno
import socket

import pytest
import trio

from proxy.net.binding import open_listeners

CONNECTIONS = 32  # all 32 landing on one of two sockets by chance: about 1 in 2 billion


async def test_without_reuse_port_a_second_listener_on_the_port_fails() -> None:
    first = await open_listeners("127.0.0.1", 0, reuse_port=False)
    try:
        with pytest.raises(OSError) as error:
            await open_listeners("127.0.0.1", first[0].socket.getsockname()[1], reuse_port=False)
        assert error.value.errno == errno.EADDRINUSE
    finally:
        for listener in first:
            await listener.aclose()


async def test_with_reuse_port_two_listeners_share_the_port_and_both_take_connections() -> None:
    first = await open_listeners("127.0.0.1", 0, reuse_port=True)
    port = first[0].socket.getsockname()[1]
    second = await open_listeners("127.0.0.1", port, reuse_port=True)
    assert second[0].socket.getsockname()[1] == port
    accepted = {"first": 0, "second": 0}

    async def accept(name: str, listener: trio.SocketListener) -> None:
        while True:
            stream = await listener.accept()
            accepted[name] += 1
            await stream.send_all(name.encode())  # the connection is served by the listener that took it
            await stream.aclose()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(accept, "first", first[0])
            nursery.start_soon(accept, "second", second[0])
            answers = []
            for _ in range(CONNECTIONS):
                client = await trio.open_tcp_stream("127.0.0.1", port)
                answers.append(await client.receive_some(16))
                await client.aclose()
            nursery.cancel_scope.cancel()
    for listener in first + second:
        await listener.aclose()
    assert accepted["first"] + accepted["second"] == CONNECTIONS
    assert accepted["first"] > 0 and accepted["second"] > 0
    assert sorted(set(answers)) == [b"first", b"second"]


async def test_reuse_port_listeners_are_real_listening_sockets_with_the_option_set() -> None:
    listeners = await open_listeners("127.0.0.1", 0, reuse_port=True)
    try:
        sock = listeners[0].socket
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
    finally:
        for listener in listeners:
            await listener.aclose()
