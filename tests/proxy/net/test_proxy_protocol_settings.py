"""proxy.protocol.* keys: Kafka's per-listener prefix rule, and each refusal naming key, value and reason."""

import pytest

from proxy.net.proxy_protocol import parse_proxy_protocol
from proxy.net.settings import parse_listeners
from proxy.properties import ConfigError, Properties

BASE = {"listeners": "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0", "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT"}


def listeners(**extra: str) -> dict[str, object]:
    parsed = parse_listeners(Properties({**BASE, **{key.replace("_", "."): value for key, value in extra.items()}}))
    return {item.name: item.proxy_protocol for item in parsed}


def test_off_by_default_and_the_listener_key_wins_over_the_global_one() -> None:
    assert listeners() == {"CLIENT": None, "INTERNAL": None}
    props = Properties(
        {
            **BASE,
            "proxy.protocol.mode": "v2",
            "proxy.protocol.trusted.cidrs": "10.0.0.0/8",
            "listener.name.internal.proxy.protocol.mode": "off",
            "listener.name.client.proxy.protocol.trusted.cidrs": "192.0.2.10, 2001:db8::/32",
            "listener.name.client.proxy.protocol.header.timeout.ms": "1500",
        }
    )
    client = parse_proxy_protocol(props, "CLIENT", None)
    assert client is not None and client.versions == frozenset({2}) and client.header_timeout == 1.5
    assert client.trusts("192.0.2.10") and client.trusts("2001:db8::9") and not client.trusts("10.1.1.1")
    assert parse_proxy_protocol(props, "INTERNAL", None) is None


@pytest.mark.parametrize(
    ("settings", "key", "reason"),
    [
        ({"proxy.protocol.mode": "v3"}, "proxy.protocol.mode", "must be one of"),
        ({"proxy.protocol.mode": "v1"}, "proxy.protocol.trusted.cidrs", "is required when proxy.protocol.mode is v1"),
        ({"listener.name.client.proxy.protocol.mode": "any"}, "proxy.protocol.trusted.cidrs", "is required when listener.name.client.proxy.protocol.mode is any (listener CLIENT)"),
        ({"proxy.protocol.mode": "any", "proxy.protocol.trusted.cidrs": "0.0.0.0/0"}, "proxy.protocol.trusted.cidrs", "trusts every address"),
        ({"proxy.protocol.mode": "any", "proxy.protocol.trusted.cidrs": "::/0"}, "proxy.protocol.trusted.cidrs", "trusts every address"),
        ({"proxy.protocol.mode": "any", "proxy.protocol.trusted.cidrs": "lb.example"}, "proxy.protocol.trusted.cidrs", "not an IPv4 or IPv6"),
        (
            {"proxy.protocol.mode": "any", "proxy.protocol.trusted.cidrs": "10.0.0.1", "proxy.protocol.header.timeout.ms": "0"},
            "proxy.protocol.header.timeout.ms",
            "at least 1",
        ),
        (
            {"proxy.protocol.mode": "optional", "proxy.protocol.trusted.cidrs": "10.0.0.1", "security.ip.filter.rule.type": "allow", "security.ip.filter.list": "10.0.0.0/8"},
            "proxy.protocol.mode",
            "optional headers with an IP filter",
        ),
    ],
)
def test_refusals_name_key_value_and_reason(settings: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_listeners(Properties({**BASE, **settings}))
    assert raised.value.key == key and reason in raised.value.reason


def test_optional_with_an_ip_filter_when_the_operator_says_so() -> None:
    settings = {
        "proxy.protocol.mode": "optional",
        "proxy.protocol.trusted.cidrs": "10.0.0.1",
        "security.ip.filter.rule.type": "deny",
        "security.ip.filter.list": "10.9.0.0/16",
        "proxy.protocol.optional.with.ip.filter.allowed": "true",
    }
    parsed = parse_listeners(Properties({**BASE, **settings}))
    assert all(item.proxy_protocol is not None and item.proxy_protocol.optional for item in parsed)
    assert parsed[0].effective()["proxy.protocol"] == {
        "proxy.protocol.mode": "optional",
        "proxy.protocol.trusted.cidrs": ["10.0.0.1/32"],
        "proxy.protocol.header.timeout.ms": 3000,
    }
