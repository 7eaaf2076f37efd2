"""The PROXY protocol reader under the fuzzer: family `proxy-header` of `python -m fuzz.run` (registered in fuzz.targets).

Inputs are headers a load balancer could send (v1 TCP4/TCP6/UNKNOWN; v2 PROXY and LOCAL over IPv4, IPv6, UNSPEC
and UNIX, with AUTHORITY, SSL, CRC32C, NOOP, unique-id and vendor TLVs) followed by the client's first bytes; the
runner's mutator then breaks them where a reader trusts them most: the v2 `len` and every TLV length (marked as
length sites), the version, command and family bytes (fixed sites), truncation, stray bytes. Each input is read
whole, byte by byte and in uneven pieces, by every listener mode: all readings must agree, a header's bytes plus
the leftover must be exactly the input, and only ProxyHeaderError may refuse. Anything else is a finding.
"""

import ipaddress
import random
import struct
from dataclasses import dataclass

from devkit import proxy_header as write
from envelope.proxy_protocol import HeaderReader, NoHeader, ProxyHeader, ProxyHeaderError
from fuzz.generate import FIXED, LENGTH, Generated, Site
from fuzz.target import Target

_MODES = (
    (frozenset({1, 2}), False),
    (frozenset({1}), False),
    (frozenset({2}), False),
    (frozenset({1, 2}), True),
)
_KAFKA_START = b"\x00\x00\x00\x0e\x00\x12\x00\x03\x00\x00\x00\x07\x00\x00"
_CLIENT_BYTES = (b"", _KAFKA_START, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"PROXY TCP4 1.1.1.1 2.2.2.2 1 2\r\n")
_V4 = ("10.1.2.3", "0.0.0.0", "255.255.255.255", "127.0.0.2", "192.168.100.200")
_V6 = ("2001:db8::7", "::1", "::", "fe80::1", "::ffff:10.0.0.1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
_PORTS = (0, 1, 9092, 65535)
_V2_LENGTH_OFFSET = 14
_V2_VERSION_OFFSET = 12
_V2_FAMILY_OFFSET = 13
_TLV_HEADER = 3
_PIECE_SIZES = (1, 2, 3, 5, 7, 11, 16, 29)


def _tlv_list(rng: random.Random) -> bytes:
    tlvs = b""
    for _ in range(rng.randrange(0, 4)):
        kind = rng.choice((write.TLV_ALPN, write.TLV_AUTHORITY, write.TLV_NOOP, write.TLV_UNIQUE_ID, write.TLV_SSL, 0x30, 0xEA, 0xEE, 0xFF))
        if kind == write.TLV_SSL:
            tlvs += write.ssl_tlv(rng.choice(("TLSv1.3", "TLSv1.2")), rng.choice((None, "alice", "ü")), client=rng.randrange(8), verify=rng.choice((0, 1)))
        else:
            tlvs += write.tlv(kind, rng.choice((b"", b"kafka.example.com", b"h2", rng.randbytes(rng.randrange(0, 140)))))
    return tlvs


def _v2_sites(data: bytes, block: int) -> list[Site]:
    """The v2 length, version/command and family bytes, and each top-level TLV's length."""
    sites = [
        Site(LENGTH, _V2_LENGTH_OFFSET, _V2_LENGTH_OFFSET + 2, False, False),
        Site(FIXED, _V2_VERSION_OFFSET, _V2_VERSION_OFFSET + 1, False),
        Site(FIXED, _V2_FAMILY_OFFSET, _V2_FAMILY_OFFSET + 1, False),
    ]
    offset = write.V2_FIXED_LENGTH + block
    while offset + _TLV_HEADER <= len(data):
        length = struct.unpack_from(">H", data, offset + 1)[0]
        sites.append(Site(LENGTH, offset + 1, offset + 3, False, False))
        offset += _TLV_HEADER + length
    return sites


def _header(rng: random.Random) -> tuple[bytes, list[Site]]:
    roll = rng.random()
    if roll < 0.35:
        family = rng.choice(("TCP4", "TCP6", "UNKNOWN"))
        if family == "UNKNOWN":
            return rng.choice((b"PROXY UNKNOWN\r\n", b"PROXY UNKNOWN ::1 ::2 1 2\r\n")), []
        pool = _V4 if family == "TCP4" else _V6
        line = write.v1(rng.choice(pool), rng.choice(pool), rng.choice(_PORTS), rng.choice(_PORTS))
        # Spaces, digits and the CRLF: where a v1 parser is most likely to trust what it reads.
        sites = [Site(FIXED, index, index + 1, False) for index in rng.sample(range(len(line)), min(3, len(line)))]
        return line, sites
    command = write.LOCAL if rng.random() < 0.2 else write.PROXY
    tlvs, crc = _tlv_list(rng), rng.random() < 0.4
    shape = rng.random()
    if shape < 0.15:
        data = write.v2(command=command, tlvs=tlvs, crc=crc, family=rng.choice((write.UNSPEC, write.UNIX_STREAM)))
        block = write.UNIX_ADDRESS_BLOCK if data[_V2_FAMILY_OFFSET] == write.UNIX_STREAM else 0
    else:
        pool = _V4 if shape < 0.6 else _V6
        data = write.v2(rng.choice(pool), rng.choice(pool), rng.choice(_PORTS), rng.choice(_PORTS), command=command, tlvs=tlvs, crc=crc)
        block = 12 if pool is _V4 else 36
    return data, _v2_sites(data, block)


def _read(data: bytes, versions: frozenset[int], optional: bool, piece: int) -> tuple[str, object, bytes]:
    """One reading in pieces of `piece` bytes: ("header" | "none" | "refused" | "undecided", result, leftover)."""
    reader = HeaderReader(versions, optional=optional)
    offset = 0
    try:
        while offset < len(data):
            chunk = data[offset : offset + piece]
            offset += len(chunk)
            result = reader.feed(chunk)
            if isinstance(result, ProxyHeader):
                return "header", result, reader.leftover + data[offset:]
            if isinstance(result, NoHeader):
                return "none", result, reader.leftover + data[offset:]
    except ProxyHeaderError:
        return "refused", None, b""
    return "undecided", None, b""


def decode_proxy_header(data: bytes) -> None:
    """Every mode, whole and in pieces: the readings agree, and the header and the leftover make up the input."""
    verdicts = []
    for versions, optional in _MODES:
        whole = _read(data, versions, optional, max(1, len(data)))
        for piece in (1, _PIECE_SIZES[len(data) % len(_PIECE_SIZES)]):
            if _read(data, versions, optional, piece) != whole:
                raise AssertionError(f"reading in {piece}-byte pieces differs from reading whole ({whole[0]})")
        kind, result, leftover = whole
        if kind == "header":
            assert isinstance(result, ProxyHeader)
            if data[: result.length] + leftover != data:
                raise AssertionError("the header and the leftover do not make up the input")
            if result.source is not None and not isinstance(result.source[0], ipaddress.IPv4Address | ipaddress.IPv6Address):
                raise AssertionError("a source that is not an address")
        elif kind == "none" and leftover != data:
            raise AssertionError("bytes that are not a header were not handed on whole")
        verdicts.append(kind)
    if verdicts[0] == "refused":  # the listener that takes either version: what the runner counts as refused
        raise ProxyHeaderError("refused")


@dataclass(frozen=True, slots=True)
class HeaderTarget(Target):
    """A target whose valid input is a PROXY protocol header and the client's first bytes."""

    def valid(self, rng: random.Random) -> tuple[bytes, Generated]:
        data, sites = _header(rng)
        return b"", Generated(bytearray(data + rng.choice(_CLIENT_BYTES)), sites)


def targets() -> list[Target]:
    return [HeaderTarget("proxy header", bytes, b"", decode_proxy_header)]
