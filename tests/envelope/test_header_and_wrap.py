"""Request header peeking and the Envelope (API key 58) wrap/unwrap round trips."""

import ipaddress
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

import envelope
from envelope import (
    EnvelopeError,
    FrameReader,
    Principal,
    decode_body,
    encode_frame,
    encode_request,
    peek_correlation_id,
    peek_request_header,
    serialize_principal,
    unwrap,
    unwrap_request,
    wrap,
    wrap_response,
)
from envelope.build import build_entity
from envelope.codec import decode_entity, decode_response_body, request_schema
from envelope.errors import ProtocolError

ALICE = Principal("User", "alice")


def create_topics_v7(correlation_id: int = 1234, client_id: str | None = "adminclient-1") -> bytes:
    body = build_entity(
        request_schema(19, 7),
        {
            "topics": [
                {"name": "orders", "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": []},
            ],
            "timeout": 30_000,
            "validate_only": False,
        },
    )
    return encode_request(body, correlation_id=correlation_id, client_id=client_id)


def sasl_handshake_v1(correlation_id: int = 77, client_id: str | None = "rdkafka") -> bytes:
    return encode_request(SaslHandshakeRequest(mechanism="PLAIN"), correlation_id=correlation_id, client_id=client_id)


# --- peek_request_header -------------------------------------------------------------------------


@pytest.mark.parametrize("client_id", ["adminclient-1", "", None, "ünïcødé"])
def test_peek_flexible_create_topics_v7(client_id: str | None) -> None:
    frame = create_topics_v7(correlation_id=1234, client_id=client_id)
    info = peek_request_header(frame)
    assert (info.api_key, info.api_version, info.correlation_id) == (19, 7, 1234)
    assert info.client_id == client_id
    assert info.header_version == 2
    # key, version, correlation id, int16-length client id, one tagged-field count byte
    id_len = 0 if client_id is None else len(client_id.encode())
    assert info.header_size == 8 + 2 + id_len + 1
    body = decode_body(19, 7, frame, info.header_size)
    assert [str(t.name) for t in body.topics] == ["orders"]
    assert int(body.topics[0].num_partitions) == 3


@pytest.mark.parametrize("client_id", ["rdkafka", None])
def test_peek_non_flexible_sasl_handshake_v1(client_id: str | None) -> None:
    frame = sasl_handshake_v1(correlation_id=77, client_id=client_id)
    info = peek_request_header(frame)
    assert (info.api_key, info.api_version, info.correlation_id) == (17, 1, 77)
    assert info.client_id == client_id
    assert info.header_version == 1
    id_len = 0 if client_id is None else len(client_id.encode())
    assert info.header_size == 8 + 2 + id_len  # no tagged-field section in header v1
    if client_id is None:
        assert frame[8:10] == b"\xff\xff"  # nullable string -1
    body = decode_body(17, 1, frame, info.header_size)
    assert body.mechanism == "PLAIN"


def test_negative_correlation_id_is_read_signed() -> None:
    frame = sasl_handshake_v1(correlation_id=-5)
    assert peek_request_header(frame).correlation_id == -5


@pytest.mark.parametrize("make", [create_topics_v7, sasl_handshake_v1])
def test_truncated_header_raises_protocol_error(make) -> None:  # type: ignore[no-untyped-def]
    frame = make()
    size = peek_request_header(frame).header_size
    for cut in range(size):
        with pytest.raises(envelope.ProtocolError):
            peek_request_header(frame[:cut])


def test_client_id_length_beyond_frame_raises_protocol_error() -> None:
    frame = struct.pack(">hhih", 17, 1, 1, 100) + b"short"
    with pytest.raises(envelope.ProtocolError):
        peek_request_header(frame)


@pytest.mark.parametrize("make", [create_topics_v7, sasl_handshake_v1])
def test_frame_reader_byte_by_byte_then_peek(make) -> None:  # type: ignore[no-untyped-def]
    frames = [make(correlation_id=1), make(correlation_id=2)]
    stream = b"".join(encode_frame(f) for f in frames)
    reader = FrameReader()
    out: list[bytes] = []
    for i in range(len(stream)):
        reader.feed(stream[i : i + 1])
        out.extend(reader.frames())
    assert out == frames
    assert [peek_request_header(f).correlation_id for f in out] == [1, 2]
    info = peek_request_header(out[0])
    decode_body(info.api_key, info.api_version, out[0], info.header_size)


