"""The PROXY protocol reader (envelope/proxy_protocol) against HAProxy's spec, fed whole, in pieces and byte by byte."""

import ipaddress
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devkit import proxy_header as write
from envelope.proxy_protocol import NO_HEADER, HeaderReader, ProxyHeader, ProxyHeaderError
from envelope.proxy_protocol.crc32c import crc32c
from envelope.proxy_protocol.v1 import MAX_LENGTH
from envelope.proxy_protocol.v2 import MAX_PAYLOAD

KAFKA = b"\x00\x00\x00\x0e\x00\x12\x00\x03\x00\x00\x00\x07\x00\x00"  # an ApiVersions frame's first bytes


def read(data: bytes, **options: object) -> tuple[ProxyHeader | object, bytes]:
    reader = HeaderReader(**options)  # type: ignore[arg-type]
    result = reader.feed(data)
    assert result is not None, "a whole header must be decided"
    return result, reader.leftover


def read_bytewise(data: bytes, **options: object) -> tuple[ProxyHeader | object, bytes]:
    reader = HeaderReader(**options)  # type: ignore[arg-type]
    for index in range(len(data)):
        result = reader.feed(data[index : index + 1])
        if result is not None:
            return result, reader.leftover + data[index + 1 :]
    raise AssertionError("never decided")


def test_crc32c_matches_the_rfc_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


@pytest.mark.parametrize(
    ("line", "source", "destination"),
    [
        (b"PROXY TCP4 192.168.0.1 10.0.0.1 56324 443\r\n", ("192.168.0.1", 56324), ("10.0.0.1", 443)),
        (b"PROXY TCP4 0.0.0.0 255.255.255.255 0 65535\r\n", ("0.0.0.0", 0), ("255.255.255.255", 65535)),
        (b"PROXY TCP6 2001:db8::1 ::1 1 9092\r\n", ("2001:db8::1", 1), ("::1", 9092)),
        (b"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n", None, None),
    ],
)
def test_v1_lines_are_read_whole_and_byte_by_byte_with_the_kafka_bytes_after_them(
    line: bytes, source: tuple[str, int] | None, destination: tuple[str, int] | None
) -> None:
    for reading in (read, read_bytewise):
        header, leftover = reading(line + KAFKA)
        assert isinstance(header, ProxyHeader)
        assert (header.version, header.command, header.length, leftover) == (1, "PROXY", len(line), KAFKA)
        if source is not None and destination is not None:
            assert header.source == (ipaddress.ip_address(source[0]), source[1])
            assert header.destination == (ipaddress.ip_address(destination[0]), destination[1])
    assert len(line) <= MAX_LENGTH


