"""Length-prefixed Kafka frames from arbitrarily chunked bytes."""

import struct

from envelope.errors import FrameSizeError

DEFAULT_MAX_FRAME_SIZE = 104_857_600  # socket.request.max.bytes default
_SIZE = struct.Struct(">i")


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


class FrameReader:
    """Accumulates bytes and yields whole frames (without their size prefix).

    The limit is checked as soon as the 4-byte prefix is known, before any
    buffering of the body, so a hostile size cannot make us allocate.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def next_frame(self) -> bytes | None:
        """Return the next whole frame, or None if more bytes are needed."""
        if len(self._buffer) < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buffer)
        if size < 0 or size > self.max_frame_size:
            raise FrameSizeError(size, self.max_frame_size)
        end = 4 + size
        if len(self._buffer) < end:
            return None
        frame = bytes(self._buffer[4:end])
        del self._buffer[:end]
        return frame

    def frames(self) -> list[bytes]:
        """Every whole frame currently buffered."""
        out = []
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        return out
