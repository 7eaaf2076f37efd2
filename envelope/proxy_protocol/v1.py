"""PROXY protocol v1 (doc/proxy-protocol.txt section 2.1): one text line, `PROXY TCP4 src dst sport dport\r\n`.

Strict: exactly one space between fields, dotted-quad IPv4 without leading zeros, IPv6 hex groups with at
most one `::`, ports 0-65535 without leading zeros, an address of the family the line names, and the line
ends at the first CRLF within 107 bytes. A byte no valid line holds (a control character, a lone CR or LF,
anything beyond ASCII) fails the header as soon as it arrives, not 107 bytes later.
"""

import ipaddress
import re

from envelope.proxy_protocol.model import PROXY, IpAddress, ProxyHeader, ProxyHeaderError

PREFIX = b"PROXY "
MAX_LENGTH = 107
"""The longest line the spec allows, CRLF included (`PROXY UNKNOWN` with two IPv6 addresses)."""
_CRLF = b"\r\n"
_PORT = re.compile(r"0|[1-9][0-9]{0,4}")
_MAX_PORT = 65535
_IPV4_TEXT = re.compile(r"[0-9.]{7,15}")
_IPV6_TEXT = re.compile(r"[0-9A-Fa-f:.]{2,45}")
_PRINTABLE_FIRST, _PRINTABLE_LAST = 0x20, 0x7E
_TCP4, _TCP6, _UNKNOWN = "TCP4", "TCP6", "UNKNOWN"
_FIELDS_AFTER_PROTOCOL = 4


def _check_bytes(line: bytes) -> None:
    """Fail early on a byte no header line may hold (`line` is what came before the CRLF, or before a last CR)."""
    for index, byte in enumerate(line):
        if not _PRINTABLE_FIRST <= byte <= _PRINTABLE_LAST:
            raise ProxyHeaderError(f"PROXY v1 header holds byte 0x{byte:02x} at offset {index}")


def _address(text: str, family: str) -> IpAddress:
    try:
        if family == _TCP4:
            if not _IPV4_TEXT.fullmatch(text):
                raise ValueError
            return ipaddress.IPv4Address(text)  # rejects leading zeros and octets above 255
        if not _IPV6_TEXT.fullmatch(text):
            raise ValueError
        return ipaddress.IPv6Address(text)  # at most one "::", groups of at most four hex digits
    except ValueError:
        raise ProxyHeaderError(f"PROXY v1 header: {text!r} is not an {family} address") from None


def _port(text: str) -> int:
    if not _PORT.fullmatch(text) or int(text) > _MAX_PORT:
        raise ProxyHeaderError(f"PROXY v1 header: {text!r} is not a port (0-65535, no leading zeros)")
    return int(text)


def parse_v1(buffer: bytes | bytearray) -> ProxyHeader | None:
    """The header at the start of `buffer`, or None until its CRLF has arrived; ProxyHeaderError when it is invalid."""
    window = bytes(buffer[:MAX_LENGTH])
    end = window.find(_CRLF)
    # The bytes after the CRLF are the client's: only the line itself is checked (a last CR may await its LF).
    _check_bytes(window[:end] if end >= 0 else window.removesuffix(b"\r"))
    if end < 0:
        if len(window) >= MAX_LENGTH:
            raise ProxyHeaderError(f"PROXY v1 header has no CRLF within {MAX_LENGTH} bytes")
        return None
    line = window[:end].decode("ascii")  # _check_bytes let only printable ASCII through
    length = end + len(_CRLF)
    fields = line.split(" ")
    protocol = fields[1] if len(fields) > 1 else ""
    if protocol == _UNKNOWN:
        # The spec: ignore whatever follows UNKNOWN up to the CRLF, and use the connection's own endpoints.
        return ProxyHeader(1, PROXY, None, None, length)
    if protocol not in (_TCP4, _TCP6):
        raise ProxyHeaderError(f"PROXY v1 header: unknown protocol {protocol[:8]!r} (TCP4, TCP6 or UNKNOWN)")
    if len(fields) != 2 + _FIELDS_AFTER_PROTOCOL or "" in fields:
        raise ProxyHeaderError("PROXY v1 header: expected `PROXY <protocol> <source> <destination> <source port> <destination port>`, one space apart")
    source, destination = _address(fields[2], protocol), _address(fields[3], protocol)
    return ProxyHeader(1, PROXY, (source, _port(fields[4])), (destination, _port(fields[5])), length)
