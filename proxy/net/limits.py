"""Connection limits: `max.connections`, `max.connections.per.ip`, `max.connections.per.ip.overrides`.

Scope decisions (documented because they differ in detail from Kafka):

* Per-IP counts are per process, across all listeners, as in Kafka: a client
  connecting to two listeners uses two of its `max.connections.per.ip`.
* `max.connections` is a per-listener limit when the listener sets it
  (`listener.name.<listener>.max.connections`, counted on that listener only)
  and a process-wide limit otherwise (counted over every listener's
  connections). The listener value *replaces* the global one for that listener,
  the usual KIP-103 override rule. Kafka instead enforces both at once, and
  blocks the acceptor rather than refusing; a proxy refuses and closes.
* The per-IP keys may also be given per listener (same override rule); the
  count they are compared with is still the process-wide count for the address.
* Kafka's default for each limit is Int.MaxValue, i.e. unlimited: None here.
* Overrides must be IP addresses: Kafka resolves host names once at startup,
  but this module does no I/O and a name that never matches a peer would be a
  silently ignored limit, so names are a configuration error.

Addresses are normalised with `ipaddress` (IPv4-mapped IPv6 is the IPv4
address, IPv6 text forms are canonical, zones dropped) so that `::1` and
`0:0:0:0:0:0:0:1` share one count. The tracker is not thread-safe: it is meant
for one trio event loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from envelope.java_types import INT_MAX
from proxy.net.ip_filter import parse_address
from proxy.properties import ConfigError, listener_prefix

MAX_CONNECTIONS = "max.connections"
MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
MAX_CONNECTIONS_PER_IP_OVERRIDES = "max.connections.per.ip.overrides"

_INTEGER = re.compile(r"[+-]?[0-9]+")


def normalize_address(address: str) -> str:
    """Canonical text of a peer address; an unparseable address is kept as given (still counted)."""
    parsed = parse_address(address)
    return str(parsed) if parsed is not None else address.strip()


def _split_override(key: str, text: str, item: str) -> tuple[str, str]:
    """`host:count`, `[v6]:count`, or bare IPv6 `a:b::c:count` where the last colon separates the count (Kafka's parseCsvMap)."""
    if item.startswith("["):
        close = item.find("]")
        if close == -1 or not item[close + 1 :].lstrip().startswith(":"):
            raise ConfigError(key, text, f"entry {item!r} is not of the form [ipv6]:count")
        return item[1:close].strip(), item[close + 1 :].lstrip()[1:].strip()
    colon = item.rfind(":")
    if colon == -1:
        raise ConfigError(key, text, f"entry {item!r} is not of the form host:count")
    return item[:colon].strip(), item[colon + 1 :].strip()


def parse_overrides(key: str, text: str | None) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: `host:count,host:count` -> {normalised address: count}.

    Empty entries are skipped (as Kafka's split does for a trailing comma); a
    duplicate address (also in another spelling) is an error, where Kafka would
    silently keep the last.
    """
    result: dict[str, int] = {}
    spelled: dict[str, str] = {}
    if text is None:
        return result
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        host, count_text = _split_override(key, text, item)
        if not host:
            raise ConfigError(key, text, f"entry {item!r} has no host")
        parsed = parse_address(host)
        if parsed is None and parse_address(item) is not None:
            raise ConfigError(key, text, f"entry {item!r} has no count; write [{item}]:count")
        if parsed is None:
            raise ConfigError(key, text, f"entry {item!r}: {host!r} is not an IP address (host names are not resolved; list the addresses)")
        if not count_text.isascii() or not count_text.isdigit():
            raise ConfigError(key, text, f"entry {item!r}: count {count_text!r} is not a non-negative integer")
        count = int(count_text)
        if count > INT_MAX:
            raise ConfigError(key, text, f"entry {item!r}: count {count} is above {INT_MAX}")
        address = str(parsed)
        if address in result:
            raise ConfigError(key, text, f"address {address} is listed twice ({spelled[address]!r} and {host!r})")
        result[address] = count
        spelled[address] = host
    return result


def _parse_limit(key: str, text: str) -> int | None:
    stripped = text.strip()
    if not _INTEGER.fullmatch(stripped):
        raise ConfigError(key, text, "expected an integer")
    value = int(stripped)
    if value < 0:
        raise ConfigError(key, text, "must be at least 0")
    if value > INT_MAX:
        raise ConfigError(key, text, f"must be at most {INT_MAX} (which means unlimited)")
    return None if value == INT_MAX else value  # Kafka's default for every connection limit, meaning unlimited


@dataclass(frozen=True)
class ConnectionLimits:
    """Limits for one listener. None = unlimited. Override keys are normalised addresses."""

    max_connections: int | None = None
    max_per_ip: int | None = None
    per_ip_overrides: dict[str, int] = field(default_factory=dict)
    # True when max_connections came from listener.name.<listener>.max.connections: it then counts
    # this listener's connections only, otherwise all connections of the process.
    max_connections_per_listener: bool = False

    def __post_init__(self) -> None:
        for name, value in (("max_connections", self.max_connections), ("max_per_ip", self.max_per_ip)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        normalised: dict[str, int] = {}
        for host, count in self.per_ip_overrides.items():
            if count < 0:
                raise ValueError(f"override for {host} must not be negative, got {count}")
            parsed = parse_address(host)
            if parsed is None:
                raise ValueError(f"override host {host!r} is not an IP address")
            normalised[str(parsed)] = count
        object.__setattr__(self, "per_ip_overrides", normalised)

    def limit_for(self, address: str) -> tuple[str, int] | None:
        """(config key, limit) that applies to connections from `address`, or None when unlimited."""
        override = self.per_ip_overrides.get(normalize_address(address))
        if override is not None:
            return MAX_CONNECTIONS_PER_IP_OVERRIDES, override
        if self.max_per_ip is not None:
            return MAX_CONNECTIONS_PER_IP, self.max_per_ip
        return None

    def effective(self) -> dict[str, object]:
        """For display; None means unlimited."""
        return {
            MAX_CONNECTIONS: self.max_connections,
            "max.connections.scope": "listener" if self.max_connections_per_listener else "process",
            MAX_CONNECTIONS_PER_IP: self.max_per_ip,
            MAX_CONNECTIONS_PER_IP_OVERRIDES: dict(self.per_ip_overrides),
        }


def parse_connection_limits(get: Callable[[str], str | None], key_prefix: str = "") -> ConnectionLimits:
    """Read the three keys through `get` (e.g. `Properties.get`).

    With a `key_prefix` such as `listener.name.client.`, `<prefix><key>` wins over
    `<key>`; errors name whichever key held the value, and a `max.connections`
    found under the prefix makes the limit per listener.
    """

    def lookup(base: str) -> tuple[str, str | None]:
        if key_prefix:
            value = get(key_prefix + base)
            if value is not None:
                return key_prefix + base, value
        return base, get(base)

    max_key, max_text = lookup(MAX_CONNECTIONS)
    per_ip_key, per_ip_text = lookup(MAX_CONNECTIONS_PER_IP)
    overrides_key, overrides_text = lookup(MAX_CONNECTIONS_PER_IP_OVERRIDES)
    overrides = parse_overrides(overrides_key, overrides_text)
    max_per_ip = None if per_ip_text is None else _parse_limit(per_ip_key, per_ip_text)
    if max_per_ip == 0 and not overrides:
        # Kafka's rule: 0 without overrides would refuse every client.
        raise ConfigError(per_ip_key, per_ip_text, f"can be 0 only if {MAX_CONNECTIONS_PER_IP_OVERRIDES} is set")
    return ConnectionLimits(
        max_connections=None if max_text is None else _parse_limit(max_key, max_text),
        max_per_ip=max_per_ip,
        per_ip_overrides=overrides,
        max_connections_per_listener=max_text is not None and max_key != MAX_CONNECTIONS,
    )


@dataclass(frozen=True)
class Refusal:
    """Why a connection was refused: which limit (config key), the count already open and the limit."""

    limit_key: str
    count: int
    limit: int
    listener: str
    address: str

    @property
    def reason(self) -> str:
        """One line for the log: the key, what is already open, and the limit."""
        if self.limit_key == MAX_CONNECTIONS:
            return f"{self.limit_key}: {self.count} connections already open on all listeners (limit {self.limit})"
        if self.limit_key == MAX_CONNECTIONS_PER_IP:
            return f"{self.limit_key}: {self.address} already has {self.count} connections open (limit {self.limit})"
        if self.limit_key == MAX_CONNECTIONS_PER_IP_OVERRIDES:
            return f"{self.limit_key}: {self.address} already has {self.count} connections open (limit {self.limit} for this address)"
        return f"{self.limit_key}: {self.count} connections already open on listener {self.listener} (limit {self.limit})"


class ConnectionTracker:
    """Open-connection counts shared by every listener of one process."""

    def __init__(self) -> None:
        self._total = 0
        self._by_listener: dict[str, int] = {}
        self._by_address: dict[str, int] = {}
        # Per (listener, address) so release() only undoes what try_acquire() recorded.
        self._open: dict[tuple[str, str], int] = {}

    @property
    def total(self) -> int:
        return self._total

    def on_listener(self, listener: str) -> int:
        return self._by_listener.get(listener.upper(), 0)

    def from_address(self, address: str) -> int:
        return self._by_address.get(normalize_address(address), 0)

    def try_acquire(self, listener: str, address: str, limits: ConnectionLimits) -> Refusal | None:
        """Record a new connection and return None, or return the Refusal and record nothing."""
        name = listener.upper()
        peer = normalize_address(address)
        if limits.max_connections is not None:
            if limits.max_connections_per_listener:
                key, count = f"{listener_prefix(name)}{MAX_CONNECTIONS}", self._by_listener.get(name, 0)
            else:
                key, count = MAX_CONNECTIONS, self._total
            if count >= limits.max_connections:
                return Refusal(key, count, limits.max_connections, name, peer)
        per_ip = limits.limit_for(peer)
        if per_ip is not None:
            key, limit = per_ip
            count = self._by_address.get(peer, 0)
            if count >= limit:
                return Refusal(key, count, limit, name, peer)
        self._total += 1
        self._by_listener[name] = self._by_listener.get(name, 0) + 1
        self._by_address[peer] = self._by_address.get(peer, 0) + 1
        self._open[(name, peer)] = self._open.get((name, peer), 0) + 1
        return None

    def release(self, listener: str, address: str) -> None:
        """Forget one connection recorded by try_acquire; releasing an unknown connection does nothing."""
        name = listener.upper()
        peer = normalize_address(address)
        open_here = self._open.get((name, peer), 0)
        if open_here <= 0:
            return
        _decrement(self._open, (name, peer))
        _decrement(self._by_listener, name)
        _decrement(self._by_address, peer)
        self._total -= 1

    def snapshot(self) -> dict[str, object]:
        """Counts for display/metrics."""
        return {"total": self._total, "by_listener": dict(self._by_listener), "by_address": dict(self._by_address)}


_K = TypeVar("_K")


def _decrement(counts: dict[_K, int], key: _K) -> None:
    """Drop keys that reach zero so the maps do not grow with every address ever seen."""
    remaining = counts.get(key, 0) - 1
    if remaining > 0:
        counts[key] = remaining
    else:
        counts.pop(key, None)