def test_decode_body_refuses_trailing_bytes() -> None:
    frame = create_topics_v7()
    info = peek_request_header(frame)
    with pytest.raises(envelope.ProtocolError):
        decode_body(19, 7, frame + b"\x00", info.header_size)


def test_unknown_tagged_field_in_header_v2() -> None:
    frame = create_topics_v7(client_id="c")
    plain = peek_request_header(frame)
    assert frame[plain.header_size - 1] == 0  # empty tagged-field section
    # one unknown tagged field: tag 3, size 2, value 0xABCD
    tagged = frame[: plain.header_size - 1] + bytes([1, 3, 2, 0xAB, 0xCD]) + frame[plain.header_size :]
    info = peek_request_header(tagged)  # unknown header tags are skipped, as Kafka does
    assert info.header_size == plain.header_size + 4
    assert info.client_id == "c"


def test_unknown_tagged_field_in_body() -> None:
    frame = create_topics_v7()
    assert frame[-1] == 0
    tagged = frame[:-1] + bytes([1, 9, 1, 0x55])  # one unknown top-level tagged field
    info = peek_request_header(tagged)
    # Skipped as Kafka skips it: every known field is still read.
    assert decode_body(19, 7, tagged, info.header_size) == decode_body(19, 7, frame, info.header_size)


# --- wrap / unwrap_request -------------------------------------------------------------------------


def _envelope_body(frame: bytes) -> EnvelopeRequest:
    info = peek_request_header(frame)
    assert (info.api_key, info.api_version, info.header_version) == (58, 0, 2)
    body = decode_body(58, 0, frame, info.header_size)
    assert isinstance(body, EnvelopeRequest)
    return body


@pytest.mark.parametrize("address", ["192.0.2.10", "2001:db8::1", "::1", ipaddress.ip_address("10.0.0.1")])
@pytest.mark.parametrize("make", [create_topics_v7, sasl_handshake_v1])
def test_wrap_then_unwrap_request(address, make) -> None:  # type: ignore[no-untyped-def]
    raw = make(correlation_id=4242)
    principal = Principal("User", "bob", token_authenticated=True)
    frame = wrap(raw, principal, address, correlation_id=9001, client_id="envelope-proxy")

    header = peek_request_header(frame)
    assert header.correlation_id == 9001
    assert header.client_id == "envelope-proxy"

    body = _envelope_body(frame)
    assert body.request_data == raw
    assert body.request_principal == serialize_principal(principal)

    correlation_id, parts = unwrap_request(frame)
    assert correlation_id == 9001
    assert parts.request_data == raw  # byte for byte, never re-encoded
    assert parts.principal == principal
    assert parts.client_address == ipaddress.ip_address(address)
    assert len(body.client_host_address) == (4 if parts.client_address.version == 4 else 16)
    # the embedded request keeps the client's correlation id
    assert peek_request_header(parts.request_data).correlation_id == 4242


def test_wrap_keeps_odd_encodings_untouched() -> None:
    # An unknown tagged field in the body must survive: wrap never decodes/re-encodes the request.
    raw = create_topics_v7()[:-1] + bytes([1, 9, 1, 0x55])
    _, parts = unwrap_request(wrap(raw, ALICE, "127.0.0.1", correlation_id=1))
    assert parts.request_data == raw


@pytest.mark.parametrize(
    ("mapped", "plain"),
    [("::ffff:127.0.0.1", "127.0.0.1"), ("::ffff:192.0.2.7", "192.0.2.7")],
)
def test_ipv4_mapped_ipv6_becomes_plain_ipv4(mapped: str, plain: str) -> None:
    frame = wrap(create_topics_v7(), ALICE, ipaddress.IPv6Address(mapped), correlation_id=3)
    body = _envelope_body(frame)
    assert body.client_host_address == ipaddress.IPv4Address(plain).packed
    assert len(body.client_host_address) == 4
    _, parts = unwrap_request(frame)
    assert parts.client_address == ipaddress.IPv4Address(plain)


def test_wrap_default_client_id_is_none() -> None:
    frame = wrap(create_topics_v7(), ALICE, "127.0.0.1", correlation_id=3)
    assert peek_request_header(frame).client_id is None


def _raw_envelope(principal: bytes | None, address: bytes, request_data: bytes | None = None) -> bytes:
    body = EnvelopeRequest(
        request_data=create_topics_v7() if request_data is None else request_data,
        request_principal=principal,
        client_host_address=address,
    )
    return encode_request(body, correlation_id=5, client_id=None)


LOCALHOST = bytes([127, 0, 0, 1])
ALICE_BYTES = serialize_principal(ALICE)


