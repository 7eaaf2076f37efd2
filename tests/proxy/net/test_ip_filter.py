"""IP filtering (KAFKA-1810 proposal): parsing, allow/deny, merged interval lookup."""

import ipaddress
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.net.ip_filter import IpFilter, parse_address, parse_ip_filter
from proxy.properties import ConfigError

TYPE_KEY = "security.ip.filter.rule.type"
LIST_KEY = "security.ip.filter.list"


def build(rule_type: str, cidrs: str) -> IpFilter:
    result = parse_ip_filter(TYPE_KEY, rule_type, LIST_KEY, cidrs)
    assert result is not None
    return result


Block = tuple[str, int, int, int]  # (rule text, IP version, first, last)


def blocks(rules: list[str]) -> list[Block]:
    networks = [(rule, ipaddress.ip_network(rule, strict=False)) for rule in rules]
    return [(rule, n.version, int(n.network_address), int(n.broadcast_address)) for rule, n in networks]


def naive_first_match(rules: list[str], address: str) -> str | None:
    """The proposal's O(N) scan: first listed range containing the address."""
    return naive_scan(blocks(rules), address)


def naive_scan(ranges: list[Block], address: str) -> str | None:
    parsed = ipaddress.ip_address(address)
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    version, value = parsed.version, int(parsed)
    for rule, rule_version, first, last in ranges:
        if rule_version == version and first <= value <= last:
            return rule
    return None


@pytest.mark.parametrize(("rule_type", "cidrs"), [(None, None), ("", ""), ("  ", None), (None, " , ")])
def test_filtering_is_off_when_nothing_is_set(rule_type: str | None, cidrs: str | None) -> None:
    assert parse_ip_filter(TYPE_KEY, rule_type, LIST_KEY, cidrs) is None


def test_allow_ipv4_and_ipv6() -> None:
    f = build("allow", "10.0.0.0/8, 2001:db8::/32")
    assert f.allows("10.1.2.3")
    assert f.allows("2001:db8::1")
    assert f.allows("2001:DB8:0:0:0:0:0:ffff")
    assert not f.allows("11.0.0.0")
    assert not f.allows("9.255.255.255")
    assert not f.allows("2001:db9::")
    assert f.matching_rule("10.255.255.255") == "10.0.0.0/8"
    assert f.matching_rule("2001:db8::1") == "2001:db8::/32"
    assert f.matching_rule("11.0.0.0") is None


def test_deny_ipv4_and_ipv6() -> None:
    f = build("deny", "192.168.0.0/16,fd00::/8")
    assert not f.allows("192.168.3.4")
    assert not f.allows("fd12::5")
    assert f.allows("192.169.0.0")
    assert f.allows("fe80::1")
    assert f.matching_rule("192.168.3.4") == "192.168.0.0/16"


@pytest.mark.parametrize("rule_type", ["ALLOW", "Allow", " allow "])
def test_rule_type_is_case_insensitive(rule_type: str) -> None:
    assert build(rule_type, "10.0.0.1").rule_type == "allow"
    assert build(rule_type.lower().replace("allow", "DENY"), "10.0.0.1").rule_type == "deny"


def test_single_addresses_are_slash_32_and_128() -> None:
    f = build("allow", "192.168.2.1,192.168.2.3/32,::1,2001:db8::7/128")
    assert [str(n) for n in f.networks] == ["192.168.2.1/32", "192.168.2.3/32", "::1/128", "2001:db8::7/128"]
    assert f.allows("192.168.2.1")
    assert not f.allows("192.168.2.2")
    assert f.allows("192.168.2.3")
    assert not f.allows("192.168.2.4")
    assert f.allows("::1")
    assert f.allows("0:0:0:0:0:0:0:1")
    assert not f.allows("::2")
    assert f.allows("2001:db8::7")
    assert not f.allows("2001:db8::8")


def test_ipv4_mapped_peers_are_treated_as_ipv4() -> None:
    f = build("allow", "10.0.0.0/8")
    assert f.allows("::ffff:10.1.2.3")
    assert f.allows("::ffff:a01:203")
    assert f.matching_rule("::ffff:10.1.2.3") == "10.0.0.0/8"
    assert not f.allows("::ffff:11.0.0.1")
    denied = build("deny", "10.0.0.0/8")
    assert not denied.allows("::ffff:10.1.2.3")


