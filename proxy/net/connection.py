"""One accepted Kafka connection: framed reads under a deadline, serialized writes."""

import errno
import itertools
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import trio

from envelope.frames import FrameReader, encode_frame
from proxy.net.addresses import ProxiedBy
from proxy.net.ip_filter import IpAddress, parse_address

_RECEIVE_CHUNK = 65536
# How far a wait's deadline may sit from the one already set before it is moved: the answer sent just
# before set it (`send`), a few microseconds earlier than the wait would.
_DEADLINE_SLACK = 0.001
_connection_ids = itertools.count(1)
# What trio's SocketStream reads as "this socket was closed here" rather than "the peer broke the connection".
_CLOSED_ERRNOS = frozenset({errno.EBADF, errno.ENOTSOCK})


async def send_all(stream: trio.abc.Stream, data: bytes) -> None:
    """`stream.send_all(data)`, less the run loop's pass that trio takes after a send the kernel took at once.

    trio's socket send yields to the scheduler after every send that did not block, so that it looks as if it had:
    on the request path that is two passes of the run loop a request (the Envelope's send upstream, the answer's to
    the client) that wait for nothing, each a poll of the selector and a batch of the run loop. Here a plain TCP
    stream is written to directly: a cancellation already delivered is raised before anything is sent, as trio does;
    what the kernel cannot take waits for the socket to be writable, as trio does; errors are trio's stream errors
    (ClosedResourceError for a socket closed here, BrokenResourceError for a broken connection). The task still
    yields at every receive, so no task can keep the run loop. Callers send one frame at a time on a stream (the
    connection's send lock, a link's one exchange), which trio's own conflict check would otherwise enforce.
    Any other stream (TLS, the PROXY protocol's wrapper) sends the trio way: `stream.send_all`, the oracle of this.
    """
    if type(stream) is not trio.SocketStream:
        await stream.send_all(data)
        return
    await trio.lowlevel.checkpoint_if_cancelled()
    sock = stream.socket
    if sock.did_shutdown_SHUT_WR:
        raise trio.ClosedResourceError("can't send data after sending EOF")
    view = memoryview(data)
    try:
        while view:
            try:
                sent = os.write(sock.fileno(), view)
            except BlockingIOError:
                await sock.wait_writable()
                continue
            view = view[sent:]
    except OSError as exc:
        raise _stream_error(exc) from (None if exc.errno in _CLOSED_ERRNOS else exc)


async def receive_some(stream: trio.abc.Stream, max_bytes: int) -> bytes | bytearray:
    """`stream.receive_some(max_bytes)`, with the same passes of the run loop and less work around the read.

    trio's socket receive first tries the read, and on a request's two reads (its frame, the Envelope's answer) the
    bytes are nearly never there yet: a failed system call and a BlockingIOError each (about 5 µs), then the wait,
    then the read, through an error-translating context manager, an async one and two coroutines. Here a plain TCP
    stream waits until it is readable first, then reads: one pass of the run loop either way, as trio takes (bytes
    there at once are returned after one pass, so a client that pipelines cannot keep the run loop, and the frames
    of one read are handled before the next). The wait raises a delivered cancellation before anything is read, and
    ClosedResourceError when the socket is closed under it; other errors are trio's stream errors. Any other stream
    reads the trio way: `stream.receive_some`, the oracle of this.
    """
    if type(stream) is not trio.SocketStream:
        return await stream.receive_some(max_bytes)
    sock = stream.socket
    if sock.fileno() == -1:
        await trio.lowlevel.checkpoint_if_cancelled()
        raise trio.ClosedResourceError("this socket was already closed")
    while True:
        await trio.lowlevel.wait_readable(sock)
        try:
            return os.read(sock.fileno(), max_bytes)
        except BlockingIOError:
            continue  # readable, yet nothing to read: wait again, as trio does
        except OSError as exc:
            raise _stream_error(exc) from (None if exc.errno in _CLOSED_ERRNOS else exc)