@pytest.mark.parametrize("line", [b"PROXY UNKNOWN\r\n", b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"])
def test_v1_unknown_names_no_client(line: bytes) -> None:
    header, leftover = read(line + KAFKA)
    assert isinstance(header, ProxyHeader) and header.source is None and leftover == KAFKA


@pytest.mark.parametrize(
    "line",
    [
        b"PROXY TCP4 192.168.0.1 10.0.0.1 56324 443\n",  # lone LF
        b"PROXY TCP4 192.168.0.1 10.0.0.1 56324 443\rX\r\n",  # lone CR
        b"PROXY TCP4  192.168.0.1 10.0.0.1 56324 443\r\n",  # two spaces
        b"PROXY TCP4 192.168.0.1 10.0.0.1 56324 443 \r\n",  # trailing space
        b"PROXY TCP4 192.168.0.01 10.0.0.1 56324 443\r\n",  # leading zero in an octet
        b"PROXY TCP4 192.168.0.256 10.0.0.1 56324 443\r\n",
        b"PROXY TCP4 192.168.0 10.0.0.1 56324 443\r\n",
        b"PROXY TCP4 192.168.0.1 10.0.0.1 056324 443\r\n",  # leading zero in a port
        b"PROXY TCP4 192.168.0.1 10.0.0.1 65536 443\r\n",
        b"PROXY TCP4 192.168.0.1 10.0.0.1 -1 443\r\n",
        b"PROXY TCP4 192.168.0.1 10.0.0.1 +1 443\r\n",
        b"PROXY TCP4 ::1 ::1 1 2\r\n",  # family mismatch
        b"PROXY TCP6 10.0.0.1 10.0.0.2 1 2\r\n",
        b"PROXY TCP6 1::2::3 ::1 1 2\r\n",  # two "::"
        b"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n",  # zone
        b"PROXY TCP6 12345::1 ::1 1 2\r\n",
        b"PROXY TCP4 192.168.0.1 10.0.0.1 56324\r\n",  # a field missing
        b"PROXY TCP4 192.168.0.1 10.0.0.1 56324 443 1\r\n",
        b"PROXY UDP4 192.168.0.1 10.0.0.1 56324 443\r\n",
        b"PROXY tcp4 192.168.0.1 10.0.0.1 56324 443\r\n",
        b"PROXY TCP4 \xc2\xb9.2.3.4 10.0.0.1 1 2\r\n",  # a non-ASCII digit
        b"PROXY TCP4 1.2.3.4\x00 10.0.0.1 1 2\r\n",
        b"PROXY " + b"A" * 120,  # no CRLF within 107 bytes
        b"PROXY\r\n",
    ],
)
def test_v1_lines_off_the_grammar_are_refused_whole_and_byte_by_byte(line: bytes) -> None:
    for reading in (read, read_bytewise):
        with pytest.raises(ProxyHeaderError):
            reading(line + KAFKA + b"\r\n" * 60)


def test_v1_refuses_a_bad_byte_as_soon_as_it_arrives() -> None:
    reader = HeaderReader()
    assert reader.feed(b"PROXY TCP4 1.2.3") is None
    with pytest.raises(ProxyHeaderError, match="0x0a"):
        reader.feed(b"\n")


def test_v2_proxy_over_ipv4_and_ipv6_whole_and_byte_by_byte() -> None:
    for source, destination in (("10.1.2.3", "10.0.0.1"), ("2001:db8::7", "2001:db8::1")):
        data = write.v2(source, destination, 40000, 9092)
        for reading in (read, read_bytewise):
            header, leftover = reading(data + KAFKA)
            assert isinstance(header, ProxyHeader)
            assert header.source == (ipaddress.ip_address(source), 40000)
            assert header.destination == (ipaddress.ip_address(destination), 9092)
            assert (header.version, header.command, header.length, leftover) == (2, "PROXY", len(data), KAFKA)


def test_v2_keeps_authority_and_ssl_and_checks_crc32c() -> None:
    tlvs = write.tlv(write.TLV_AUTHORITY, b"kafka.example.com") + write.ssl_tlv("TLSv1.3", "alice", client=3) + write.tlv(0xEA, b"vpce-1")
    header, _ = read(write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=tlvs, crc=True))
    assert isinstance(header, ProxyHeader) and header.authority == "kafka.example.com"
    assert header.tls is not None and (header.tls.version, header.tls.common_name, header.tls.certificate_verified) == ("TLSv1.3", "alice", True)
    anonymous, _ = read(write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=write.ssl_tlv("TLSv1.2", "mallory")))
    assert isinstance(anonymous, ProxyHeader) and anonymous.tls is not None and not anonymous.tls.certificate_verified


def test_v2_local_health_check_with_tlvs_names_no_client() -> None:
    data = write.v2(command=write.LOCAL, tlvs=write.ssl_tlv(client=0), crc=True)
    header, leftover = read_bytewise(data + KAFKA)
    assert isinstance(header, ProxyHeader) and (header.command, header.source, leftover) == ("LOCAL", None, KAFKA)
    # LOCAL with addresses: the spec says discard them and use the real endpoints.
    header, _ = read(write.v2("10.1.2.3", "10.0.0.1", 1, 2, command=write.LOCAL))
    assert isinstance(header, ProxyHeader) and header.source is None


@pytest.mark.parametrize("family", [write.UNIX_STREAM, write.UNSPEC])
def test_v2_unix_and_unspec_fall_back_to_the_real_endpoints(family: int) -> None:
    header, leftover = read(write.v2(family=family, tlvs=write.tlv(write.TLV_NOOP, b"")) + KAFKA)
    assert isinstance(header, ProxyHeader) and header.source is None and leftover == KAFKA


def _corrupt(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value) :]


GOOD_V2 = write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=write.tlv(write.TLV_AUTHORITY, b"a"), crc=True)


