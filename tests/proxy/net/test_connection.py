"""KafkaConnection: whole frames under one deadline, an idle peer, and the proxy ending a wait."""

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from envelope.frames import encode_frame
from proxy.net.connection import DeadlineWatch, KafkaConnection, Peer

IDLE = 30.0
_watch: DeadlineWatch | None = None
"""The listener's watch the connections of a test are given, or None: every test runs both ways."""


@pytest.fixture(autouse=True, params=[False, True], ids=["own scope", "listener's watch"])
async def _watched(request: pytest.FixtureRequest, nursery: trio.Nursery) -> AsyncIterator[None]:
    # A listener's DeadlineWatch keeps the deadlines inside serving() instead of the scope's own: the same moments,
    # the same ends. Without a running watch (a connection made alone) the scope keeps them, as it always did.
    global _watch
    _watch = None
    if request.param:
        _watch = DeadlineWatch()
        await nursery.start(_watch.run)
    yield
    _watch = None


def connection() -> tuple[KafkaConnection, trio.abc.Stream]:
    client, server = trio.testing.memory_stream_pair()
    conn = KafkaConnection(server, listener="CLIENT", max_frame_size=1024, idle_timeout=IDLE, peer=Peer("127.0.0.1", 5000), watch=_watch)
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


# -- inside serving(): one deadline scope for the session loop ---------------------------------


async def test_serving_ends_quietly_when_the_peer_idles_past_the_deadline(autojump_clock: trio.testing.MockClock) -> None:
    conn, client = connection()
    await client.send_all(encode_frame(b"first"))
    frames: list[bytes | None] = []
    began = trio.current_time()
    with conn.serving():
        while True:
            frames.append(await conn.receive_frame())
    assert frames == [b"first"]
    assert trio.current_time() - began == IDLE
    assert conn.idle_expired


async def test_serving_puts_no_deadline_on_handling_a_request(autojump_clock: trio.testing.MockClock) -> None:
    conn, client = connection()
    await client.send_all(encode_frame(b"slow"))
    with conn.serving():
        assert await conn.receive_frame(timeout=1.0) == b"slow"
        await trio.sleep(10 * IDLE)  # a forward waiting for its controller, an intent waiting for the audit
        handled = True
    assert handled
    assert not conn.idle_expired


async def test_serving_gives_each_wait_its_own_timeout(autojump_clock: trio.testing.MockClock) -> None:
    conn, client = connection()
    with conn.serving():
        await client.send_all(encode_frame(b"one"))
        assert await conn.receive_frame(timeout=2.0) == b"one"
        await trio.sleep(5.0)  # longer than the first wait's timeout: handling has no deadline
        began = trio.current_time()
        assert await conn.receive_frame(timeout=3.0) is None
    assert trio.current_time() - began == 3.0
    assert conn.idle_expired


async def test_serving_stop_waiting_ends_a_wait_without_calling_the_peer_idle(autojump_clock: trio.testing.MockClock) -> None:
    conn, _ = connection()
    returned: list[str] = []

    async def loop() -> None:
        with conn.serving():
            await conn.receive_frame()
            returned.append("a frame")
        returned.append("ended")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(loop)
        await trio.sleep(1)
        began = trio.current_time()
        conn.stop_waiting()
    assert returned == ["ended"]
    assert trio.current_time() == began
    assert not conn.idle_expired


async def test_serving_stop_waiting_during_a_request_lets_it_finish() -> None:
    conn, client = connection()
    await client.send_all(encode_frame(b"in flight"))
    answered = False
    with trio.fail_after(5):
        with conn.serving():
            assert await conn.receive_frame() == b"in flight"
            conn.stop_waiting()
            await trio.sleep(0)  # a checkpoint while the request is handled: it is not cancelled
            await conn.send(b"answer")
            answered = True
            assert await conn.receive_frame() is None
        assert await client.receive_some() == encode_frame(b"answer")
    assert answered
    assert not conn.idle_expired


async def test_serving_stop_waiting_as_a_frame_arrives_never_cuts_a_request_in_half() -> None:
    conn, client = connection()
    started: list[bytes] = []
    finished: list[bytes] = []

    async def loop() -> None:
        with conn.serving():
            while (frame := await conn.receive_frame()) is not None:
                started.append(frame)
                await trio.sleep(0)  # handling: the intent, the forward, the outcome
                finished.append(frame)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(loop)
            await trio.testing.wait_all_tasks_blocked()
            await client.send_all(encode_frame(b"arriving"))  # wakes the loop's read...
            conn.stop_waiting()  # ...and the proxy closes the connection before the loop runs again
    assert started == finished
    assert not conn.idle_expired


async def test_serving_an_answer_the_peer_does_not_read_times_out_after_the_idle_timeout(autojump_clock: trio.testing.MockClock) -> None:
    _client, server = trio.testing.lockstep_stream_pair()  # send_all waits for the peer to read
    conn = KafkaConnection(server, listener="CLIENT", max_frame_size=1024, idle_timeout=IDLE, peer=Peer("127.0.0.1", 5000), watch=_watch)
    began = trio.current_time()
    with pytest.raises(trio.TooSlowError):
        with conn.serving():
            await conn.send(b"an answer nobody reads")
    assert trio.current_time() - began == IDLE
