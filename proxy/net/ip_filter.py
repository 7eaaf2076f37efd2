"""Accept-time IP filtering: `security.ip.filter.rule.type` and `security.ip.filter.list`.

Follows the KAFKA-1810 proposal: the rule type is `allow` (only listed ranges may
connect) or `deny` (listed ranges are refused), the list is comma-separated CIDR
ranges, IPv4 and IPv6, and a bare address means /32 or /128.

Host bits: the proposal's own example lists `192.168.10.2/24` and `10.1.1.1/28`,
so a range with host bits set is accepted and means its network
(`192.168.10.0/24`); `IpFilter.notes` says so, for a startup warning.

Lookup: the proposal scans every range (O(N)); here the ranges are turned into
sorted disjoint integer intervals per address family once, at parse time, and an
address is found with `bisect` (O(log N)). CIDR blocks never partially overlap
(two blocks are disjoint or one contains the other), so overlapping, nested and
adjacent ranges split the address space into disjoint pieces; each piece keeps,
as its representative for `matching_rule`, the first listed CIDR that contains
it -- exactly what the proposal's "first match exits the lookup" scan reports.
Neighbouring pieces with the same representative are coalesced.

IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`, what a dual-stack socket reports
for an IPv4 peer) are the IPv4 address, both as peers and as list entries
(`::ffff:10.0.0.0/104` is `10.0.0.0/8`). An IPv6 range that merely contains the
mapped block (`::/0`) is not extended to IPv4: it was written for IPv6 peers.
"""

from __future__ import annotations

import ipaddress
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal

from proxy.properties import ConfigError

RuleType = Literal["allow", "deny"]
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_PREFIX = re.compile(r"[0-9]{1,3}")


def parse_address(address: str) -> IpAddress | None:
    """The peer address as an `ipaddress` object, IPv4-mapped IPv6 unwrapped; None if unparseable.

    An IPv6 zone (`fe80::1%eth0`) is dropped: it names the interface, not the host.
    """
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return None
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return parsed.ipv4_mapped
        if parsed.scope_id is not None:
            return ipaddress.IPv6Address(int(parsed))
    return parsed


def _parse_cidr(list_key: str, cidrs: str, item: str) -> tuple[IpNetwork, str | None]:
    """One list entry as a network, plus a note when host bits were set."""
    address_text, slash, prefix_text = item.partition("/")
    if "%" in address_text:
        raise ConfigError(list_key, cidrs, f"{item!r} has an IPv6 zone (%...); list the range without it")
    address = parse_address(address_text)
    if address is None:
        raise ConfigError(list_key, cidrs, f"{item!r} is not an IPv4 or IPv6 address or CIDR range")
    mapped = ":" in address_text and address.version == 4
    bits = 32 if address.version == 4 else 128
    if not slash:
        prefix = bits
    else:
        if not _PREFIX.fullmatch(prefix_text):
            raise ConfigError(
                list_key, cidrs, f"{item!r} has an invalid prefix length {prefix_text!r}; expected /0 to /{128 if mapped else bits}"
            )
        prefix = int(prefix_text)
        if mapped:
            # Written as ::ffff:a.b.c.d/n; only the part inside the mapped block maps to IPv4.
            if not 96 <= prefix <= 128:
                raise ConfigError(
                    list_key, cidrs, f"{item!r} is an IPv4-mapped range; its prefix length must be /96 to /128 (it is matched as IPv4)"
                )
            prefix -= 96
        elif prefix > bits:
            raise ConfigError(list_key, cidrs, f"{item!r} has prefix length /{prefix}; the maximum for IPv{address.version} is /{bits}")
    network: IpNetwork
    if address.version == 4:
        network = ipaddress.IPv4Network((int(address), prefix), strict=False)
    else:
        network = ipaddress.IPv6Network((int(address), prefix), strict=False)
    note = None
    if network.network_address != address:
        note = f"{list_key}: {item} has host bits set; it is matched as {network}"
    return network, note


@dataclass(frozen=True)
class _Intervals:
    """Sorted disjoint closed integer intervals of one family, each with its representative CIDR text."""

    starts: tuple[int, ...]
    ends: tuple[int, ...]
    rules: tuple[str, ...]

    def find(self, value: int) -> str | None:
        index = bisect_right(self.starts, value) - 1
        if index >= 0 and value <= self.ends[index]:
            return self.rules[index]
        return None


