"""The order in which a small java.util.HashMap iterates its keys, for answers whose order Kafka leaves to one.

Kafka's ClientQuotaControlManager and ScramControlManager collect results (and read
entity types and quota keys) through HashMaps; which of several problems is
reported first, and the order of the answer's entries, follow the map's
iteration order. A HashMap iterates its buckets in index order (the key's hash,
spread as `h ^ (h >>> 16)`, masked by the table size), and each bucket in the
order its keys arrived; the table doubles when it holds more than 3/4 of its
size. That is all small maps need (no bucket here grows long enough to become a tree).
"""

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from envelope.java_types import INT_VALUES, to_int

K = TypeVar("K", bound=Hashable)

DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75
_HASH_SPREAD_SHIFT = 16  # HashMap.hash: h ^ (h >>> 16)


def string_hash(text: str | None) -> int:
    """Java's String.hashCode (over UTF-16 code units); 0 for null, as Objects.hashCode gives."""
    if text is None:
        return 0
    units = text.encode("utf-16-be")
    value = 0
    for index in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[index : index + 2], "big")) & 0xFFFFFFFF
    return to_int(value)


def map_hash(entries: Iterable[tuple[str, str | None]]) -> int:
    """AbstractMap.hashCode of a Map<String, String>: the sum of key.hashCode() ^ value.hashCode()."""
    return to_int(sum(string_hash(key) ^ string_hash(value) for key, value in entries))


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size *= 2
    return size


def hashmap_order(keys: Iterable[K], hash_of: Callable[[K], int], initial_capacity: int = DEFAULT_CAPACITY) -> list[K]:
    """The distinct `keys`, put in this order into `new HashMap<>(initial_capacity)`, in its iteration order."""
    arrived: dict[K, int] = {}
    for key in keys:
        arrived.setdefault(key, len(arrived))
    size = _table_size_for(max(initial_capacity, 1))
    while len(arrived) > size * LOAD_FACTOR:
        size *= 2

    def slot(key: K) -> tuple[int, int]:
        spread = hash_of(key) % INT_VALUES  # the int's bits, unsigned, as `>>>` reads them
        spread ^= spread >> _HASH_SPREAD_SHIFT
        return spread & (size - 1), arrived[key]

    return sorted(arrived, key=slot)


def string_map_order(keys: Iterable[str], initial_capacity: int = DEFAULT_CAPACITY) -> list[str]:
    return hashmap_order(keys, string_hash, initial_capacity)


def java_map_text(entries: Iterable[tuple[str, str | None]]) -> str:
    """AbstractMap.toString: {k1=v1, k2=v2}, null as `null`."""
    return "{" + ", ".join(f"{key}={'null' if value is None else value}" for key, value in entries) + "}"
