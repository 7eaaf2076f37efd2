"""Reading a connection's PROXY protocol header on the raw TCP stream, before TLS and before any Kafka byte.

The header is read by envelope.proxy_protocol's sans-IO reader, under one deadline for the whole header
(`proxy.protocol.header.timeout.ms`), so a peer trickling bytes cannot hold the connection. What arrived after
the header belongs to the client: `PrefixedStream` yields it first, then the socket's bytes, to the TLS handshake
or the Kafka framing.
"""

import ipaddress

import trio

from envelope.proxy_protocol import HeaderReader, NoHeader, ProxyHeader, ProxyHeaderError
from proxy.net.addresses import ProxiedBy
from proxy.net.connection import Peer

_RECEIVE_CHUNK = 4096
"""Enough for any v1 header and most v2 ones in one read; what comes after the header is handed on anyway."""


class PrefixedStream(trio.abc.Stream):
    """A stream that yields `prefix` before the bytes of `stream`; everything else is `stream`'s."""

    def __init__(self, stream: trio.abc.Stream, prefix: bytes) -> None:
        self.stream = stream
        self._prefix = prefix

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if not self._prefix:
            return bytes(await self.stream.receive_some(max_bytes))
        await trio.lowlevel.checkpoint()
        size = len(self._prefix) if max_bytes is None else max_bytes
        chunk, self._prefix = self._prefix[:size], self._prefix[size:]
        return chunk

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()


def with_prefix(stream: trio.abc.Stream, prefix: bytes) -> trio.abc.Stream:
    """`stream` itself when nothing is left over (the usual plaintext case costs no extra layer)."""
    return PrefixedStream(stream, prefix) if prefix else stream


async def read_header(stream: trio.abc.Stream, reader: HeaderReader, timeout: float) -> tuple[ProxyHeader | NoHeader, bytes]:
    """The header (or NO_HEADER when it is optional and absent) and the client's bytes that came after it;
    ProxyHeaderError when it is malformed, incomplete at the deadline or at the end of the stream. The loop ends:
    every read brings a byte or EOF, and the reader decides within its longest header."""
    try:
        with trio.fail_after(timeout):
            while True:
                data = await stream.receive_some(_RECEIVE_CHUNK)
                if not data:
                    raise ProxyHeaderError(f"the connection closed after {reader.buffered} bytes, before a complete PROXY protocol header")
                result = reader.feed(data)
                if result is not None:
                    return result, reader.leftover
    except trio.TooSlowError:
        raise ProxyHeaderError(f"no complete PROXY protocol header within {timeout:g} s ({reader.buffered} bytes came)") from None
    except (trio.BrokenResourceError, OSError) as exc:
        raise ProxyHeaderError(f"the connection broke before a complete PROXY protocol header: {exc!r}") from None


def client_peer(tcp_peer: Peer, header: ProxyHeader) -> Peer:
    """The client the header names, or the load balancer itself (LOCAL, UNKNOWN, UNSPEC, UNIX)."""
    tls = header.tls
    proxied_by = ProxiedBy(
        tcp_peer.host,
        tcp_peer.port,
        header.version,
        header.command,
        header.authority,
        tls.version if tls else None,
        tls.common_name if tls else None,
        tls.certificate_verified if tls else False,
    )
    if header.source is None:
        return Peer(tcp_peer.host, tcp_peer.port, proxied_by)
    address, port = header.source
    # One spelling per client, as for TCP peers: an IPv4-mapped IPv6 address is the IPv4 address (limits, filters, ACLs).
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return Peer(str(address.ipv4_mapped), port, proxied_by)
    return Peer(str(address), port, proxied_by)
