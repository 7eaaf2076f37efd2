"""RequestPrincipal serde: Kafka's DefaultKafkaPrincipalBuilder wire format."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envelope
from envelope import Principal, deserialize_principal, serialize_principal

# 2-byte version 0, compact string "User", compact string "alice", bool false, no tagged fields.
ALICE_GOLDEN = bytes.fromhex("0000055573657206616c69636500 00".replace(" ", ""))


def _compact_length(length: int) -> bytes:
    value, out = length + 1, bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_golden_bytes_match_kafka() -> None:
    assert ALICE_GOLDEN == bytes([0x00, 0x00, 0x05, 0x55, 0x73, 0x65, 0x72, 0x06, 0x61, 0x6C, 0x69, 0x63, 0x65, 0x00, 0x00])
    assert serialize_principal(Principal("User", "alice")) == ALICE_GOLDEN


def test_golden_bytes_deserialize() -> None:
    assert deserialize_principal(ALICE_GOLDEN) == Principal("User", "alice", False)


def test_token_authenticated_flag_is_the_bool_byte() -> None:
    data = serialize_principal(Principal("User", "alice", token_authenticated=True))
    assert data == ALICE_GOLDEN[:-2] + b"\x01\x00"
    assert deserialize_principal(data).token_authenticated is True


def test_parse_and_str() -> None:
    assert Principal.parse("User:alice") == Principal("User", "alice")
    assert Principal.parse("Group:a:b") == Principal("Group", "a:b")
    assert str(Principal("User", "alice")) == "User:alice"
    for bad in ("alice", ":alice", ""):
        with pytest.raises(ValueError):
            Principal.parse(bad)


_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(kind=_text, name=_text, token=st.booleans())
def test_roundtrip(kind: str, name: str, token: bool) -> None:
    principal = Principal(kind, name, token)
    data = serialize_principal(principal)
    assert data[:2] == b"\x00\x00"
    assert deserialize_principal(data) == principal


@pytest.mark.parametrize("version", [1, 2, -1, 0x7FFF])
def test_unknown_version_is_refused(version: int) -> None:
    data = version.to_bytes(2, "big", signed=True) + ALICE_GOLDEN[2:]
    with pytest.raises(envelope.ProtocolError):
        deserialize_principal(data)


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\x00\xff\xff\xff\xff\xff\xff",  # varint longer than 5 bytes
        b"\x00\x00\x00",  # compact string length 0 = null, Type is not nullable
        b"\x00\x00\x7f" + b"x" * 4,  # length far beyond the data
        b"garbage!",
        ALICE_GOLDEN[:-1] + b"\x01\x05\x09\x00",  # a tagged field longer than what is left
        b"\x00\x00\x05User" + _compact_length(0x8000) + b"n" * 0x8000 + b"\x00\x00",  # a string over 32767 bytes
        b"\x00\x00\x05User\x06alice",  # no TokenAuthenticated byte
    ],
)
def test_garbage_is_refused(garbage: bytes) -> None:
    with pytest.raises(envelope.ProtocolError):
        deserialize_principal(garbage)


@pytest.mark.parametrize("cut", range(len(ALICE_GOLDEN)))
def test_truncated_is_refused(cut: int) -> None:
    with pytest.raises(envelope.ProtocolError):
        deserialize_principal(ALICE_GOLDEN[:cut])


# What Kafka 4.3.1's controller accepts in an Envelope (DefaultKafkaPrincipalBuilder.deserialize reads the fields it
# knows from a ByteBuffer and stops), checked against a node: the controller must accept the same, or it answers 97
# where Kafka executes the request.


@pytest.mark.parametrize("extra", [b"\x00", b"\x01\x02", ALICE_GOLDEN])
def test_trailing_bytes_are_ignored_as_kafka_ignores_them(extra: bytes) -> None:
    assert deserialize_principal(ALICE_GOLDEN + extra) == Principal("User", "alice")


def test_unknown_tagged_fields_are_skipped() -> None:
    # Same principal, but the tagged-field section holds unknown fields: tag 5, size 1, value 0x00; tag 7, empty.
    data = ALICE_GOLDEN[:-1] + bytes([0x02, 0x05, 0x01, 0x00, 0x07, 0x00])
    assert deserialize_principal(data) == Principal("User", "alice")


@pytest.mark.parametrize("flag", [1, 2, 0x7F, 0xFF])
def test_any_non_zero_token_authenticated_byte_is_true(flag: int) -> None:
    assert deserialize_principal(ALICE_GOLDEN[:-2] + bytes([flag, 0])).token_authenticated is True


def test_malformed_utf8_becomes_replacement_characters() -> None:
    """Java's new String(bytes, UTF_8) never fails."""
    data = b"\x00\x00\x07\xff\xfeUser\x06alice\x00\x00"
    assert deserialize_principal(data) == Principal("\ufffd\ufffdUser", "alice")


def test_a_tagged_field_count_that_wraps_negative_reads_none() -> None:
    """ByteUtils.readUnsignedVarint returns an int: 2^32 - 1 is -1, and Kafka's loop reads no tagged field."""
    assert deserialize_principal(ALICE_GOLDEN[:-1] + b"\xff\xff\xff\xff\x0f") == Principal("User", "alice")


def test_the_longest_string_and_empty_ones_are_read() -> None:
    longest = b"\x00\x00\x05User" + _compact_length(0x7FFF) + b"n" * 0x7FFF + b"\x00\x00"
    assert deserialize_principal(longest).name == "n" * 0x7FFF
    assert deserialize_principal(b"\x00\x00\x01\x01\x00\x00") == Principal("", "")

