"""Java's integer bounds, as Kafka's messages, its metadata records and its configs meet them.

Kafka is written in Java, so its limits are those of Java's primitive types: a STRING's length is a
short, an INT config, a varint and the authorized-operations field are ints, a time in milliseconds is a
long. Every package imports these from here rather than writing the number again.
"""

SHORT_MAX = 2**15 - 1
"""Short.MAX_VALUE: the longest STRING a message or a metadata record holds, and a version range's open end."""
INT_MIN = -(2**31)
"""Integer.MIN_VALUE."""
INT_MAX = 2**31 - 1
"""Integer.MAX_VALUE: the largest INT config, count or signed varint."""
LONG_MAX = 2**63 - 1
"""Long.MAX_VALUE: the largest LONG config or time in milliseconds."""
LONG_VALUES = 2**64
"""How many values a long has: Java's long arithmetic wraps modulo this."""
INT_VALUES = 2**32
"""How many values an int has."""


def to_int(value: int) -> int:
    """`value` as a Java int holds it: the low 32 bits, signed (Java's int arithmetic and `(int)` casts wrap so)."""
    value %= INT_VALUES
    return value - INT_VALUES if value > INT_MAX else value
