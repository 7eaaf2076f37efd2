"""The bounded pre-pass: Kafka's length rules before kio allocates, and unknown tagged fields skipped."""

import random
import struct

import pytest

from envelope import ProtocolError, decode_body, peek_request_header
from envelope.bounded import MAX_STRING_LENGTH, check, prepare
from envelope.bounded_plan import plan_of
from envelope.build import build_entity
from envelope.codec import decode_entity, request_schema, response_schema
from envelope.principal import Principal
from envelope.varints import read_uvarint, write_uvarint
from envelope.wrap import unwrap_request, wrap
from fuzz.generate import body as generate_body
from tests.envelope.test_header_and_wrap import create_topics_v7


def _body_offset(frame: bytes) -> int:
    return peek_request_header(frame).header_size


def _create_acls_v3() -> bytes:
    from envelope.codec import encode_request

    values = {
        "creations": [
            {
                "resource_type": 2,
                "resource_name": "orders",
                "resource_pattern_type": 3,
                "principal": "User:alice",
                "host": "*",
                "operation": 3,
                "permission_type": 3,
            }
        ]
    }
    return encode_request(build_entity(request_schema(30, 3), values), correlation_id=5, client_id="c")


# --- whole, byte by byte, trailing ----------------------------------------------------------------


@pytest.mark.parametrize("make", [create_topics_v7, _create_acls_v3])
def test_every_prefix_of_a_body_is_refused_and_the_whole_is_accepted(make) -> None:  # type: ignore[no-untyped-def]
    frame = make()
    offset = _body_offset(frame)
    expected = decode_body(peek_request_header(frame).api_key, peek_request_header(frame).api_version, frame, offset)
    header = peek_request_header(frame)
    for cut in range(offset, len(frame)):
        with pytest.raises(ProtocolError):
            decode_body(header.api_key, header.api_version, frame[:cut], offset)
    assert decode_body(header.api_key, header.api_version, frame, offset) == expected
    # trailing data: refused by default, read past (as Kafka does) when allowed
    with pytest.raises(ProtocolError, match="trailing"):
        decode_body(header.api_key, header.api_version, frame + b"\x00\x01", offset)
    assert decode_body(header.api_key, header.api_version, frame + b"\x00\x01", offset, allow_trailing=True) == expected


# --- hostile lengths ------------------------------------------------------------------------------


def test_the_count_that_aborted_the_proxy_is_a_protocol_error() -> None:
    frame = create_topics_v7()
    offset = _body_offset(frame)
    hostile = frame[:offset] + bytes.fromhex("ffffffff0f") + frame[offset + 1 :]
    with pytest.raises(ProtocolError):
        decode_body(19, 7, hostile, offset)


@pytest.mark.parametrize("count", [100, 2**20, 2**31 - 2])
def test_an_array_count_is_checked_against_the_bytes_left(count: int) -> None:
    frame = create_topics_v7()
    offset = _body_offset(frame)
    hostile = frame[:offset] + write_uvarint(count + 1) + frame[offset + 1 :]
    with pytest.raises(ProtocolError, match="elements of at least"):
        decode_body(19, 7, hostile, offset)


def test_a_count_that_fits_but_lies_fails_on_the_missing_entry() -> None:
    frame = create_topics_v7()
    offset = _body_offset(frame)
    with pytest.raises(ProtocolError):
        decode_body(19, 7, frame[:offset] + write_uvarint(3) + frame[offset + 1 :], offset)


def test_a_null_non_nullable_array_is_refused() -> None:
    frame = create_topics_v7()
    offset = _body_offset(frame)
    with pytest.raises(ProtocolError, match="serialized as null"):
        decode_body(19, 7, frame[:offset] + b"\x00" + frame[-6:], offset)


def test_a_string_longer_than_kafka_allows_is_refused_before_reading_it() -> None:
    frame = create_topics_v7()
    offset = _body_offset(frame)
    name_at = offset + 1  # compact string length of the first topic's name
    hostile = frame[:name_at] + write_uvarint(MAX_STRING_LENGTH + 2) + frame[name_at + 1 :]
    with pytest.raises(ProtocolError, match="longer than 32767"):
        decode_body(19, 7, hostile, offset)


@pytest.mark.parametrize("length", [-2, -32768, 32767])
def test_non_flexible_string_lengths(length: int) -> None:
    from envelope.codec import encode_request

    frame = encode_request(build_entity(request_schema(19, 4), {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}], "timeout": 1, "validate_only": False}), correlation_id=1, client_id="c")
    offset = _body_offset(frame)
    hostile = frame[: offset + 4] + struct.pack(">h", length) + frame[offset + 6 :]
    with pytest.raises(ProtocolError):
        decode_body(19, 4, hostile, offset)