def _build_intervals(blocks: list[tuple[int, int, int]], texts: list[str]) -> _Intervals:
    """Partition the union of `(first, last, list index)` CIDR blocks into disjoint labelled intervals.

    Sorting by (first, -last, index) puts a containing block before the blocks
    inside it, so a stack of open blocks is always a chain of nested ranges; each
    stack entry carries the smallest list index along its chain, i.e. the first
    listed rule covering that part of the space.
    """
    starts: list[int] = []
    ends: list[int] = []
    labels: list[int] = []

    def emit(first: int, last: int, label: int) -> None:
        if first > last:
            return
        if ends and ends[-1] + 1 == first and labels[-1] == label:
            ends[-1] = last
            return
        starts.append(first)
        ends.append(last)
        labels.append(label)

    stack: list[tuple[int, int]] = []  # (last address of the open block, representative index)
    cursor = 0
    for first, last, index in sorted(blocks, key=lambda block: (block[0], -block[1], block[2])):
        while stack and stack[-1][0] < first:
            top_last, top_label = stack.pop()
            emit(cursor, top_last, top_label)
            cursor = top_last + 1
        if stack:
            emit(cursor, first - 1, stack[-1][1])
            index = min(index, stack[-1][1])
        stack.append((last, index))
        cursor = first
    while stack:
        top_last, top_label = stack.pop()
        emit(cursor, top_last, top_label)
        cursor = top_last + 1
    return _Intervals(tuple(starts), tuple(ends), tuple(texts[label] for label in labels))


class IpFilter:
    """An allow or deny list of CIDR ranges, answering in O(log N) per address."""

    def __init__(self, rule_type: RuleType, rules: list[str], networks: list[IpNetwork], notes: tuple[str, ...] = ()) -> None:
        """`rules[i]` is the configured text of `networks[i]`; list order decides the reported rule."""
        if len(rules) != len(networks):
            raise ValueError("rules and networks must have the same length")
        self.rule_type: RuleType = rule_type
        self.rules = tuple(rules)
        self.networks = tuple(networks)
        self.notes = notes
        v4: list[tuple[int, int, int]] = []
        v6: list[tuple[int, int, int]] = []
        for index, network in enumerate(networks):
            block = (int(network.network_address), int(network.broadcast_address), index)
            (v4 if network.version == 4 else v6).append(block)
        self._v4 = _build_intervals(v4, list(rules))
        self._v6 = _build_intervals(v6, list(rules))

    def matching_rule(self, address: str) -> str | None:
        """The first listed CIDR (as configured) containing `address`, or None (also for an unparseable address)."""
        parsed = parse_address(address)
        return None if parsed is None else self._find(parsed)

    def allows(self, address: str) -> bool:
        """Whether a peer at `address` may connect; an unparseable address never may (fail closed)."""
        parsed = parse_address(address)
        if parsed is None:
            return False
        listed = self._find(parsed) is not None
        return listed if self.rule_type == "allow" else not listed

    def _find(self, address: IpAddress) -> str | None:
        return (self._v4 if address.version == 4 else self._v6).find(int(address))

    def interval_counts(self) -> dict[str, int]:
        """How many disjoint intervals each family's lookup table holds (after merging)."""
        return {"ipv4": len(self._v4.starts), "ipv6": len(self._v6.starts)}

    def effective(self) -> dict[str, object]:
        """What is in force, for display: the rule type and the normalised networks in list order."""
        return {
            "rule_type": self.rule_type,
            "list": [str(network) for network in self.networks],
            "intervals": self.interval_counts(),
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        return f"IpFilter({self.rule_type!r}, {len(self.rules)} ranges)"


def parse_ip_filter(rule_type_key: str, rule_type: str | None, list_key: str, cidrs: str | None) -> IpFilter | None:
    """Build the filter from the two settings; None when neither is set (filtering off).

    The key names are parameters so that errors name the key actually used, e.g.
    `listener.name.client.security.ip.filter.list`. Empty values count as unset.
    """
    type_text = (rule_type or "").strip()
    list_text = (cidrs or "").strip()
    # Like Kafka's parseCsvList: whitespace around commas and empty entries are ignored.
    items = [item.strip() for item in list_text.split(",") if item.strip()]
    if not type_text and not items:
        return None
    if not type_text:
        raise ConfigError(rule_type_key, rule_type, f"is required when {list_key} is set; use allow or deny")
    normalised = type_text.lower()
    if normalised not in ("allow", "deny"):
        raise ConfigError(rule_type_key, rule_type, "must be allow or deny")
    if not items:
        raise ConfigError(list_key, cidrs, f"is required when {rule_type_key} is set; list CIDR ranges such as 10.0.0.0/8,2001:db8::/32")
    networks: list[IpNetwork] = []
    notes: list[str] = []
    for item in items:
        network, note = _parse_cidr(list_key, cidrs or "", item)
        networks.append(network)
        if note is not None:
            notes.append(note)
    return IpFilter("allow" if normalised == "allow" else "deny", items, networks, tuple(notes))