def test_hand_built_envelope_unwraps() -> None:
    correlation_id, parts = unwrap_request(_raw_envelope(ALICE_BYTES, LOCALHOST))
    assert correlation_id == 5
    assert parts.principal == ALICE
    assert parts.client_address == ipaddress.IPv4Address("127.0.0.1")


@pytest.mark.parametrize(
    "principal",
    [
        b"garbage",
        b"",
        b"\x00",
        b"\x00\x01" + ALICE_BYTES[2:],  # unknown version
        ALICE_BYTES[:-1],  # truncated
        None,
    ],
)
def test_bad_principal_is_error_97(principal: bytes | None) -> None:
    with pytest.raises(EnvelopeError) as info:
        unwrap_request(_raw_envelope(principal, LOCALHOST))
    assert info.value.error_code == 97
    assert isinstance(info.value, envelope.ProtocolError)


def test_bytes_after_the_principal_are_ignored_as_kafka_ignores_them() -> None:
    """DefaultKafkaPrincipalBuilder.deserialize reads what DefaultPrincipalData holds and stops (checked against a node
    in tests/interop/test_forwarded_principal.py)."""
    _, parts = unwrap_request(_raw_envelope(ALICE_BYTES + b"\x00", LOCALHOST))
    assert parts.principal == Principal("User", "alice")


@pytest.mark.parametrize("length", [0, 1, 3, 5, 6, 15, 17, 32])
def test_bad_address_length_is_error_42(length: int) -> None:
    with pytest.raises(EnvelopeError) as info:
        unwrap_request(_raw_envelope(ALICE_BYTES, bytes(range(length))))
    assert info.value.error_code == 42


def test_principal_is_checked_before_address() -> None:
    with pytest.raises(EnvelopeError) as info:
        unwrap_request(_raw_envelope(b"garbage", b"\x01\x02\x03\x04\x05"))
    assert info.value.error_code == 97


# --- wrap_response / unwrap ------------------------------------------------------------------------


def test_wrap_response_success_returns_exact_data() -> None:
    embedded = struct.pack(">i", 4242) + b"\x00any embedded response bytes\xff"
    frame = wrap_response(9001, 0, embedded)
    assert peek_correlation_id(frame) == 9001
    assert frame[4] == 0  # response header v1: empty tagged-field section after the correlation id
    assert unwrap(frame) == (0, embedded)
    assert peek_correlation_id(unwrap(frame)[1] or b"") == 4242


def test_wrap_response_not_controller_has_no_data() -> None:
    frame = wrap_response(17, 41, None)
    assert peek_correlation_id(frame) == 17
    assert unwrap(frame) == (41, None)


@pytest.mark.parametrize("code", [31, 35, 42, 97, -1])
def test_wrap_response_error_codes_roundtrip(code: int) -> None:
    assert unwrap(wrap_response(1, code, None)) == (code, None)


def test_unwrap_truncated_response_raises_protocol_error() -> None:
    frame = wrap_response(1, 0, b"data")
    for cut in range(len(frame)):
        with pytest.raises(envelope.ProtocolError):
            unwrap(frame[:cut])


def test_peek_correlation_id_too_short() -> None:
    with pytest.raises(envelope.ProtocolError):
        peek_correlation_id(b"\x00\x00\x01")


