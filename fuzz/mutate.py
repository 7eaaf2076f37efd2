"""Break a valid message where a decoder is most likely to trust it: lengths, counts, varints, tags, ends."""

import random
import struct
from collections.abc import Callable

from envelope.varints import read_uvarint, write_uvarint
from fuzz.generate import FIXED, LENGTH, TAGS, Generated, Site

# Compact (varint) lengths: null, huge, past int32, the issue's `ff ff ff ff 0f`, over-long (6 and 10 bytes).
_HOSTILE_VARINTS = (
    b"\x00",
    b"\xff\xff\xff\xff\x07",
    b"\xff\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x80\x01",
    b"\xff" * 9 + b"\x01",
    write_uvarint(2**20),
    write_uvarint(2**16),
    write_uvarint(128),
)
_HOSTILE_INT32 = (-1, -2, -(2**31), 2**31 - 1, 2**24, 65536, 128)
_HOSTILE_INT16 = (-1, -2, -32768, 32767, 4096)


def _splice(data: bytes, site: Site, replacement: bytes) -> bytes:
    return data[: site.start] + replacement + data[site.end :]


def _hostile_length(data: bytes, site: Site, rng: random.Random) -> bytes:
    if site.flexible:
        value, _ = read_uvarint(data, site.start, site.end)
        choices = (*_HOSTILE_VARINTS, write_uvarint(value + 1), write_uvarint(max(0, value - 1)))
        return _splice(data, site, rng.choice(choices))
    if site.wide:
        return _splice(data, site, struct.pack(">i", rng.choice(_HOSTILE_INT32)))
    return _splice(data, site, struct.pack(">h", rng.choice(_HOSTILE_INT16)))


def _widen_varint(data: bytes, site: Site, rng: random.Random) -> bytes:
    """The same value in more bytes: up to 5 is legal for Kafka, 6 and more is not."""
    if not site.flexible:
        return data
    value, _ = read_uvarint(data, site.start, site.end)
    width = rng.choice((2, 3, 5, 6))
    out = bytearray()
    for index in range(width):
        last = index == width - 1
        out.append(((value >> (7 * index)) & 0x7F) | (0 if last else 0x80))
    return _splice(data, site, bytes(out))


def _unknown_tags(data: bytes, site: Site, rng: random.Random) -> bytes:
    """Add tagged fields to a section: unknown tags, sometimes a known tag number with garbage, sometimes an oversized size."""
    count, _ = read_uvarint(data, site.start, site.end)
    extra = rng.choice((1, 1, 2, 3))
    fields = bytearray()
    for _ in range(extra):
        tag = rng.choice((0, 1, 2, 7, 99, 10_000, 2**31 - 1))
        value = rng.randbytes(rng.choice((0, 1, 4, 16)))
        size = len(value) if rng.random() < 0.8 else rng.choice((len(value) + 1, 2**20, 2**31 - 1))
        fields += write_uvarint(tag) + write_uvarint(size) + value
    # The new fields go first: the section's existing fields still follow them.
    return data[: site.start] + write_uvarint(count + extra) + fields + data[site.end :]


def _overwrite_fixed(data: bytes, site: Site, rng: random.Random) -> bytes:
    width = site.end - site.start
    fill = rng.choice((b"\xff", b"\x80", b"\x7f", b"\x02"))
    return _splice(data, site, (fill * width)[:width])


_BY_SITE: dict[str, tuple[Callable[[bytes, Site, random.Random], bytes], ...]] = {
    LENGTH: (_hostile_length, _hostile_length, _widen_varint),
    TAGS: (_unknown_tags, _widen_varint, _hostile_length),
    FIXED: (_overwrite_fixed,),
}


def mutate(prefix: bytes, generated: Generated, rng: random.Random) -> bytes:
    """One to three structure-aware mutations of `prefix + body`, applied from the end so offsets stay valid."""
    data = prefix + bytes(generated.out)
    shift = len(prefix)
    sites = [Site(s.kind, s.start + shift, s.end + shift, s.flexible, s.wide) for s in generated.sites]
    roll = rng.random()
    if sites and roll < 0.75:
        chosen = sorted(rng.sample(sites, min(len(sites), rng.choice((1, 1, 1, 2, 3)))), key=lambda s: s.start, reverse=True)
        for site in chosen:
            data = rng.choice(_BY_SITE[site.kind])(data, site, rng)
        return data
    if roll < 0.85:
        return data[: rng.randrange(0, len(data) + 1)]  # truncated
    if roll < 0.93:
        return data + rng.randbytes(rng.choice((1, 3, 64)))  # trailing bytes
    position = rng.randrange(0, len(data)) if data else 0
    return data[:position] + bytes([rng.randrange(256)]) + data[position + 1 :]  # one random byte
