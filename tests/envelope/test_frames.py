"""FrameReader: size-prefixed frames out of arbitrarily chunked bytes."""

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envelope import FrameReader, FrameSizeError, ProtocolError, encode_frame
from envelope.frames import DEFAULT_MAX_FRAME_SIZE

PAYLOADS = [b"first", b"", b"\x00" * 300, bytes(range(256)), b"last"]
STREAM = b"".join(encode_frame(p) for p in PAYLOADS)


def test_encode_frame_prefix() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"


def test_default_limit_is_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 104_857_600
    assert FrameReader().max_frame_size == 104_857_600


def test_several_frames_fed_whole() -> None:
    reader = FrameReader()
    reader.feed(STREAM)
    assert reader.frames() == PAYLOADS
    assert reader.buffered == 0
    assert reader.next_frame() is None


def test_byte_by_byte() -> None:
    reader = FrameReader()
    out: list[bytes] = []
    for i in range(len(STREAM)):
        reader.feed(STREAM[i : i + 1])
        out.extend(reader.frames())
    assert out == PAYLOADS
    assert reader.buffered == 0


def test_next_frame_returns_none_until_whole() -> None:
    frame = encode_frame(b"hello")
    reader = FrameReader()
    for i, byte in enumerate(frame[:-1]):
        reader.feed(bytes([byte]))
        assert reader.next_frame() is None
        assert reader.buffered == i + 1
    reader.feed(frame[-1:])
    assert reader.next_frame() == b"hello"
    assert reader.buffered == 0


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=64), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=1000), max_size=20),
)
def test_random_chunkings(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    reader = FrameReader()
    out: list[bytes] = []
    for start, end in itertools.pairwise(points):
        reader.feed(stream[start:end])
        out.extend(reader.frames())
    assert out == payloads
    assert reader.buffered == 0


NEXT = encode_frame(b"abcde")


@pytest.mark.parametrize("cut", [1, 3, 4, 7, len(NEXT) - 1])
def test_trailing_partial_frame_stays_buffered(cut: int) -> None:
    partial = NEXT[:cut]
    reader = FrameReader()
    reader.feed(STREAM + partial)
    assert reader.frames() == PAYLOADS
    assert reader.buffered == len(partial)
    assert reader.next_frame() is None
    assert reader.buffered == len(partial)
    # Completing it yields exactly the frame.
    reader.feed(NEXT[cut:])
    assert reader.frames() == [b"abcde"]
    assert reader.buffered == 0


def test_negative_size_refused_from_prefix_alone() -> None:
    reader = FrameReader()
    reader.feed(struct.pack(">i", -1))
    with pytest.raises(FrameSizeError) as info:
        reader.next_frame()
    assert info.value.size == -1
    assert isinstance(info.value, ProtocolError)


def test_size_above_limit_refused_before_body() -> None:
    reader = FrameReader(max_frame_size=10)
    reader.feed(encode_frame(b"0123456789"))  # exactly the limit is fine
    assert reader.frames() == [b"0123456789"]
    reader.feed(struct.pack(">i", 11))  # prefix only, no body
    with pytest.raises(FrameSizeError) as info:
        reader.next_frame()
    assert (info.value.size, info.value.limit) == (11, 10)


def test_size_prefix_checked_when_fed_byte_by_byte() -> None:
    reader = FrameReader(max_frame_size=1000)
    prefix = struct.pack(">i", 1001)
    for byte in prefix[:3]:
        reader.feed(bytes([byte]))
        assert reader.next_frame() is None
    reader.feed(prefix[3:])
    with pytest.raises(FrameSizeError):
        reader.next_frame()


def test_http_get_refused_with_default_limit() -> None:
    assert int.from_bytes(b"GET ", "big") == 0x47455420 == 1_195_725_856 > 104_857_600
    reader = FrameReader()
    reader.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(FrameSizeError) as info:
        reader.frames()
    assert info.value.size == 1_195_725_856


def test_tls_client_hello_refused_with_default_limit() -> None:
    # TLS record header: handshake(0x16), TLS 1.0 record version (0x03 0x01), length 0x0200, then ClientHello (0x01).
    hello = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])
    assert int.from_bytes(hello[:4], "big") == 0x16030102 == 369_295_618
    reader = FrameReader()
    reader.feed(hello)
    with pytest.raises(FrameSizeError) as info:
        reader.next_frame()
    assert info.value.size == 369_295_618
