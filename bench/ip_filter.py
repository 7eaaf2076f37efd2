"""On-demand benchmark for proxy.net.ip_filter: lookups per second for 10, 1000 and 100000 ranges.

Run: .venv/bin/python bench/ip_filter.py [--lookups N] [--seed S]
Prints JSON. Not part of the test suite: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from proxy.net.ip_filter import parse_ip_filter

SIZES = (10, 1000, 100_000)


def random_rules(rng: random.Random, count: int) -> list[str]:
    """80% IPv4 /16-/32, 20% IPv6 /48-/128, at random places (overlaps happen but are rare)."""
    rules = []
    for _ in range(count):
        if rng.random() < 0.8:
            rules.append(f"{ipaddress.IPv4Address(rng.getrandbits(32))}/{rng.randint(16, 32)}")
        else:
            rules.append(f"{ipaddress.IPv6Address(rng.getrandbits(128))}/{rng.randint(48, 128)}")
    return rules


def random_peers(rng: random.Random, rules: list[str], count: int) -> list[str]:
    """Half inside a listed range, half random; the same address forms a socket reports (v4, mapped, v6)."""
    peers = []
    for index in range(count):
        if index % 2 == 0:
            network = ipaddress.ip_network(rng.choice(rules), strict=False)
            address = network.network_address + rng.randrange(network.num_addresses)
            text = str(address)
            if address.version == 4 and index % 4 == 0:
                text = f"::ffff:{text}"
            peers.append(text)
        elif index % 3 == 0:
            peers.append(str(ipaddress.IPv6Address(rng.getrandbits(128))))
        else:
            peers.append(str(ipaddress.IPv4Address(rng.getrandbits(32))))
    return peers


def measure(size: int, lookups: int, rng: random.Random) -> dict[str, object]:
    rules = random_rules(rng, size)
    started = time.perf_counter()
    ip_filter = parse_ip_filter("security.ip.filter.rule.type", "allow", "security.ip.filter.list", ",".join(rules))
    build_seconds = time.perf_counter() - started
    assert ip_filter is not None
    peers = random_peers(rng, rules, lookups)
    allows = ip_filter.allows
    started = time.perf_counter()
    allowed = sum(1 for peer in peers if allows(peer))
    elapsed = time.perf_counter() - started
    return {
        "ranges": size,
        "intervals": ip_filter.interval_counts(),
        "build_seconds": round(build_seconds, 4),
        "lookups": lookups,
        "allowed": allowed,
        "lookups_per_second": round(lookups / elapsed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--lookups", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1810)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results = [measure(size, args.lookups, rng) for size in SIZES]
    print(json.dumps({"benchmark": "ip_filter.allows", "python": sys.version.split()[0], "results": results}, indent=2))


if __name__ == "__main__":
    main()
