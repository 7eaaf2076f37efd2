"""KIP-590 ApiVersions intersection and the ApiVersions answers a forwarder sends."""

import struct

import pytest
from kio.schema.errors import ErrorCode

from apiversions import (
    VersionRange,
    build_response,
    intersect,
    kio_range,
    must_reconnect_clients,
    parse_response,
)
from envelope import FORWARDABLE
from envelope.codec import decode_response_body, known_versions

R = VersionRange

OWN = {
    3: R(0, 12),  # Metadata: not forwardable
    18: R(0, 4),  # ApiVersions: not forwardable
    19: R(2, 7),  # CreateTopics
    20: R(1, 6),  # DeleteTopics
    33: R(0, 2),  # AlterConfigs
    37: R(0, 3),  # CreatePartitions
    44: R(0, 1),  # IncrementalAlterConfigs
}


# --- VersionRange ---------------------------------------------------------------------------------


def test_version_range_validation_and_contains() -> None:
    with pytest.raises(ValueError):
        R(3, 2)
    with pytest.raises(ValueError):
        R(-1, 2)
    r = R(2, 5)
    assert 2 in r and 5 in r and 3 in r
    assert 1 not in r and 6 not in r and "3" not in r
    assert r.intersect(R(4, 9)) == R(4, 5)
    assert r.intersect(R(6, 9)) is None
    assert r.intersect(R(5, 5)) == R(5, 5)


# --- intersect ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("own", "controller", "expected"),
    [
        # not forwardable: own range kept, whatever the controller says (or lacks)
        ({3: R(0, 12)}, {3: R(5, 6)}, {3: R(0, 12)}),
        ({3: R(0, 12)}, {}, {3: R(0, 12)}),
        # forwardable overlap: min = larger min, max = smaller max
        ({19: R(2, 7)}, {19: R(0, 5)}, {19: R(2, 5)}),
        ({19: R(2, 7)}, {19: R(4, 9)}, {19: R(4, 7)}),
        ({19: R(2, 7)}, {19: R(3, 4)}, {19: R(3, 4)}),
        ({19: R(2, 7)}, {19: R(0, 9)}, {19: R(2, 7)}),
        ({19: R(2, 7)}, {19: R(7, 9)}, {19: R(7, 7)}),  # touching at one version
        # controller lacks the API -> left out
        ({19: R(2, 7), 3: R(0, 12)}, {3: R(0, 12)}, {3: R(0, 12)}),
        # non-overlapping ranges -> left out
        ({19: R(2, 7)}, {19: R(8, 9)}, {}),
        ({19: R(2, 7)}, {19: R(0, 1)}, {}),
        # controller APIs we do not serve are never advertised
        ({3: R(0, 12)}, {19: R(0, 7), 58: R(0, 0)}, {3: R(0, 12)}),
    ],
)
def test_intersect_table(own, controller, expected) -> None:  # type: ignore[no-untyped-def]
    result = intersect(own, controller, FORWARDABLE)
    assert result == expected


def test_intersect_mixed() -> None:
    controller = {18: R(0, 3), 19: R(0, 6), 20: R(5, 9), 33: R(3, 4), 3: R(0, 1)}
    assert intersect(OWN, controller, FORWARDABLE) == {
        3: R(0, 12),  # own
        18: R(0, 4),  # own (not forwardable)
        19: R(2, 6),
        20: R(5, 6),
        # 33 no overlap, 37 and 44 missing on the controller
    }


def test_intersect_controller_unknown_falls_back_to_own() -> None:
    assert intersect(OWN, None, FORWARDABLE) == OWN


def test_intersect_uses_the_given_forwardable_set() -> None:
    assert intersect({3: R(0, 12)}, {3: R(1, 2)}, forwardable=[3]) == {3: R(1, 2)}
    assert intersect({19: R(2, 7)}, {}, forwardable=iter(())) == {19: R(2, 7)}