@pytest.mark.parametrize(
    "data",
    [
        _corrupt(GOOD_V2, 12, b"\x11"),  # version 1 in the v2 layout
        _corrupt(GOOD_V2, 12, b"\x22"),  # command 2
        _corrupt(GOOD_V2, 13, b"\x13"),  # transport 3
        _corrupt(GOOD_V2, 13, b"\x41"),  # family 4
        _corrupt(GOOD_V2, 13, b"\x01"),  # UNSPEC family, STREAM transport: not a defined value
        _corrupt(GOOD_V2, 14, struct.pack(">H", MAX_PAYLOAD + 1)),  # over the cap
        _corrupt(GOOD_V2, 14, struct.pack(">H", 8)),  # shorter than the INET block
        _corrupt(GOOD_V2, 14, struct.pack(">H", 13)),  # one stray byte after the block
        _corrupt(GOOD_V2, 29, b"\x00\x10"),  # the authority TLV claims more than is left
        _corrupt(GOOD_V2, 31, b"\xff"),  # authority not UTF-8
        _corrupt(GOOD_V2, len(GOOD_V2) - 1, bytes([GOOD_V2[-1] ^ 1])),  # CRC mismatch
        _corrupt(GOOD_V2, 18, b"\x09"),  # an address byte changed: the CRC catches it
        write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=write.tlv(write.TLV_CRC32C, b"\x00\x00\x00")),
        write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=write.tlv(write.TLV_UNIQUE_ID, b"u" * 129)),
        write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=write.tlv(write.TLV_SSL, b"\x01\x00")),  # SSL TLV too short
        write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=write.tlv(write.TLV_SSL, b"\x01\x00\x00\x00\x00\x21\x00\x09TLS")),  # sub-TLV overflow
        write.v2("10.1.2.3", "10.0.0.1", 1, 2, tlvs=write.tlv(write.TLV_AUTHORITY, b"h" * 256)),
        b"\r\n\r\n\x00\r\nQUIX\n" + bytes(8),  # signature broken in its last bytes
    ],
)
def test_v2_headers_off_the_spec_are_refused(data: bytes) -> None:
    for reading in (read, read_bytewise):
        with pytest.raises(ProxyHeaderError):
            reading(data + KAFKA)


def test_a_truncated_header_is_never_decided() -> None:
    for data in (GOOD_V2, write.v1("10.1.2.3", "10.0.0.1", 1, 2)):
        reader = HeaderReader()
        assert reader.feed(data[:-1]) is None


def test_a_v2_length_over_the_cap_is_refused_before_its_bytes_arrive() -> None:
    reader = HeaderReader()
    with pytest.raises(ProxyHeaderError, match="limit"):
        reader.feed(write.V2_SIGNATURE + b"\x21\x11\xff\xff")
    assert reader.buffered == 16


def test_versions_and_optional_headers() -> None:
    with pytest.raises(ProxyHeaderError, match="v2 header where this listener accepts v1"):
        HeaderReader(frozenset({1})).feed(GOOD_V2)
    with pytest.raises(ProxyHeaderError, match="v1 header where this listener accepts v2"):
        HeaderReader(frozenset({2})).feed(b"PROXY UNKNOWN\r\n")
    with pytest.raises(ProxyHeaderError, match="does not start with"):
        HeaderReader().feed(KAFKA)
    assert read(KAFKA, optional=True) == (NO_HEADER, KAFKA)
    assert read(b"GET / HTTP/1.1\r\n", optional=True) == (NO_HEADER, b"GET / HTTP/1.1\r\n")
    reader = HeaderReader(optional=True)
    assert reader.feed(b"PRO") is None  # could still be a header: undecided
    assert reader.feed(b"XZ") is NO_HEADER and reader.leftover == b"PROXZ"


@given(st.binary(max_size=64), st.lists(st.integers(min_value=1, max_value=40), max_size=20), st.booleans())
def test_any_split_gives_the_same_header_and_leaves_the_trailing_bytes_untouched(trailing: bytes, cuts: list[int], version_two: bool) -> None:
    data = GOOD_V2 if version_two else write.v1("2001:db8::1", "2001:db8::2", 65535, 0)
    whole, _ = read(data)
    stream = data + trailing
    reader = HeaderReader()
    offset, result = 0, None
    for cut in [*cuts, len(stream)]:
        piece = stream[offset : offset + cut]
        offset += len(piece)
        result = reader.feed(piece)
        if result is not None:
            break
    assert result == whole
    assert reader.leftover + stream[offset:] == trailing
