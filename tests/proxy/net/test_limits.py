"""Connection limits: parsing the three keys and the process-wide tracker."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.net.limits import (
    ConnectionLimits,
    ConnectionTracker,
    Refusal,
    normalize_address,
    parse_connection_limits,
    parse_overrides,
)
from proxy.properties import ConfigError, Properties

KEY = "max.connections.per.ip.overrides"


def limits_from(raw: dict[str, str], key_prefix: str = "") -> ConnectionLimits:
    return parse_connection_limits(Properties(raw).get, key_prefix)


# --- parse_overrides -------------------------------------------------------------------------


@pytest.mark.parametrize("text", [None, "", "  ", ",", " , ,"])
def test_no_overrides(text: str | None) -> None:
    assert parse_overrides(KEY, text) == {}


def test_overrides_ipv4_and_ipv6_forms() -> None:
    text = "10.0.0.1:5, [::1]:3 ,2001:db8::7:0, [2001:DB8:0:0:0:0:0:8] : 9, ::ffff:192.168.1.1:2,fe80::1%eth0:4,"
    assert parse_overrides(KEY, text) == {
        "10.0.0.1": 5,
        "::1": 3,
        "2001:db8::7": 0,  # bare IPv6: the last colon separates the count, as in Kafka's parseCsvMap
        "2001:db8::8": 9,
        "192.168.1.1": 2,
        "fe80::1": 4,
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("10.0.0.1", "entry '10.0.0.1' is not of the form host:count"),
        ("10.0.0.1:1,,10.0.0.2", "entry '10.0.0.2' is not of the form host:count"),
        (":5", "entry ':5' has no host"),
        ("[]:5", "entry '[]:5' has no host"),
        ("[::1]5", "entry '[::1]5' is not of the form [ipv6]:count"),
        ("[::1:5", "entry '[::1:5' is not of the form [ipv6]:count"),
        ("::1", "entry '::1' has no count; write [::1]:count"),
        ("broker1:5", "entry 'broker1:5': 'broker1' is not an IP address (host names are not resolved; list the addresses)"),
        ("[broker1]:5", "entry '[broker1]:5': 'broker1' is not an IP address (host names are not resolved; list the addresses)"),
        ("10.0.0.1:-1", "entry '10.0.0.1:-1': count '-1' is not a non-negative integer"),
        ("10.0.0.1:", "entry '10.0.0.1:': count '' is not a non-negative integer"),
        ("10.0.0.1:five", "entry '10.0.0.1:five': count 'five' is not a non-negative integer"),
        ("10.0.0.1:1.5", "entry '10.0.0.1:1.5': count '1.5' is not a non-negative integer"),
        ("10.0.0.1:٣", "entry '10.0.0.1:٣': count '٣' is not a non-negative integer"),
        ("10.0.0.1:2147483648", "entry '10.0.0.1:2147483648': count 2147483648 is above 2147483647"),
        ("10.0.0.1:1,10.0.0.1:2", "address 10.0.0.1 is listed twice ('10.0.0.1' and '10.0.0.1')"),
        ("[::1]:1,0:0:0:0:0:0:0:1:2", "address ::1 is listed twice ('::1' and '0:0:0:0:0:0:0:1')"),
        ("::ffff:10.0.0.1:1,10.0.0.1:2", "address 10.0.0.1 is listed twice ('::ffff:10.0.0.1' and '10.0.0.1')"),
    ],
)
def test_override_errors_name_key_value_and_item(text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_overrides(KEY, text)
    assert (caught.value.key, caught.value.value, caught.value.reason) == (KEY, text, reason)
    assert str(caught.value) == f"Invalid value {text!r} for configuration {KEY}: {reason}"


# --- parse_connection_limits -----------------------------------------------------------------


def test_defaults_are_unlimited() -> None:
    assert limits_from({}) == ConnectionLimits(None, None, {}, False)
    # Kafka's default value, Int.MaxValue, also means unlimited.
    assert limits_from({"max.connections": "2147483647", "max.connections.per.ip": "2147483647"}) == ConnectionLimits()


def test_global_limits() -> None:
    limits = limits_from({"max.connections": "100", "max.connections.per.ip": "5", KEY: "10.0.0.1:50,[::1]:0"})
    assert limits == ConnectionLimits(100, 5, {"10.0.0.1": 50, "::1": 0}, max_connections_per_listener=False)
    assert limits.effective() == {
        "max.connections": 100,
        "max.connections.scope": "process",
        "max.connections.per.ip": 5,
        KEY: {"10.0.0.1": 50, "::1": 0},
    }


def test_listener_prefix_wins_and_makes_max_connections_per_listener() -> None:
    raw = {
        "max.connections": "100",
        "listener.name.client.max.connections": "10",
        "max.connections.per.ip": "5",
        "listener.name.client.max.connections.per.ip.overrides": "10.0.0.9:1",
    }
    client = limits_from(raw, "listener.name.client.")
    assert client == ConnectionLimits(10, 5, {"10.0.0.9": 1}, max_connections_per_listener=True)
    assert client.effective()["max.connections.scope"] == "listener"
    other = limits_from(raw, "listener.name.other.")
    assert other == ConnectionLimits(100, 5, {}, max_connections_per_listener=False)


@pytest.mark.parametrize(
    ("raw", "prefix", "key", "value", "reason"),
    [
        ({"max.connections": "lots"}, "", "max.connections", "lots", "expected an integer"),
        ({"max.connections": ""}, "", "max.connections", "", "expected an integer"),
        ({"max.connections": "1e3"}, "", "max.connections", "1e3", "expected an integer"),
        ({"max.connections": "-1"}, "", "max.connections", "-1", "must be at least 0"),
        ({"max.connections": "2147483648"}, "", "max.connections", "2147483648", "must be at most 2147483647 (which means unlimited)"),
        ({"max.connections.per.ip": "1_000"}, "", "max.connections.per.ip", "1_000", "expected an integer"),
        ({"max.connections.per.ip": "-3"}, "", "max.connections.per.ip", "-3", "must be at least 0"),
        ({"max.connections.per.ip": "0"}, "", "max.connections.per.ip", "0", f"can be 0 only if {KEY} is set"),
        ({"max.connections.per.ip": "0", KEY: " "}, "", "max.connections.per.ip", "0", f"can be 0 only if {KEY} is set"),
        ({KEY: "x:1"}, "", KEY, "x:1", "entry 'x:1': 'x' is not an IP address (host names are not resolved; list the addresses)"),
        (
            {"max.connections": "1", "listener.name.client.max.connections": "ten"},
            "listener.name.client.",
            "listener.name.client.max.connections",
            "ten",
            "expected an integer",
        ),
        (
            {"listener.name.client.max.connections.per.ip": "0"},
            "listener.name.client.",
            "listener.name.client.max.connections.per.ip",
            "0",
            f"can be 0 only if {KEY} is set",
        ),
    ],
)
def test_limit_errors_name_key_value_and_reason(raw: dict[str, str], prefix: str, key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        limits_from(raw, prefix)
    assert (caught.value.key, caught.value.value, caught.value.reason) == (key, value, reason)
    assert str(caught.value) == f"Invalid value {value!r} for configuration {key}: {reason}"


def test_zero_per_ip_with_overrides_admits_only_the_listed_addresses() -> None:
    limits = limits_from({"max.connections.per.ip": "0", KEY: "127.0.0.1:2"})
    tracker = ConnectionTracker()
    assert tracker.try_acquire("CLIENT", "127.0.0.1", limits) is None
    refusal = tracker.try_acquire("CLIENT", "10.0.0.1", limits)
    assert refusal == Refusal("max.connections.per.ip", 0, 0, "CLIENT", "10.0.0.1")


def test_hand_built_limits_are_normalised_and_validated() -> None:
    assert ConnectionLimits(per_ip_overrides={"0:0:0:0:0:0:0:1": 1, "::ffff:10.0.0.1": 2}).per_ip_overrides == {"::1": 1, "10.0.0.1": 2}
    with pytest.raises(ValueError, match="max_connections must not be negative"):
        ConnectionLimits(max_connections=-1)
    with pytest.raises(ValueError, match="is not an IP address"):
        ConnectionLimits(per_ip_overrides={"broker1": 1})
    with pytest.raises(ValueError, match="must not be negative"):
        ConnectionLimits(per_ip_overrides={"::1": -1})


# --- ConnectionTracker -----------------------------------------------------------------------


def test_normalize_address() -> None:
    assert normalize_address("0:0:0:0:0:0:0:1") == "::1"
    assert normalize_address("::FFFF:10.0.0.1") == "10.0.0.1"
    assert normalize_address("2001:DB8::1") == "2001:db8::1"
    assert normalize_address("fe80::1%eth0") == "fe80::1"
    assert normalize_address(" not-an-ip ") == "not-an-ip"


def test_unlimited_accepts_and_counts() -> None:
    tracker = ConnectionTracker()
    for _ in range(3):
        assert tracker.try_acquire("client", "10.0.0.1", ConnectionLimits()) is None
    assert (tracker.total, tracker.on_listener("CLIENT"), tracker.from_address("::ffff:10.0.0.1")) == (3, 3, 3)
    assert tracker.snapshot() == {"total": 3, "by_listener": {"CLIENT": 3}, "by_address": {"10.0.0.1": 3}}


def test_per_ip_limit_counts_every_spelling_and_every_listener_together() -> None:
    limits = ConnectionLimits(max_per_ip=2)
    tracker = ConnectionTracker()
    assert tracker.try_acquire("CLIENT", "::1", limits) is None
    assert tracker.try_acquire("ADMIN", "0:0:0:0:0:0:0:1", limits) is None
    refusal = tracker.try_acquire("CLIENT", "0000::0001", limits)
    assert refusal == Refusal("max.connections.per.ip", 2, 2, "CLIENT", "::1")
    assert refusal.reason == "max.connections.per.ip: ::1 already has 2 connections open (limit 2)"
    # A refusal records nothing.
    assert tracker.from_address("::1") == 2
    assert tracker.try_acquire("CLIENT", "::2", limits) is None
    tracker.release("ADMIN", "::1")
    assert tracker.try_acquire("CLIENT", "::1", limits) is None


def test_mapped_ipv4_counts_as_ipv4() -> None:
    limits = ConnectionLimits(max_per_ip=1)
    tracker = ConnectionTracker()
    assert tracker.try_acquire("CLIENT", "::ffff:192.0.2.1", limits) is None
    refusal = tracker.try_acquire("CLIENT", "192.0.2.1", limits)
    assert refusal is not None and refusal.address == "192.0.2.1"


def test_override_wins_over_the_default_per_ip_limit() -> None:
    limits = limits_from({"max.connections.per.ip": "1", KEY: "10.0.0.1:3,10.0.0.2:0"})
    tracker = ConnectionTracker()
    for _ in range(3):
        assert tracker.try_acquire("CLIENT", "10.0.0.1", limits) is None
    refusal = tracker.try_acquire("CLIENT", "::ffff:10.0.0.1", limits)
    assert refusal == Refusal(KEY, 3, 3, "CLIENT", "10.0.0.1")
    assert refusal.reason == f"{KEY}: 10.0.0.1 already has 3 connections open (limit 3 for this address)"
    blocked = tracker.try_acquire("CLIENT", "10.0.0.2", limits)
    assert blocked is not None and (blocked.limit_key, blocked.count, blocked.limit) == (KEY, 0, 0)
    assert tracker.try_acquire("CLIENT", "10.0.0.3", limits) is None
    assert tracker.try_acquire("CLIENT", "10.0.0.3", limits) == Refusal("max.connections.per.ip", 1, 1, "CLIENT", "10.0.0.3")


def test_global_max_connections_counts_all_listeners() -> None:
    limits = ConnectionLimits(max_connections=2)
    tracker = ConnectionTracker()
    assert tracker.try_acquire("CLIENT", "10.0.0.1", limits) is None
    assert tracker.try_acquire("ADMIN", "10.0.0.2", limits) is None
    refusal = tracker.try_acquire("CLIENT", "10.0.0.3", limits)
    assert refusal == Refusal("max.connections", 2, 2, "CLIENT", "10.0.0.3")
    assert refusal.reason == "max.connections: 2 connections already open on all listeners (limit 2)"
    tracker.release("ADMIN", "10.0.0.2")
    assert tracker.try_acquire("CLIENT", "10.0.0.3", limits) is None


def test_listener_max_connections_counts_only_that_listener() -> None:
    raw = {"max.connections": "3", "listener.name.admin.max.connections": "1"}
    admin, client = limits_from(raw, "listener.name.admin."), limits_from(raw, "listener.name.client.")
    tracker = ConnectionTracker()
    assert tracker.try_acquire("ADMIN", "10.0.0.1", admin) is None
    refusal = tracker.try_acquire("admin", "10.0.0.2", admin)
    assert refusal == Refusal("listener.name.admin.max.connections", 1, 1, "ADMIN", "10.0.0.2")
    assert refusal.reason == "listener.name.admin.max.connections: 1 connections already open on listener ADMIN (limit 1)"
    # The process-wide limit counts the ADMIN connection too.
    assert tracker.try_acquire("CLIENT", "10.0.0.3", client) is None
    assert tracker.try_acquire("CLIENT", "10.0.0.4", client) is None
    assert tracker.try_acquire("CLIENT", "10.0.0.5", client) == Refusal("max.connections", 3, 3, "CLIENT", "10.0.0.5")
    # ADMIN's own limit is independent of the global one.
    tracker.release("ADMIN", "10.0.0.1")
    assert tracker.try_acquire("ADMIN", "10.0.0.2", admin) is None


def test_max_connections_is_checked_before_the_per_ip_limit() -> None:
    limits = ConnectionLimits(max_connections=1, max_per_ip=1)
    tracker = ConnectionTracker()
    assert tracker.try_acquire("CLIENT", "10.0.0.1", limits) is None
    refusal = tracker.try_acquire("CLIENT", "10.0.0.1", limits)
    assert refusal is not None and refusal.limit_key == "max.connections"


def test_release_of_unknown_connections_is_a_no_op() -> None:
    tracker = ConnectionTracker()
    tracker.release("CLIENT", "10.0.0.1")
    assert tracker.try_acquire("CLIENT", "10.0.0.1", ConnectionLimits()) is None
    tracker.release("ADMIN", "10.0.0.1")  # other listener: not recorded there
    tracker.release("CLIENT", "10.0.0.2")  # other address
    assert tracker.snapshot() == {"total": 1, "by_listener": {"CLIENT": 1}, "by_address": {"10.0.0.1": 1}}
    tracker.release("client", "::ffff:10.0.0.1")
    tracker.release("CLIENT", "10.0.0.1")
    assert tracker.snapshot() == {"total": 0, "by_listener": {}, "by_address": {}}
    assert (tracker.total, tracker.on_listener("CLIENT"), tracker.from_address("10.0.0.1")) == (0, 0, 0)


def test_unparseable_addresses_are_still_counted() -> None:
    tracker = ConnectionTracker()
    limits = ConnectionLimits(max_per_ip=1)
    assert tracker.try_acquire("CLIENT", "unix-socket", limits) is None
    assert tracker.try_acquire("CLIENT", "unix-socket", limits) is not None
    tracker.release("CLIENT", "unix-socket")
    assert tracker.total == 0


_listener = st.sampled_from(["CLIENT", "ADMIN", "client"])
_address = st.sampled_from(["10.0.0.1", "::ffff:10.0.0.1", "::1", "0:0:0:0:0:0:0:1", "10.0.0.2", "junk"])
_operation = st.tuples(st.booleans(), _listener, _address)


@settings(max_examples=300, deadline=None)
@given(
    operations=st.lists(_operation, max_size=60),
    max_connections=st.none() | st.integers(0, 5),
    per_listener=st.booleans(),
    max_per_ip=st.none() | st.integers(0, 3),
)
def test_counts_never_go_negative_and_match_a_model(
    operations: list[tuple[bool, str, str]], max_connections: int | None, per_listener: bool, max_per_ip: int | None
) -> None:
    limits = ConnectionLimits(max_connections, max_per_ip, {"10.0.0.2": 1}, per_listener)
    tracker = ConnectionTracker()
    model: list[tuple[str, str]] = []  # open (listener, normalised address) pairs
    for acquire, listener, address in operations:
        key = (listener.upper(), normalize_address(address))
        if acquire:
            allowed = tracker.try_acquire(listener, address, limits) is None
            on_listener = sum(1 for item in model if item[0] == key[0])
            scope_count = on_listener if per_listener else len(model)
            per_ip_limit = 1 if key[1] == "10.0.0.2" else max_per_ip
            expected = (max_connections is None or scope_count < max_connections) and (
                per_ip_limit is None or sum(1 for item in model if item[1] == key[1]) < per_ip_limit
            )
            assert allowed is expected
            if allowed:
                model.append(key)
        else:
            tracker.release(listener, address)
            if key in model:
                model.remove(key)
        snapshot = tracker.snapshot()
        assert tracker.total == len(model) >= 0
        by_listener = snapshot["by_listener"]
        by_address = snapshot["by_address"]
        assert isinstance(by_listener, dict) and isinstance(by_address, dict)
        assert all(count > 0 for count in [*by_listener.values(), *by_address.values()])
        assert sum(by_listener.values()) == sum(by_address.values()) == len(model)