def test_ipv4_mapped_list_entries_are_ipv4_ranges() -> None:
    f = build("allow", "::ffff:10.0.0.0/104,::ffff:192.168.1.1")
    assert [str(n) for n in f.networks] == ["10.0.0.0/8", "192.168.1.1/32"]
    assert f.allows("10.9.9.9")
    assert f.allows("::ffff:192.168.1.1")
    assert f.matching_rule("10.9.9.9") == "::ffff:10.0.0.0/104"


def test_an_ipv6_range_containing_the_mapped_block_does_not_cover_ipv4() -> None:
    f = build("deny", "::/0")
    assert not f.allows("2001:db8::1")
    assert f.allows("10.0.0.1")
    assert f.allows("::ffff:10.0.0.1")


def test_zone_is_ignored_in_peer_addresses() -> None:
    f = build("allow", "fe80::/10")
    assert f.allows("fe80::1%eth0")
    assert parse_address("fe80::1%eth0") == ipaddress.IPv6Address("fe80::1")


@pytest.mark.parametrize("address", ["", "not-an-ip", "10.0.0", "10.0.0.256", "[::1]", "::1::2", "010.0.0.1", "10.0.0.0/8"])
def test_unparseable_addresses_are_never_allowed(address: str) -> None:
    assert not build("allow", "0.0.0.0/0,::/0").allows(address)
    assert not build("deny", "10.0.0.0/8").allows(address)
    assert build("allow", "0.0.0.0/0").matching_rule(address) is None


def test_host_bits_are_accepted_as_in_the_proposal_example() -> None:
    # The proposal's own example configuration.
    f = build("allow", "192.168.2.1/32,192.168.10.2/24,10.1.1.1/28")
    assert [str(n) for n in f.networks] == ["192.168.2.1/32", "192.168.10.0/24", "10.1.1.0/28"]
    assert f.allows("192.168.10.0")
    assert f.allows("192.168.10.255")
    assert f.allows("10.1.1.15")
    assert not f.allows("10.1.1.16")
    assert f.matching_rule("192.168.10.200") == "192.168.10.2/24"
    assert f.notes == (
        f"{LIST_KEY}: 192.168.10.2/24 has host bits set; it is matched as 192.168.10.0/24",
        f"{LIST_KEY}: 10.1.1.1/28 has host bits set; it is matched as 10.1.1.0/28",
    )


def test_overlapping_and_nested_ranges_merge_and_report_the_first_listed() -> None:
    f = build("allow", "10.0.1.0/24,10.0.0.0/16,10.0.0.0/24,10.0.0.0/16,10.1.0.0/16")
    # 10.0.0.0/16 and 10.1.0.0/16 are adjacent; the /24s are inside the first /16.
    assert f.matching_rule("10.0.1.7") == "10.0.1.0/24"
    assert f.matching_rule("10.0.0.7") == "10.0.0.0/16"
    assert f.matching_rule("10.0.2.0") == "10.0.0.0/16"
    assert f.matching_rule("10.1.255.255") == "10.1.0.0/16"
    assert f.matching_rule("10.2.0.0") is None
    # 10.0.0.0-10.0.0.255 and 10.0.2.0-10.0.255.255 (/16), 10.0.1.0/24, 10.1.0.0/16
    assert f.interval_counts() == {"ipv4": 4, "ipv6": 0}


def test_adjacent_ranges_with_the_same_representative_are_one_interval() -> None:
    f = build("deny", "10.0.0.0/8,10.0.0.0/9,10.128.0.0/9")
    assert f.interval_counts() == {"ipv4": 1, "ipv6": 0}
    assert f.matching_rule("10.200.0.0") == "10.0.0.0/8"
    split = build("deny", "10.0.0.0/9,10.128.0.0/9")
    assert split.interval_counts() == {"ipv4": 2, "ipv6": 0}
    assert split.matching_rule("10.127.255.255") == "10.0.0.0/9"
    assert split.matching_rule("10.128.0.0") == "10.128.0.0/9"


def test_whole_address_space() -> None:
    f = build("allow", "0.0.0.0/0,::/0")
    assert f.allows("0.0.0.0")
    assert f.allows("255.255.255.255")
    assert f.allows("::")
    assert f.allows("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")


def test_effective() -> None:
    f = build("Deny", " 10.0.0.5/8 , ::1 ,")
    assert f.effective() == {
        "rule_type": "deny",
        "list": ["10.0.0.0/8", "::1/128"],
        "intervals": {"ipv4": 1, "ipv6": 1},
        "notes": [f"{LIST_KEY}: 10.0.0.5/8 has host bits set; it is matched as 10.0.0.0/8"],
    }