def test_intersect_result_is_sorted_and_fresh() -> None:
    own = {44: R(0, 1), 3: R(0, 12), 19: R(2, 7)}
    result = intersect(own, None, FORWARDABLE)
    assert list(result) == [3, 19, 44]
    result[3] = R(0, 0)
    assert own[3] == R(0, 12)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (None, {19: R(2, 7)}, False),  # first time known: nobody to reconnect
        ({19: R(2, 7)}, {19: R(2, 7)}, False),
        ({19: R(2, 7)}, {19: R(2, 6)}, True),
        ({19: R(2, 7)}, {19: R(2, 7), 20: R(1, 6)}, True),
        ({19: R(2, 7), 20: R(1, 6)}, {19: R(2, 7)}, True),
        ({}, {}, False),
    ],
)
def test_must_reconnect_clients(before, after, expected) -> None:  # type: ignore[no-untyped-def]
    assert must_reconnect_clients(before, after) is expected


def test_controller_change_scenario() -> None:
    old = intersect(OWN, {19: R(0, 7), 20: R(0, 6)}, FORWARDABLE)
    same = intersect(OWN, {19: R(2, 9), 20: R(1, 6)}, FORWARDABLE)
    new = intersect(OWN, {19: R(0, 5), 20: R(0, 6)}, FORWARDABLE)
    assert not must_reconnect_clients(old, same)
    assert must_reconnect_clients(old, new)


def test_kio_range() -> None:
    assert kio_range(18) == R(*known_versions(18))  # type: ignore[misc]
    low, high = known_versions(19)  # type: ignore[misc]
    assert kio_range(19, R(0, 5)) == R(low, 5)
    with pytest.raises(ValueError):
        kio_range(19, R(high + 1, high + 5))
    with pytest.raises(ValueError):
        kio_range(32000)


# --- build_response / parse_response -------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_build_response_parses_back(version: int) -> None:
    frame = build_response(version, 4711, OWN, throttle_time_ms=25)
    assert struct.unpack_from(">i", frame)[0] == 4711
    assert parse_response(frame, version) == (0, OWN)
    correlation_id, body = decode_response_body(18, version, frame)
    assert correlation_id == 4711
    if version >= 1:
        assert int(body.throttle_time.total_seconds() * 1000) == 25


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_response_header_is_v0_at_every_version(version: int) -> None:
    frame = build_response(version, 0x01020304, OWN)
    # correlation id, then directly the int16 error code: no tagged-field byte in between
    assert frame[:4] == b"\x01\x02\x03\x04"
    assert frame[4:6] == b"\x00\x00"
    if version >= 3:
        # flexible body: compact array length (N+1) right after the error code
        assert frame[6] == len(OWN) + 1
    else:
        assert struct.unpack_from(">i", frame, 6)[0] == len(OWN)


@pytest.mark.parametrize("version", [5, 6, 127, -1])
def test_unsupported_version_gets_error_35_as_v0(version: int) -> None:
    frame = build_response(version, 99, OWN)
    assert frame[:4] == struct.pack(">i", 99)
    assert struct.unpack_from(">h", frame, 4)[0] == ErrorCode.unsupported_version == 35
    # v0 body: error code, int32 array length 1, one (key, min, max) entry, nothing else
    assert frame[6:] == struct.pack(">ihhh", 1, 18, 0, 4)
    assert parse_response(frame, 0) == (35, {18: R(0, 4)})


def test_unsupported_version_reports_our_apiversions_range() -> None:
    ranges = {**OWN, 18: R(0, 2)}
    frame = build_response(3, 1, ranges)  # 3 is beyond what we advertise for ApiVersions
    assert parse_response(frame, 0) == (35, {18: R(0, 2)})
    assert parse_response(build_response(2, 1, ranges), 2) == (0, ranges)


def test_parse_response_of_a_controller_answer() -> None:
    controller = {18: R(0, 4), 19: R(0, 7), 58: R(0, 0)}
    frame = build_response(3, 5, controller)
    error, ranges = parse_response(frame, 3)
    assert error == 0
    assert intersect(OWN, ranges, FORWARDABLE)[19] == R(2, 7)