def _stream_error(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    """trio's SocketStream's stream error for a socket's OSError."""
    if exc.errno in _CLOSED_ERRNOS:
        return trio.ClosedResourceError("this socket was already closed")
    return trio.BrokenResourceError(f"socket connection broken: {exc}")


class _Expiring(Protocol):
    async def expire(self) -> None:
        """Its deadline passed: end its wait."""
        ...


class DeadlineWatch:
    """The deadlines of many waits, kept by one task instead of a cancel scope per wait: a listener's connections (the
    next frame, the answer's send), a controller pool's round trips and requests waiting for a connection.

    As a Kafka broker sweeps its connections in its poll loop rather than setting a timer per request: entering and
    leaving a trio cancel scope with a deadline costs a heap push and pop and two context managers, on every request.
    Here a wait only notes its deadline (`watch`); the watch's task sleeps until the earliest one noted and ends each
    wait still going after its deadline, at the same moment and with the same result as its own scope did: a round
    trip's link is closed under it (LinkBroken, "no answer in time"), a wait for a controller connection is told none
    came, a client connection's loop ends as its own deadline ended it (`KafkaConnection.serving`).
    Deadlines noted later than the one the task sleeps to (nearly all: each is `now` plus a timeout) cost the note.
    """

    def __init__(self) -> None:
        self._due: dict[_Expiring, float] = {}
        self._alarm: trio.CancelScope | None = None
        """The task's sleep until the earliest deadline; None while the task is not running (waits keep their own scope)."""

    def watch(self, waiting: _Expiring, deadline: float, now: float | None = None) -> bool:
        """Note a wait until `deadline`; False when the task is not running (the caller keeps its own scope). `now`: trio's
        time, when the caller has just read it (to make `deadline` of it), so that it is not read again."""
        alarm = self._alarm
        if alarm is None or deadline <= (trio.current_time() if now is None else now):
            return False  # a deadline already past: the scope cancels before anything is sent, as it always did
        self._due[waiting] = deadline
        if deadline < alarm.deadline:
            alarm.deadline = deadline
        return True

    def done(self, waiting: _Expiring) -> None:
        self._due.pop(waiting, None)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """End every wait that outlives its deadline, until cancelled; on the way out, the waits still watched are ended
        too, so that none is left without a bound."""
        task_status.started()
        try:
            while True:
                with trio.CancelScope(deadline=min(self._due.values(), default=math.inf)) as self._alarm:
                    await trio.sleep_forever()
                now = trio.current_time()
                for waiting in [waiting for waiting, due in self._due.items() if due <= now]:
                    self._due.pop(waiting, None)
                    await waiting.expire()
        finally:
            self._alarm = None
            with trio.CancelScope(shield=True):
                while self._due:
                    waiting, _ = self._due.popitem()
                    await waiting.expire()


def next_connection_id(listener: str) -> str:
    return f"{listener}-{next(_connection_ids)}"


@dataclass
class Peer:
    """Who a connection is: the TCP peer, or the client a trusted load balancer named (`proxied_by` is then the
    load balancer). Every limit, filter, Envelope and record uses `host` and `port`."""

    host: str
    port: int
    proxied_by: ProxiedBy | None = None

    def __str__(self) -> str:
        """For logs: `host:port`, and `via` the load balancer when there is one."""
        return f"{self.host}:{self.port}" + (f" via {self.proxied_by}" if self.proxied_by is not None else "")

    @classmethod
    def of(cls, stream: trio.SocketStream) -> "Peer":
        """The TCP peer of an accepted socket, its host normalised (IPv4-mapped IPv6 unwrapped, zone dropped); OSError
        when the peer has already gone."""
        host, port, *_ = stream.socket.getpeername()
        parsed = parse_address(host)
        return cls(str(parsed) if parsed is not None else host, int(port))

    @property
    def address(self) -> IpAddress:
        """The peer's address, normalised once for everyone: IPv4-mapped IPv6 unwrapped, zone dropped."""
        parsed = parse_address(self.host)
        if parsed is None:
            raise ValueError(f"peer {self.host!r} is not an IP address")
        return parsed


class KafkaConnection:
    def __init__(
        self,
        stream: trio.abc.Stream,
        *,
        listener: str,
        max_frame_size: int,
        idle_timeout: float,
        peer: Peer | None = None,
        watch: DeadlineWatch | None = None,
    ) -> None:
        """`stream` is the TCP stream, or the TLS stream over it; `peer` is the TCP peer (read from the socket when None).
        `watch`: the listener's, which keeps the deadlines inside `serving()` while it runs."""
        self.stream = stream
        self.listener = listener
        self.connection_id = next_connection_id(listener)
        self.reader = FrameReader(max_frame_size)
        self.idle_timeout = idle_timeout
        self.idle_expired = False
        """True once `receive_frame` gave up on an idle peer (connections.max.idle.ms), for the audit's disconnect cause."""
        self._send_lock = trio.Lock()
        self._waiting: trio.CancelScope | None = None
        """The deadline scope of a `receive_frame` in progress outside `serving()`."""
        self._deadlines: trio.CancelScope | None = None
        """Inside `serving()`: the connection's one deadline scope."""
        self._receiving = False
        self._sending = False
        self._stop_waiting = False
        self._watch = watch
        if peer is None:
            assert isinstance(stream, trio.SocketStream), "a TLS stream needs its TCP peer passed in"
            peer = Peer.of(stream)
        self.peer = peer

    async def receive_frame(self, timeout: float | None = None) -> bytes | None:
        """The next frame, or None when the peer closed or did not send a whole frame in time.

        The deadline (`timeout`, else the idle timeout) covers the whole frame, not
        each read: a peer trickling one byte at a time cannot hold the connection.
        Raises FrameSizeError for a size prefix out of bounds. `stop_waiting` ends the wait early, with None.
        Inside `serving()` a deadline that passes ends the session loop instead (see there).
        """
        if self._stop_waiting:
            return None
        wait = self.idle_timeout if timeout is None else timeout
        deadlines = self._deadlines
        if deadlines is None:
            return await self._receive_alone(wait)
        # Inside `serving()`, every request's wait: the frame read here, not in two more coroutines.
        now = trio.current_time()
        deadline = now + wait
        watch = self._watch
        watched = watch is not None and watch.watch(self, deadline, now)
        # Else the answer just sent set about this deadline already (see `send`): a deadline moved costs a third
        # of a new cancel scope, one left alone costs nothing.
        if not watched and abs(deadlines.deadline - deadline) > _DEADLINE_SLACK:
            deadlines.deadline = deadline
        self._receiving = True
        reader = self.reader
        try:
            while (frame := reader.next_frame()) is None:
                data = await receive_some(self.stream, _RECEIVE_CHUNK)
                if not data:
                    break
                reader.feed(bytes(data))
        finally:
            self._receiving = False
        if deadlines.cancel_called:
            return None  # `stop_waiting` came as the frame did: without this, the request would meet the cancellation
        # No deadline while a request is handled: what bounds it is the forwarding's own deadlines and the audit's.
        if watched:
            assert watch is not None
            watch.done(self)
        else:
            deadlines.deadline = math.inf
        return frame

    async def _receive_alone(self, wait: float) -> bytes | None:
        """`receive_frame` outside `serving()`: under a cancel scope of its own."""
        with trio.move_on_after(wait) as self._waiting:
            frame = await self._next_frame()
            self._waiting = None
            return frame
        self._waiting = None
        self.idle_expired = not self._stop_waiting
        return None

    async def _next_frame(self) -> bytes | None:
        while (frame := self.reader.next_frame()) is None:
            data = await receive_some(self.stream, _RECEIVE_CHUNK)
            if not data:
                return None
            self.reader.feed(bytes(data))
        return frame

    @contextmanager
    def serving(self) -> Iterator[None]:
        """The session loop's deadlines, in one cancel scope for the connection instead of one per wait.

        Each `receive_frame` moves the scope's deadline to its own, each request's handling has none, and
        each answer's `send` has until `connections.max.idle.ms`, as in Kafka, where a connection that makes
        no progress, reading or writing, is closed when it has been idle that long. A wait that runs out
        (or that `stop_waiting` ends) ends the loop quietly, as `receive_frame` returning None does; an
        answer that could not be sent in time raises TooSlowError. A trio cancel scope costs about 10 µs
        to enter and leave, two per request; moving a deadline about 3 µs.
        """
        with trio.CancelScope() as scope:
            self._deadlines = scope
            try:
                yield
            finally:
                self._deadlines = None
                if self._watch is not None:
                    self._watch.done(self)
        if scope.cancelled_caught:
            if self._sending:
                raise trio.TooSlowError
            self.idle_expired = not self._stop_waiting

    async def expire(self) -> None:
        """Its wait inside `serving()` outlived its deadline, as the listener's `DeadlineWatch` keeps it: the loop ends
        as it does when the scope's own deadline passes."""
        if self._deadlines is not None:
            self._deadlines.cancel()

    def stop_waiting(self) -> None:
        """The proxy closes the connection: a `receive_frame` waiting now, or called later, returns None."""
        self._stop_waiting = True
        if self._waiting is not None:
            self._waiting.cancel()
        if self._deadlines is not None and self._receiving:
            self._deadlines.cancel()

    async def send(self, payload: bytes, *, timeout: float = 30.0) -> None:
        """Send one frame; TooSlowError after `timeout`, or inside `serving()` after the idle timeout."""
        # Uncontended (the usual case: one request at a time), the lock is taken without the scheduler pass
        # that `async with` costs; `send_all` takes none either when the kernel takes the frame at once.
        try:
            self._send_lock.acquire_nowait()
        except trio.WouldBlock:
            await self._send_lock.acquire()
        try:
            if self._deadlines is not None:
                now = trio.current_time()
                due = now + self.idle_timeout
                if self._watch is None or not self._watch.watch(self, due, now):
                    self._deadlines.deadline = due
                self._sending = True
                await send_all(self.stream, encode_frame(payload))
                self._sending = False
                return
            with trio.CancelScope(deadline=trio.current_time() + timeout) as sending:
                await send_all(self.stream, encode_frame(payload))
        finally:
            self._send_lock.release()
        if sending.cancelled_caught:
            raise trio.TooSlowError

    async def aclose(self) -> None:
        with trio.move_on_after(1) as scope:
            scope.shield = True
            await self.stream.aclose()