@pytest.mark.parametrize(
    ("rule_type", "cidrs", "key", "value", "reason"),
    [
        (None, "10.0.0.0/8", TYPE_KEY, None, f"is required when {LIST_KEY} is set; use allow or deny"),
        ("", "10.0.0.0/8", TYPE_KEY, "", f"is required when {LIST_KEY} is set; use allow or deny"),
        ("whitelist", "10.0.0.0/8", TYPE_KEY, "whitelist", "must be allow or deny"),
        ("allow", None, LIST_KEY, None, f"is required when {TYPE_KEY} is set; list CIDR ranges such as 10.0.0.0/8,2001:db8::/32"),
        ("deny", " , ", LIST_KEY, " , ", f"is required when {TYPE_KEY} is set; list CIDR ranges such as 10.0.0.0/8,2001:db8::/32"),
        ("allow", "10.0.0.0/33", LIST_KEY, "10.0.0.0/33", "'10.0.0.0/33' has prefix length /33; the maximum for IPv4 is /32"),
        ("allow", "::/129", LIST_KEY, "::/129", "'::/129' has prefix length /129; the maximum for IPv6 is /128"),
        (
            "allow",
            "10.0.0.0/8,host.example",
            LIST_KEY,
            "10.0.0.0/8,host.example",
            "'host.example' is not an IPv4 or IPv6 address or CIDR range",
        ),
        ("allow", "10.0.0.256/32", LIST_KEY, "10.0.0.256/32", "'10.0.0.256/32' is not an IPv4 or IPv6 address or CIDR range"),
        ("allow", "/8", LIST_KEY, "/8", "'/8' is not an IPv4 or IPv6 address or CIDR range"),
        ("allow", "10.0.0.0/", LIST_KEY, "10.0.0.0/", "'10.0.0.0/' has an invalid prefix length ''; expected /0 to /32"),
        ("allow", "10.0.0.0/x", LIST_KEY, "10.0.0.0/x", "'10.0.0.0/x' has an invalid prefix length 'x'; expected /0 to /32"),
        ("allow", "10.0.0.0/-1", LIST_KEY, "10.0.0.0/-1", "'10.0.0.0/-1' has an invalid prefix length '-1'; expected /0 to /32"),
        (
            "allow",
            "10.0.0.0/255.0.0.0",
            LIST_KEY,
            "10.0.0.0/255.0.0.0",
            "'10.0.0.0/255.0.0.0' has an invalid prefix length '255.0.0.0'; expected /0 to /32",
        ),
        ("allow", "::1/1x", LIST_KEY, "::1/1x", "'::1/1x' has an invalid prefix length '1x'; expected /0 to /128"),
        ("allow", "10.0.0.0/8/8", LIST_KEY, "10.0.0.0/8/8", "'10.0.0.0/8/8' has an invalid prefix length '8/8'; expected /0 to /32"),
        ("allow", "fe80::1%eth0", LIST_KEY, "fe80::1%eth0", "'fe80::1%eth0' has an IPv6 zone (%...); list the range without it"),
        (
            "allow",
            "::ffff:10.0.0.0/64",
            LIST_KEY,
            "::ffff:10.0.0.0/64",
            "'::ffff:10.0.0.0/64' is an IPv4-mapped range; its prefix length must be /96 to /128 (it is matched as IPv4)",
        ),
    ],
)
def test_config_errors_name_key_value_and_reason(
    rule_type: str | None, cidrs: str | None, key: str, value: str | None, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_ip_filter(TYPE_KEY, rule_type, LIST_KEY, cidrs)
    assert caught.value.key == key
    assert caught.value.value == value
    assert caught.value.reason == reason
    assert str(caught.value) == f"Invalid value {value!r} for configuration {key}: {reason}"


def test_errors_name_the_listener_specific_keys() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_ip_filter(
            "listener.name.client.security.ip.filter.rule.type", "allow", "listener.name.client.security.ip.filter.list", "nope"
        )
    assert str(caught.value) == (
        "Invalid value 'nope' for configuration listener.name.client.security.ip.filter.list: 'nope' is not an IPv4 or IPv6 address or CIDR range"
    )


def test_ten_thousand_ranges_answer_correctly() -> None:
    rng = random.Random(1810)
    rules: list[str] = []
    for _ in range(10_000):
        if rules and rng.random() < 0.2:
            # Nest or widen an earlier range so overlaps are common.
            base = ipaddress.ip_network(rng.choice(rules), strict=False)
            prefix = max(0, min(base.max_prefixlen, base.prefixlen + rng.randint(-4, 4)))
            rules.append(f"{base.network_address + rng.randrange(base.num_addresses)}/{prefix}")
        elif rng.random() < 0.8:
            prefix = rng.randint(16, 32)
            rules.append(f"{ipaddress.IPv4Address(rng.getrandbits(32))}/{prefix}")
        else:
            prefix = rng.randint(48, 128)
            rules.append(f"{ipaddress.IPv6Address(rng.getrandbits(128))}/{prefix}")
    f = build("allow", ",".join(rules))
    ranges = blocks(rules)
    networks = [ipaddress.ip_network(rule, strict=False) for rule in rules]
    probes: list[str] = []
    for network in rng.sample(networks, 300):
        probes.append(str(network.network_address))
        probes.append(str(network.broadcast_address))
        probes.append(str(network.network_address + network.num_addresses // 2))
        if int(network.broadcast_address) + 1 < 2**network.max_prefixlen:
            probes.append(str(network.broadcast_address + 1))
        if int(network.network_address) > 0:
            probes.append(str(network.network_address - 1))
    probes += [str(ipaddress.IPv4Address(rng.getrandbits(32))) for _ in range(300)]
    for probe in probes:
        expected = naive_scan(ranges, probe)
        assert f.matching_rule(probe) == expected, probe
        assert f.allows(probe) is (expected is not None)


# Ranges inside 10.0.0.0/16 and 2001:db8::/112 so random sets overlap, nest and touch often.
_V4_BASE = int(ipaddress.IPv4Address("10.0.0.0"))
_V6_BASE = int(ipaddress.IPv6Address("2001:db8::"))
_v4_rule = st.builds(
    lambda offset, prefix: f"{ipaddress.IPv4Address(_V4_BASE + offset)}/{prefix}", st.integers(0, 2**16 - 1), st.integers(16, 32)
)
_v6_rule = st.builds(
    lambda offset, prefix: f"{ipaddress.IPv6Address(_V6_BASE + offset)}/{prefix}", st.integers(0, 2**16 - 1), st.integers(112, 128)
)
_bare = st.builds(lambda offset: str(ipaddress.IPv4Address(_V4_BASE + offset)), st.integers(0, 2**16 - 1))
_v4_probe = st.builds(lambda offset: str(ipaddress.IPv4Address(_V4_BASE + offset)), st.integers(-256, 2**16 + 255))
_mapped_probe = st.builds(lambda offset: f"::ffff:{ipaddress.IPv4Address(_V4_BASE + offset)}", st.integers(-256, 2**16 + 255))
_v6_probe = st.builds(lambda offset: str(ipaddress.IPv6Address(_V6_BASE + offset)), st.integers(-256, 2**16 + 255))


@settings(max_examples=300, deadline=None)
@given(
    rule_type=st.sampled_from(["allow", "deny"]),
    rules=st.lists(st.one_of(_v4_rule, _v6_rule, _bare), min_size=1, max_size=40),
    probes=st.lists(st.one_of(_v4_probe, _mapped_probe, _v6_probe), min_size=1, max_size=40),
)
def test_lookup_matches_a_linear_scan(rule_type: str, rules: list[str], probes: list[str]) -> None:
    f = build(rule_type, ",".join(rules))
    for probe in probes:
        expected = naive_first_match(rules, probe)
        assert f.matching_rule(probe) == expected
        assert f.allows(probe) is ((expected is not None) == (rule_type == "allow"))
    # The intervals are disjoint and sorted, so the table never exceeds 2N+1 pieces.
    counts = f.interval_counts()
    assert counts["ipv4"] + counts["ipv6"] <= 2 * len(rules) + 1


@settings(max_examples=200, deadline=None)
@given(rules=st.lists(st.one_of(_v4_rule, _v6_rule), min_size=1, max_size=30))
def test_interval_boundaries_match_a_linear_scan(rules: list[str]) -> None:
    """Every range edge and its neighbours, where an off-by-one would show."""
    f = build("allow", ",".join(rules))
    for rule in rules:
        network = ipaddress.ip_network(rule, strict=False)
        for value in (
            int(network.network_address) - 1,
            int(network.network_address),
            int(network.broadcast_address),
            int(network.broadcast_address) + 1,
        ):
            probe = str(ipaddress.ip_address(value) if network.version == 4 else ipaddress.IPv6Address(value))
            assert f.matching_rule(probe) == naive_first_match(rules, probe)
