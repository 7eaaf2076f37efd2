"""Valid message bodies from a schema, with a map of the bytes worth mutating.

The generator writes Kafka's encoding directly from kio's schema classes (the
same compiled plan the bounded reader walks) rather than through kio's writer,
so a disagreement between the plan and kio shows up as a decode failure of a
valid input. Every length, count and tagged-field section it writes is
recorded as a `Site`, which the mutator then breaks on purpose.
"""

import random
import struct
from dataclasses import dataclass, field

from envelope.bounded_plan import _ARRAY, _BYTES, _ENTITY, _FIXED, _STR, _Entity, _Field
from envelope.varints import write_uvarint

# Sites the mutator knows how to break.
LENGTH = "length"  # a string/bytes length or an array count (compact varint or fixed int16/int32)
TAGS = "tags"  # the count varint of a tagged-field section
FIXED = "fixed"  # a fixed-width value (enums, booleans, ids)

_NAMES = ("orders", "payments", "a", "topic-1", "clicks.v2", "_internal", "ü-topic")


@dataclass(frozen=True, slots=True)
class Site:
    kind: str
    start: int
    end: int
    flexible: bool
    wide: bool = True  # non-flexible prefix width: int32 (arrays, bytes) or int16 (strings)


@dataclass
class Generated:
    out: bytearray = field(default_factory=bytearray)
    sites: list[Site] = field(default_factory=list)


def _length(gen: Generated, value: int, flexible: bool, wide: bool) -> None:
    start = len(gen.out)
    if flexible:
        gen.out += write_uvarint(value + 1)
    else:
        gen.out += struct.pack(">i" if wide else ">h", value)
    gen.sites.append(Site(LENGTH, start, len(gen.out), flexible, wide))


def _fixed(gen: Generated, fld: _Field, rng: random.Random) -> None:
    start = len(gen.out)
    # Small values decode under every kio type (booleans, enums, timestamps, error code 0).
    gen.out += bytes(fld.size - 1) + bytes([rng.choice((0, 1))])
    gen.sites.append(Site(FIXED, start, len(gen.out), False))


def _field(gen: Generated, fld: _Field, flexible: bool, rng: random.Random, depth: int) -> None:
    if fld.kind == _FIXED:
        _fixed(gen, fld, rng)
        return
    if fld.kind == _ENTITY:
        assert fld.entity is not None
        if fld.nullable:
            if rng.random() < 0.3:
                gen.out.append(0xFF)
                return
            gen.out.append(1)
        entity(gen, fld.entity, rng, depth + 1)
        return
    if fld.nullable and rng.random() < 0.15:
        _length(gen, -1, flexible, fld.kind != _STR)
        return
    if fld.kind == _ARRAY:
        assert fld.element is not None
        count = rng.choice((0, 1, 1, 2, 3)) if depth < 3 else 0
        _length(gen, count, flexible, True)
        for _ in range(count):
            _field(gen, fld.element, flexible, rng, depth)
        return
    data = rng.choice(_NAMES).encode() if fld.kind == _STR else rng.randbytes(rng.choice((0, 3, 8)))
    _length(gen, len(data), flexible, fld.kind != _STR)
    gen.out += data
    assert fld.kind in (_STR, _BYTES)


def entity(gen: Generated, plan: _Entity, rng: random.Random, depth: int = 0) -> None:
    for fld in plan.positional:
        _field(gen, fld, plan.flexible, rng, depth)
    if plan.flexible:
        # Known tagged fields are optional; sometimes write them, always inside a sized window.
        chosen = [(tag, fld) for tag, fld in sorted(plan.tagged.items()) if rng.random() < 0.3]
        start = len(gen.out)
        gen.out += write_uvarint(len(chosen))
        gen.sites.append(Site(TAGS, start, len(gen.out), True))
        for tag, fld in chosen:
            inner = Generated()
            _field(inner, fld, True, rng, depth)
            gen.out += write_uvarint(tag) + write_uvarint(len(inner.out))
            shift = len(gen.out)
            gen.sites += [Site(s.kind, s.start + shift, s.end + shift, s.flexible, s.wide) for s in inner.sites]
            gen.out += inner.out


def body(plan: _Entity, rng: random.Random) -> Generated:
    gen = Generated()
    entity(gen, plan, rng)
    return gen
