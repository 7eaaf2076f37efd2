"""One accepted Kafka connection: framed reads under a deadline, serialized writes."""

import itertools
from dataclasses import dataclass

import trio

from envelope.frames import FrameReader, encode_frame
from proxy.net.ip_filter import IpAddress, parse_address

_RECEIVE_CHUNK = 65536
_connection_ids = itertools.count(1)


def next_connection_id(listener: str) -> str:
    return f"{listener}-{next(_connection_ids)}"


@dataclass
class Peer:
    host: str
    port: int

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
    ) -> None:
        """`stream` is the TCP stream, or the TLS stream over it; `peer` is the TCP peer (read from the socket when None)."""
        self.stream = stream
        self.listener = listener
        self.connection_id = next_connection_id(listener)
        self.reader = FrameReader(max_frame_size)
        self.idle_timeout = idle_timeout
        self.idle_expired = False
        """True once `receive_frame` gave up on an idle peer (connections.max.idle.ms), for the audit's disconnect cause."""
        self._send_lock = trio.Lock()
        self._waiting: trio.CancelScope | None = None
        self._stop_waiting = False
        if peer is None:
            assert isinstance(stream, trio.SocketStream), "a TLS stream needs its TCP peer passed in"
            peer = Peer.of(stream)
        self.peer = peer

    async def receive_frame(self, timeout: float | None = None) -> bytes | None:
        """The next frame, or None when the peer closed or did not send a whole frame in time.

        The deadline (`timeout`, else the idle timeout) covers the whole frame, not
        each read: a peer trickling one byte at a time cannot hold the connection.
        Raises FrameSizeError for a size prefix out of bounds. `stop_waiting` ends the wait early, with None.
        """
        if self._stop_waiting:
            return None
        with trio.move_on_after(self.idle_timeout if timeout is None else timeout) as self._waiting:
            while (frame := self.reader.next_frame()) is None:
                data = await self.stream.receive_some(_RECEIVE_CHUNK)
                if not data:
                    return None
                self.reader.feed(bytes(data))
            return frame
        self.idle_expired = self._waiting.cancelled_caught and not self._stop_waiting
        return None

    def stop_waiting(self) -> None:
        """The proxy closes the connection: a `receive_frame` waiting now, or called later, returns None.

        The wait's own deadline scope is cancelled, so a request costs one cancel scope, not two."""
        self._stop_waiting = True
        if self._waiting is not None:
            self._waiting.cancel()

    async def send(self, payload: bytes, *, timeout: float = 30.0) -> None:
        # Uncontended (the usual case: one request at a time), the lock is taken without the scheduler pass
        # that `async with` costs; send_all checkpoints anyway.
        try:
            self._send_lock.acquire_nowait()
        except trio.WouldBlock:
            await self._send_lock.acquire()
        try:
            # A bare cancel scope: fail_after's generator wrapper costs more than the scope itself, on every answer.
            with trio.CancelScope(deadline=trio.current_time() + timeout) as sending:
                await self.stream.send_all(encode_frame(payload))
        finally:
            self._send_lock.release()
        if sending.cancelled_caught:
            raise trio.TooSlowError

    async def aclose(self) -> None:
        with trio.move_on_after(1) as scope:
            scope.shield = True
            await self.stream.aclose()