def test_build_entity_converts_nullable_arrays_of_entities() -> None:
    """Metadata's `topics` is `tuple[Topic, ...] | None`: dicts inside must become entities, None stays None."""
    from envelope.codec import encode_request, request_schema

    schema = request_schema(3, 12)
    named = build_entity(
        schema,
        {"topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )
    assert named.topics[0].name == "t"
    assert (
        build_entity(schema, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}).topics
        is None
    )
    encode_request(named, correlation_id=1, client_id="x")  # would fail on a plain dict inside


def test_decode_body_may_ignore_trailing_bytes_like_kafka() -> None:
    from envelope.codec import decode_body, encode_request, request_schema
    from envelope.errors import ProtocolError
    from envelope.header import peek_request_header

    frame = encode_request(
        build_entity(
            request_schema(3, 12), {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        ),
        correlation_id=1,
        client_id="x",
    )
    header = peek_request_header(frame + b"\x01\x00\x00")
    with pytest.raises(ProtocolError, match="3 trailing bytes"):
        decode_body(3, 12, frame + b"\x01\x00\x00", header.header_size)
    assert decode_body(3, 12, frame + b"\x01\x00\x00", header.header_size, allow_trailing=True).topics is None


_ADDRESSES = st.one_of(
    st.ip_addresses(v=4),
    st.ip_addresses(v=6),
    st.ip_addresses(v=4).map(lambda v4: ipaddress.IPv6Address(f"::ffff:{v4}")),
)


@settings(max_examples=300, deadline=None)
@given(
    raw=st.one_of(st.binary(max_size=300), st.integers(min_value=16_380, max_value=16_390).map(lambda n: b"r" * n)),
    principal_name=st.text(max_size=40),
    address=_ADDRESSES,
    correlation_id=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    client_id=st.one_of(st.none(), st.text(max_size=40)),
)
def test_wrap_is_what_kio_encodes(
    raw: bytes, principal_name: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address, correlation_id: int, client_id: str | None
) -> None:
    """wrap assembles a cached template around the request; the bytes must be kio's own encoding of that
    envelope, also where RequestData's varint length grows a byte (127/128, 16383/16384)."""
    principal = Principal("User", principal_name)
    plain = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped else address
    expected = encode_request(
        EnvelopeRequest(request_data=raw, request_principal=serialize_principal(principal), client_host_address=plain.packed),
        correlation_id=correlation_id,
        client_id=client_id,
    )
    assert wrap(raw, principal, address, correlation_id=correlation_id, client_id=client_id) == expected
    assert wrap(raw, principal, str(address), correlation_id=correlation_id, client_id=client_id) == expected


def _unwrap_by_kio(frame: bytes) -> tuple[int, bytes | None]:
    _, body = decode_response_body(58, 0, frame)
    return int(body.error_code), body.response_data


@settings(max_examples=300, deadline=None)
@given(
    data=st.one_of(st.none(), st.binary(max_size=200), st.integers(min_value=126, max_value=130).map(lambda n: b"d" * n)),
    error_code=st.integers(min_value=-(2**15), max_value=2**15 - 1),
    cut=st.integers(min_value=0, max_value=8),
    extra=st.binary(max_size=4),
)
def test_unwrap_reads_what_kio_reads(data: bytes | None, error_code: int, cut: int, extra: bytes) -> None:
    """unwrap reads the common EnvelopeResponse in place; whole, cut short or with bytes after it, it must
    answer as kio does (or refuse with ProtocolError where kio's bounded decoding refuses)."""
    whole = wrap_response(7, 0, data)
    whole = whole[:-3] + struct.pack(">h", error_code) + whole[-1:]  # any int16, also codes kio's ErrorCode lacks
    for frame in (whole, whole[: len(whole) - cut], whole + extra):
        try:
            expected: object = _unwrap_by_kio(frame)
        except ProtocolError:
            expected = ProtocolError
        try:
            got: object = unwrap(frame)
        except ProtocolError:
            got = ProtocolError
        assert got == expected


def test_unwrap_takes_an_envelope_with_tagged_fields_through_kio() -> None:
    # Header and body each with one unknown tagged field (tag 9, 2 bytes): Kafka skips them, and so does unwrap.
    frame = struct.pack(">i", 7) + b"\x01\x09\x02ab" + b"\x04abc" + struct.pack(">h", 0) + b"\x01\x09\x02cd"
    assert unwrap(frame) == (0, b"abc")


def _header_by_kio(frame: bytes) -> tuple[str | None, int]:
    header, size = decode_entity(RequestHeaderV1, frame, 0)
    return header.client_id, size


@settings(max_examples=300, deadline=None)
@given(
    client_id=st.one_of(st.none(), st.text(max_size=30)),
    length_delta=st.sampled_from([0, 0, 0, -1, 1, -3]),
    body=st.binary(max_size=6),
    raw_tail=st.binary(max_size=4),
)
def test_peek_reads_the_client_id_as_kio_does(client_id: str | None, length_delta: int, body: bytes, raw_tail: bytes) -> None:
    """The client id is read in place; for every header, also with a wrong length or bytes that are not UTF-8,
    it must give kio's answer, or ProtocolError where kio's bounded decoding refuses."""
    encoded = b"" if client_id is None else client_id.encode()
    length = -1 if client_id is None else len(encoded) + length_delta
    frame = struct.pack(">hhih", 17, 1, 9, length) + encoded + raw_tail + body  # SaslHandshake v1: header v1
    try:
        expected: object = _header_by_kio(frame)
    except ProtocolError:
        expected = ProtocolError
    try:
        info = peek_request_header(frame)
        got: object = (info.client_id, info.header_size)
    except ProtocolError:
        got = ProtocolError
    assert got == expected
