"""KafkaConnection: whole frames under one deadline, an idle peer, and the proxy ending a wait."""

import trio
import trio.testing

from envelope.frames import encode_frame
from proxy.net.connection import KafkaConnection, Peer

IDLE = 30.0


def connection() -> tuple[KafkaConnection, trio.abc.Stream]:
    client, server = trio.testing.memory_stream_pair()
    conn = KafkaConnection(server, listener="CLIENT", max_frame_size=1024, idle_timeout=IDLE, peer=Peer("127.0.0.1", 5000))
    return conn, client


async def test_a_frame_sent_byte_by_byte_arrives_whole() -> None:
    conn, client = connection()
    for byte in encode_frame(b"request"):
        await client.send_all(bytes([byte]))
    assert await conn.receive_frame() == b"request"
    assert not conn.idle_expired


async def test_an_idle_peer_is_given_up_on_at_the_deadline(autojump_clock: trio.testing.MockClock) -> None:
    conn, _ = connection()
    began = trio.current_time()
    assert await conn.receive_frame() is None
    assert trio.current_time() - began == IDLE
    assert conn.idle_expired


async def test_stop_waiting_ends_a_wait_in_progress_without_calling_the_peer_idle(autojump_clock: trio.testing.MockClock) -> None:
    conn, _ = connection()
    returned: list[bytes | None] = []

    async def wait() -> None:
        returned.append(await conn.receive_frame())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.sleep(1)
        began = trio.current_time()
        conn.stop_waiting()
    assert returned == [None]
    assert trio.current_time() == began  # at once, not at the idle deadline
    assert not conn.idle_expired


async def test_after_stop_waiting_no_further_frame_is_read() -> None:
    conn, client = connection()
    await client.send_all(encode_frame(b"first") + encode_frame(b"second"))
    assert await conn.receive_frame() == b"first"
    conn.stop_waiting()  # between requests: the next one is not taken
    assert await conn.receive_frame() is None
