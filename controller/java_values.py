"""Java's rules for values as text, where Kafka's answers show them: what Java parses, prints and iterates in.

Integer.parseInt and its kin (`java_integer`), String.trim, Double.toString,
a parsed value's toString, and the order a java.util.HashMap or a Scala
mutable HashMap of config names iterates in, so that the embedded controller
words and orders its answers as Kafka's does.
"""

import math
import re
import unicodedata
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from controller.java_order import DEFAULT_CAPACITY, LOAD_FACTOR, string_hash, string_map_order

#: Integer.parseInt's and Long.parseLong's text: Java takes any Unicode decimal digit (Character.digit), as
#: ``\d`` on a str pattern and Python's int() do; the two agree on everything this pattern lets through.
INTEGER = re.compile(r"[+-]?\d+")
#: No value of a Java long has more significant digits.
_LONG_DIGITS = 19


def java_trim(text: str) -> str:
    """Java's String.trim: strips every character up to and including U+0020 from both ends."""
    start, end = 0, len(text)
    while start < end and ord(text[start]) <= 32:
        start += 1
    while end > start and ord(text[end - 1]) <= 32:
        end -= 1
    return text[start:end]


def java_double(value: float) -> str:
    """Java's Double.toString: the shortest digits, plain from 10^-3 to 10^7, else computerized scientific notation."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in shortest.digits)
    exponent = int(shortest.exponent)  # abs(value) == int(digits) * 10**exponent
    if 1e-3 <= abs(value) < 1e7:
        if exponent >= 0:
            whole, fraction = digits + "0" * exponent, ""
        elif len(digits) + exponent > 0:
            whole, fraction = digits[: len(digits) + exponent], digits[len(digits) + exponent :]
        else:
            whole, fraction = "0", "0" * -(len(digits) + exponent) + digits
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{len(digits) - 1 + exponent}"


def java_text(value: Any) -> str:
    """What Java's toString gives for a parsed config value (in Kafka's error messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(java_text(item) for item in value) + "]"
    return str(value)


def java_integer(text: str, bits: int = 32) -> int | None:
    """Short/Integer/Long.parseX of `text` for a `bits`-wide type: the value, or None where Java throws
    NumberFormatException. Leading zeros are dropped first, so that no text reaches int() with more digits
    than a long has: int() refuses over 4,300 digits, and a config value may hold 32,767 characters."""
    if INTEGER.fullmatch(text) is None:
        return None
    sign, digits = (text[0], text[1:]) if text[0] in "+-" else ("", text)
    start = 0
    while start < len(digits) - 1 and unicodedata.decimal(digits[start]) == 0:
        start += 1
    if len(digits) - start > _LONG_DIGITS:
        return None
    number = int(sign + digits[start:])
    bound = 2 ** (bits - 1)
    return number if -bound <= number < bound else None


def java_hash_map_order(keys: Iterable[str], *, copy_of_size: int) -> list[str]:
    """The order of a java.util.HashMap made by putAll of `copy_of_size` entries into an empty one (its table sized up front)."""
    return string_map_order(keys, int(copy_of_size / LOAD_FACTOR + 1.0) if copy_of_size else DEFAULT_CAPACITY)


def scala_hash_map_order(keys: Iterable[str]) -> list[str]:
    """The order a scala.collection.mutable.HashMap (2.13) iterates `keys` in: by bucket, then by hash within one."""
    ordered = list(keys)
    capacity = DEFAULT_CAPACITY
    while len(ordered) > capacity * LOAD_FACTOR:
        capacity *= 2

    def spread(key: str) -> int:
        h = string_hash(key) & 0xFFFFFFFF
        return h ^ (h >> 16)

    return sorted(ordered, key=lambda k: (spread(k) & (capacity - 1), spread(k)))