@pytest.mark.parametrize("raw", [b"\x80\x80\x80\x80\x80\x01", b"\xff\xff\xff\xff\x0f", b"\x80"])
def test_varints_beyond_five_bytes_or_int32_or_the_end(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        read_uvarint(raw, 0, len(raw))


def test_a_five_byte_varint_is_still_a_varint() -> None:
    assert read_uvarint(b"\x81\x80\x80\x80\x00", 0, 5) == (1, 5)


# --- unknown tagged fields ------------------------------------------------------------------------


def test_unknown_tags_at_the_top_level_and_inside_an_entry_are_skipped() -> None:
    frame = create_topics_v7()
    offset = _body_offset(frame)
    plain = decode_body(19, 7, frame, offset)
    top = frame[:-1] + bytes([1, 9, 1, 0x55])
    entry_end = len(frame) - 6  # the topic entry's tag section precedes timeout, validate_only and the top tags
    inner = frame[: entry_end - 1] + bytes([2, 7, 0, 9, 2, 1, 2]) + frame[entry_end:]
    for tagged in (top, inner):
        prepared = prepare(request_schema(19, 7), tagged, offset)
        assert prepared.unknown_tags >= 1
        assert decode_body(19, 7, tagged, offset) == plain


def test_unknown_tags_inside_a_deeper_entry_are_skipped() -> None:
    """CreatableTopicConfig inside CreatableTopic inside the request: three levels down."""
    from envelope.codec import encode_request

    values = {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [{"name": "retention.ms", "value": "1"}]}], "timeout": 1, "validate_only": False}
    frame = encode_request(build_entity(request_schema(19, 7), values), correlation_id=1, client_id="c")
    offset = _body_offset(frame)
    config_end = frame.index(b"\x021\x00") + 2  # value "1", then the config's empty tag section
    tagged = frame[:config_end] + bytes([1, 42, 3, 1, 2, 3]) + frame[config_end + 1 :]
    assert decode_body(19, 7, tagged, offset) == decode_body(19, 7, frame, offset)


def test_an_unknown_tag_whose_size_runs_past_the_end_is_refused() -> None:
    frame = create_topics_v7()
    with pytest.raises(ProtocolError, match="tagged field"):
        decode_body(19, 7, frame[:-1] + bytes([1, 9, 100, 0x55]), _body_offset(frame))


def test_a_known_tag_must_fill_exactly_its_size() -> None:
    # ApiVersionsResponse v3: tag 1 is FinalizedFeaturesEpoch (int64).
    schema = response_schema(18, 3)
    assert 1 in plan_of(schema).tagged
    body = bytes([0, 0, 1, 0, 0, 0, 0])  # error 0, no api keys, throttle 0
    good = body + bytes([1, 1, 8]) + bytes(8)
    assert check(schema, good)[0] == len(good)
    with pytest.raises(ProtocolError):
        check(schema, body + bytes([1, 1, 9]) + bytes(9))


# --- the Envelope and its principal --------------------------------------------------------------


def test_an_envelope_with_unknown_tags_in_the_embedded_request_keeps_its_bytes() -> None:
    frame = create_topics_v7()[:-1] + bytes([1, 9, 1, 0x55])
    _, parts = unwrap_request(wrap(frame, Principal("User", "alice"), "127.0.0.1", correlation_id=3))
    assert parts.request_data == frame  # untouched


def test_garbage_principal_bytes_are_a_protocol_error() -> None:
    from envelope.principal import deserialize_principal

    for data in (b"\x00\x00" + write_uvarint(2**20) + b"User", b"\x00\x00\x05User\xff\xff\xff\xff\x0f"):
        with pytest.raises(ProtocolError):
            deserialize_principal(data)


# --- the plan agrees with kio on every served schema ---------------------------------------------


@pytest.mark.parametrize("api_key", [3, 18, 19, 20, 29, 30, 31, 32, 33, 36, 37, 44, 48, 49, 50, 51, 55, 57, 58, 60])
def test_generated_valid_bodies_decode_through_kio_identically(api_key: int) -> None:
    from envelope.codec import known_versions

    known = known_versions(api_key)
    assert known is not None
    rng = random.Random(api_key)
    for version in range(known[0], known[1] + 1):
        for schema in (request_schema(api_key, version), response_schema(api_key, version)):
            for _ in range(10):
                data = bytes(generate_body(plan_of(schema), rng).out)
                try:
                    value, size = decode_entity(schema, data, 0)
                except ProtocolError as exc:
                    # Only values kio's types refuse (a version range 1..0) may fail; never a length.
                    assert "length" not in str(exc) and "elements" not in str(exc), exc
                    continue
                assert size == len(data)
                assert value is not None


@pytest.mark.parametrize("tagged", [False, True])
def test_a_long_top_level_array_is_decoded_element_by_element_to_the_same_value(tagged: bool) -> None:
    """Past LARGE_ARRAY_ELEMENTS entries, kio decodes each entry in its own call (the interpreter lock changes
    hands between them); the value is the one a single call gives."""
    from kio.serial import entity_reader

    from envelope.codec import LARGE_ARRAY_ELEMENTS, encode_request

    values = {
        "topics": [{"name": f"topic-{i}", "topic_id": None} for i in range(LARGE_ARRAY_ELEMENTS + 5)],
        "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": True,
    }
    frame = encode_request(build_entity(request_schema(3, 12), values), correlation_id=1, client_id="c")
    offset = _body_offset(frame)
    whole = entity_reader(request_schema(3, 12))(frame, offset)[0]
    if tagged:
        frame = frame[:-1] + bytes([1, 9, 1, 0x55])  # an unknown top-level tag: the copy path
    prepared = prepare(request_schema(3, 12), frame, offset, large_threshold=LARGE_ARRAY_ELEMENTS)
    assert [a.field for a in prepared.large] == ["topics"] and len(prepared.large[0].bounds) == LARGE_ARRAY_ELEMENTS + 5
    assert decode_body(3, 12, frame, offset) == whole
