"""Bytes in, at most one PROXY protocol header out, and the bytes after it handed back untouched.

Fed whole, in pieces or a byte at a time, the reader decides as early as the bytes allow: which version the
first bytes start (v1 `PROXY `, v2's 12-byte signature, or neither), a v2 length over the cap, a byte no v1
line may hold. What it keeps is bounded by the longest header it accepts; what arrives after the header in
the same piece is `leftover`, the client's first bytes, for TLS or the Kafka framing.
"""

from dataclasses import dataclass
from typing import Final

from envelope.proxy_protocol import v1, v2
from envelope.proxy_protocol.model import ProxyHeader, ProxyHeaderError

VERSIONS: Final = frozenset({1, 2})


@dataclass(frozen=True, slots=True)
class NoHeader:
    """The connection starts with something other than a header (allowed when the header is optional)."""


NO_HEADER: Final = NoHeader()


def _starts(buffer: bytes | bytearray, prefix: bytes) -> bool:
    """Whether the buffer so far is consistent with starting with `prefix` (it may be shorter than it)."""
    shared = min(len(buffer), len(prefix))
    return bytes(buffer[:shared]) == prefix[:shared]


class HeaderReader:
    """One connection's header. `feed` until it returns the header (or NO_HEADER); then `leftover` holds the
    bytes that followed it. Raises ProxyHeaderError for anything this listener must not accept."""

    def __init__(self, versions: frozenset[int] = VERSIONS, *, optional: bool = False) -> None:
        if not versions or not versions <= VERSIONS:
            raise ValueError(f"versions must be a non-empty subset of {sorted(VERSIONS)}")
        self.versions = versions
        self.optional = optional
        self.leftover = b""
        self._buffer = bytearray()
        self._done = False

    @property
    def buffered(self) -> int:
        """Bytes held so far (a caller's progress report; never more than the longest header plus one piece)."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> ProxyHeader | NoHeader | None:
        """None while more bytes are needed."""
        if self._done:
            raise RuntimeError("the header has already been read")
        self._buffer += data
        if not self._buffer:
            return None
        if _starts(self._buffer, v2.SIGNATURE):
            return self._v2()
        if _starts(self._buffer, v1.PREFIX):
            return self._v1()
        if self.optional:
            return self._finish(NO_HEADER, 0)
        raise ProxyHeaderError(f"the connection does not start with a PROXY protocol header (first byte 0x{self._buffer[0]:02x})")

    def _refuse_version(self, version: int) -> None:
        if version not in self.versions:
            expected = " or ".join(f"v{number}" for number in sorted(self.versions))
            raise ProxyHeaderError(f"a PROXY protocol v{version} header where this listener accepts {expected}")

    def _v1(self) -> ProxyHeader | NoHeader | None:
        if len(self._buffer) < len(v1.PREFIX):
            return None
        self._refuse_version(1)
        header = v1.parse_v1(self._buffer)
        return None if header is None else self._finish(header, header.length)

    def _v2(self) -> ProxyHeader | NoHeader | None:
        if len(self._buffer) < len(v2.SIGNATURE):
            return None
        self._refuse_version(2)
        if len(self._buffer) < v2.FIXED_LENGTH:
            return None
        length = v2.check_fixed(self._buffer)
        if len(self._buffer) < length:
            return None
        header = v2.parse_v2(bytes(self._buffer[:length]))
        return self._finish(header, length)

    def _finish(self, header: ProxyHeader | NoHeader, length: int) -> ProxyHeader | NoHeader:
        self.leftover = bytes(self._buffer[length:])
        self._buffer.clear()
        self._done = True
        return header
