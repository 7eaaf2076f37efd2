"""PROXY protocol v2 (doc/proxy-protocol.txt section 2.2): 16 fixed bytes, an address block, then TLVs.

Every length is checked against the bytes it claims before anything is read from them: the header's own
`len` against MAX_PAYLOAD (refused before waiting for the bytes), the address block against `len`, each
TLV (and each sub-TLV of PP2_TYPE_SSL) against what is left of its parent. Unknown TLV types are skipped;
PP2_TYPE_CRC32C is checked when present; PP2_TYPE_AUTHORITY and PP2_TYPE_SSL (version and CN) are kept for
the audit.
"""

import ipaddress
import struct

from envelope.proxy_protocol.crc32c import crc32c
from envelope.proxy_protocol.model import LOCAL, PROXY, Command, IpAddress, ProxyHeader, ProxyHeaderError, TlsInfo

SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
FIXED_LENGTH = 16
MAX_PAYLOAD = 16384
"""Our cap on `len` (the spec allows 65535): room for addresses, AWS/GCP/Azure TLVs and an SSL TLV with a client
certificate chain of a few kilobytes. A larger header is refused as soon as its fixed part has arrived."""

_VERSION = 0x2
_COMMANDS: dict[int, Command] = {0x0: LOCAL, 0x1: PROXY}
# Byte 14, family and transport: the only seven values the spec defines.
_UNSPEC = 0x00
_TCP_OVER_IPV4, _UDP_OVER_IPV4 = 0x11, 0x12
_TCP_OVER_IPV6, _UDP_OVER_IPV6 = 0x21, 0x22
_UNIX_STREAM, _UNIX_DGRAM = 0x31, 0x32
_ADDRESS_BLOCK = {
    _UNSPEC: 0,
    _TCP_OVER_IPV4: 12,
    _UDP_OVER_IPV4: 12,
    _TCP_OVER_IPV6: 36,
    _UDP_OVER_IPV6: 36,
    _UNIX_STREAM: 216,
    _UNIX_DGRAM: 216,
}
_IPV4_BYTES, _IPV6_BYTES = 4, 16
_PORT_PAIR = struct.Struct(">HH")

_TLV_HEADER = struct.Struct(">BH")
TYPE_ALPN = 0x01
TYPE_AUTHORITY = 0x02
TYPE_CRC32C = 0x03
TYPE_NOOP = 0x04
TYPE_UNIQUE_ID = 0x05
TYPE_SSL = 0x20
SUBTYPE_SSL_VERSION = 0x21
SUBTYPE_SSL_CN = 0x22
_CRC32C_LENGTH = 4
_UNIQUE_ID_MAX = 128
_AUTHORITY_MAX = 255  # a DNS name, as TLS SNI carries it
_TEXT_MAX = 255  # SSL version and CN: what the audit keeps of them
_SSL_FIXED = struct.Struct(">BI")  # client bits, verify


def check_fixed(head: bytes | bytearray) -> int:
    """Validate the 16 fixed bytes; the whole header's length (16 + len)."""
    if head[:12] != SIGNATURE:
        raise ProxyHeaderError("not a PROXY v2 signature")
    version, command = head[12] >> 4, head[12] & 0x0F
    if version != _VERSION or command not in _COMMANDS:
        raise ProxyHeaderError(f"PROXY v2 header: version/command byte 0x{head[12]:02x} (expected 0x20 LOCAL or 0x21 PROXY)")
    if head[13] not in _ADDRESS_BLOCK:
        raise ProxyHeaderError(f"PROXY v2 header: family/transport byte 0x{head[13]:02x} is not one the protocol defines")
    length = int.from_bytes(head[14:16], "big")
    if length > MAX_PAYLOAD:
        raise ProxyHeaderError(f"PROXY v2 header: length {length} is above this proxy's limit of {MAX_PAYLOAD} bytes")
    return FIXED_LENGTH + length


def _endpoints(family: int, block: bytes) -> tuple[tuple[IpAddress, int], tuple[IpAddress, int]] | None:
    """Source and destination for TCP over IPv4 or IPv6; None for what falls back to the real endpoints."""
    size = _IPV4_BYTES if family == _TCP_OVER_IPV4 else _IPV6_BYTES if family == _TCP_OVER_IPV6 else 0
    if not size:
        return None  # UNSPEC, UNIX, or a datagram family on a stream connection: the spec's fallback to UNSPEC
    make = ipaddress.IPv4Address if size == _IPV4_BYTES else ipaddress.IPv6Address
    source, destination = make(block[:size]), make(block[size : 2 * size])
    source_port, destination_port = _PORT_PAIR.unpack_from(block, 2 * size)
    return (source, source_port), (destination, destination_port)


