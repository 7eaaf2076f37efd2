"""Kafka's unsigned varints, read within bounds and written, and skipping a header's tagged-field section.

Every length and count of a flexible message is one of these varints; reading
one never looks past the end it is given nor takes more than 5 bytes, as
Kafka's ByteUtils. Pure and sans-IO, like the rest of the wire layer.
"""

from envelope.errors import ProtocolError
from envelope.java_types import INT_MAX

_MAX_VARINT_BYTES = 5


def read_uvarint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes, as Kafka's ByteUtils reads it: (value, new position)."""
    if pos < end and data[pos] < 0x80:
        return data[pos], pos + 1  # the usual one-byte varint: lengths and counts under 128
    value = 0
    shift = 0
    for index in range(_MAX_VARINT_BYTES):
        if pos + index >= end:
            raise ProtocolError("varint runs past the end of the message")
        byte = data[pos + index]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value > INT_MAX:
                raise ProtocolError(f"varint {value} does not fit in a signed 32-bit integer")
            return value, pos + index + 1
        shift += 7
    raise ProtocolError("varint is longer than 5 bytes")


def skip_tagged_fields(frame: bytes, offset: int) -> int:
    """The offset after a header's tagged-field section; every tag skipped, as Kafka skips tags it does not know."""
    end = len(frame)
    count, offset = read_uvarint(frame, offset, end)
    if count * 2 > end - offset:
        raise ProtocolError(f"header: {count} tagged fields but only {end - offset} bytes remain")
    for _ in range(count):
        _, offset = read_uvarint(frame, offset, end)
        length, offset = read_uvarint(frame, offset, end)
        offset += length
        if offset > end:
            raise ProtocolError("tagged field runs past the end of the header")
    return offset


def write_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
