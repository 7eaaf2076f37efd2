"""PROXY protocol headers written byte for byte, for tests and the fuzzer: what a load balancer sends.

The proxy only reads headers (envelope/proxy_protocol); this writes them, independently of that reader, so the
tests compare the reader with the spec's layout rather than with itself.
"""

import ipaddress
import struct

from envelope.proxy_protocol.crc32c import crc32c

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
V2_VERSION = 0x20
V2_FIXED_LENGTH = 16
LOCAL, PROXY = 0x0, 0x1
UNSPEC, TCP4, TCP6, UNIX_STREAM = 0x00, 0x11, 0x21, 0x31
TLV_ALPN, TLV_AUTHORITY, TLV_CRC32C, TLV_NOOP, TLV_UNIQUE_ID, TLV_SSL = 0x01, 0x02, 0x03, 0x04, 0x05, 0x20
SSL_VERSION, SSL_CN = 0x21, 0x22
CLIENT_SSL, CLIENT_CERT_CONN = 0x01, 0x02
UNIX_ADDRESS_BLOCK = 216
CRC32C_LENGTH = 4


def v1(source: str, destination: str, source_port: int, destination_port: int) -> bytes:
    """`PROXY TCP4|TCP6 ...\\r\\n`, the family from the source address."""
    family = "TCP6" if ipaddress.ip_address(source).version == 6 else "TCP4"
    return f"PROXY {family} {source} {destination} {source_port} {destination_port}\r\n".encode("ascii")


def tlv(kind: int, value: bytes) -> bytes:
    return struct.pack(">BH", kind, len(value)) + value


def ssl_tlv(version: str = "TLSv1.3", common_name: str | None = None, *, client: int = CLIENT_SSL, verify: int = 0) -> bytes:
    subs = tlv(SSL_VERSION, version.encode())
    if common_name is not None:
        subs += tlv(SSL_CN, common_name.encode())
    return tlv(TLV_SSL, struct.pack(">BI", client, verify) + subs)


def v2(
    source: str | None = None,
    destination: str | None = None,
    source_port: int = 0,
    destination_port: int = 0,
    *,
    command: int = PROXY,
    tlvs: bytes = b"",
    crc: bool = False,
    family: int | None = None,
) -> bytes:
    """A v2 header: TCP over the source's family, or UNSPEC without addresses (LOCAL health checks); with `crc`, a
    CRC32C TLV computed over the whole header last, as HAProxy's `proxy-v2-options crc32c` does."""
    if source is None or destination is None:
        block, chosen = b"", UNSPEC if family is None else family
        if chosen == UNIX_STREAM:
            block = bytes(UNIX_ADDRESS_BLOCK)
    else:
        src, dst = ipaddress.ip_address(source), ipaddress.ip_address(destination)
        chosen = (TCP6 if src.version == 6 else TCP4) if family is None else family
        block = src.packed + dst.packed + struct.pack(">HH", source_port, destination_port)
    body = block + tlvs + (tlv(TLV_CRC32C, bytes(CRC32C_LENGTH)) if crc else b"")
    header = V2_SIGNATURE + bytes([V2_VERSION | command, chosen]) + struct.pack(">H", len(body)) + body
    if crc:
        header = header[:-CRC32C_LENGTH] + crc32c(header).to_bytes(CRC32C_LENGTH, "big")
    return header