def _tlvs(data: bytes, start: int, end: int, what: str) -> list[tuple[int, int, int]]:
    """(type, value start, value end) of each TLV in data[start:end], every length bounded by its parent."""
    found = []
    offset = start
    while offset < end:
        if end - offset < _TLV_HEADER.size:
            raise ProxyHeaderError(f"PROXY v2 header: {end - offset} stray bytes at the end of the {what}")
        kind, length = _TLV_HEADER.unpack_from(data, offset)
        value = offset + _TLV_HEADER.size
        if value + length > end:
            raise ProxyHeaderError(f"PROXY v2 header: {what} entry 0x{kind:02x} claims {length} bytes, {end - value} are left")
        found.append((kind, value, value + length))
        offset = value + length
    return found


def _text(data: bytes, what: str, limit: int) -> str:
    if len(data) > limit:
        raise ProxyHeaderError(f"PROXY v2 header: {what} is {len(data)} bytes, more than {limit}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProxyHeaderError(f"PROXY v2 header: {what} is not UTF-8") from None


def _ssl(data: bytes, start: int, end: int) -> TlsInfo:
    if end - start < _SSL_FIXED.size:
        raise ProxyHeaderError("PROXY v2 header: the SSL TLV is shorter than its client and verify fields")
    client, verify = _SSL_FIXED.unpack_from(data, start)
    version = common_name = None
    for kind, first, last in _tlvs(data, start + _SSL_FIXED.size, end, "SSL TLV"):
        if kind == SUBTYPE_SSL_VERSION:
            version = _text(data[first:last], "the SSL version", _TEXT_MAX)
        elif kind == SUBTYPE_SSL_CN:
            common_name = _text(data[first:last], "the SSL client CN", _TEXT_MAX)
    return TlsInfo(client, verify, version, common_name)


def parse_v2(header: bytes) -> ProxyHeader:
    """A whole header (16 + len bytes, `check_fixed` passed) as a ProxyHeader; ProxyHeaderError when invalid."""
    command = _COMMANDS[header[12] & 0x0F]
    family = header[13]
    block = _ADDRESS_BLOCK[family]
    if len(header) - FIXED_LENGTH < block:
        if command == PROXY:
            raise ProxyHeaderError(f"PROXY v2 header: length {len(header) - FIXED_LENGTH} is shorter than its {block}-byte address block")
        # LOCAL: the spec says to discard the block and the family; without room for them there are no TLVs either.
        return ProxyHeader(2, LOCAL, None, None, len(header))
    endpoints = _endpoints(family, header[FIXED_LENGTH : FIXED_LENGTH + block]) if command == PROXY else None
    authority: str | None = None
    tls: TlsInfo | None = None
    for kind, first, last in _tlvs(header, FIXED_LENGTH + block, len(header), "TLV list"):
        if kind == TYPE_CRC32C:
            if last - first != _CRC32C_LENGTH:
                raise ProxyHeaderError(f"PROXY v2 header: the CRC32C TLV has {last - first} bytes, not {_CRC32C_LENGTH}")
            zeroed = header[:first] + bytes(_CRC32C_LENGTH) + header[last:]
            if crc32c(zeroed) != int.from_bytes(header[first:last], "big"):
                raise ProxyHeaderError("PROXY v2 header: CRC32C mismatch")
        elif kind == TYPE_AUTHORITY:
            authority = _text(header[first:last], "the authority", _AUTHORITY_MAX)
        elif kind == TYPE_UNIQUE_ID and last - first > _UNIQUE_ID_MAX:
            raise ProxyHeaderError(f"PROXY v2 header: unique id of {last - first} bytes, more than {_UNIQUE_ID_MAX}")
        elif kind == TYPE_SSL:
            tls = _ssl(header, first, last)
        # ALPN, NOOP, NETNS, the cloud vendors' and every other type: skipped, within its bounds.
    source, destination = endpoints if endpoints is not None else (None, None)
    return ProxyHeader(2, command, source, destination, len(header), authority, tls)
