"""Listeners behind a load balancer, with headers written byte for byte: the client's address everywhere, and
every hostile header costing only its own connection.

The "load balancer" is a socket bound to 127.0.0.1 (the trusted list); the clients it names are addresses no
socket here has (10.x), so only the header can have put them in the records.
"""

import time
from pathlib import Path
from typing import Any

import trio

from devkit import proxy_header as header
from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, EmbeddedStack, start_stack
from tests.integration.conftest import audit_records

LOAD_BALANCER = "127.0.0.1"
UNTRUSTED = "127.0.0.2"
DIRECT = "127.0.0.3"
DENIED_CLIENT = "10.6.6.6"
NO_CONNECTIONS_CLIENT = "10.5.5.5"
API_VERSIONS = wire.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=7)
HEADER_TIMEOUT_MS = 500
BEHIND_A_LOAD_BALANCER = {
    "proxy.protocol.mode": "any",
    "proxy.protocol.trusted.cidrs": f"{LOAD_BALANCER}/32",
    "proxy.protocol.header.timeout.ms": str(HEADER_TIMEOUT_MS),
    "security.ip.filter.rule.type": "deny",
    "security.ip.filter.list": DENIED_CLIENT,
    "max.connections.per.ip": "50",
    "max.connections.per.ip.overrides": f"{NO_CONNECTIONS_CLIENT}:0",
    # PLAIN takes direct clients and the load balancer on one port
    "listener.name.plain.proxy.protocol.mode": "optional",
    "listener.name.plain.proxy.protocol.optional.with.ip.filter.allowed": "true",
}


async def _stack(nursery: Any, tmp_path: Path) -> EmbeddedStack:
    return await start_stack(nursery, tmp_path / "audit", proxy_overrides=BEHIND_A_LOAD_BALANCER)


def _answered(address: str, source: str, first: bytes, *, login: bool = False) -> bool:
    """Send `first` (a header, or nothing), then ApiVersions (or a PLAIN login); True when answered."""
    with wire.connect(address, source=source, timeout=5) as sock:
        try:
            sock.sendall(first)
            if login:
                return wire.sasl_plain_login(sock, "alice", DEFAULT_USERS["alice"]) == 0
            sock.sendall(wire.encode_frame(API_VERSIONS))
            return len(wire.read_frame(sock)) > 0
        except (ConnectionError, OSError, ValueError):
            return False


def _closed_unread(address: str, source: str, first: bytes) -> bool:
    """The proxy closes the connection (and answers nothing) after `first`."""
    with wire.connect(address, source=source, timeout=5) as sock:
        try:
            sock.sendall(first)
        except OSError:
            return True
        return wire.is_closed(sock)


def _refused(tmp_path: Path) -> list[dict[str, Any]]:
    return [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]


async def test_the_header_names_the_client_in_every_record(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path)

    def clients() -> list[bool]:
        return [
            _answered(stack.plaintext_address, LOAD_BALANCER, header.v1("10.1.2.3", "127.0.0.1", 40001, 9092)),
            # header and the first Kafka bytes in one segment: the bytes after the header reach the framing untouched
            _answered(stack.sasl_address, LOAD_BALANCER, header.v2("10.1.2.4", "127.0.0.1", 40002, 9092, crc=True), login=True),
            _answered(stack.sasl_address, LOAD_BALANCER, header.v2("2001:db8::5", "2001:db8::1", 40003, 9092, tlvs=header.tlv(header.TLV_AUTHORITY, b"kafka.example"))),
            _answered(stack.sasl_address, LOAD_BALANCER, header.v2(command=header.LOCAL, crc=True)),  # a health check
            _answered(stack.plaintext_address, DIRECT, b""),  # optional: a direct client, as itself
        ]

    assert await trio.to_thread.run_sync(clients) == [True] * 5
    await trio.sleep(0.2)
    connected = {
        (r["data"]["requestMetadata"]["clientAddress"], r["data"]["requestMetadata"]["clientPort"]): r["data"]["requestMetadata"]["proxiedBy"]
        for r in audit_records(tmp_path / "audit")
        if r["data"]["stage"] == "connected"
    }
    assert connected[("10.1.2.3", 40001)]["address"] == LOAD_BALANCER and connected[("10.1.2.3", 40001)]["version"] == 1
    assert connected[("10.1.2.4", 40002)]["version"] == 2 and connected[("10.1.2.4", 40002)]["command"] == "PROXY"
    assert connected[("2001:db8::5", 40003)]["authority"] == "kafka.example"
    local = [proxied for (address, _), proxied in connected.items() if address == LOAD_BALANCER]
    assert len(local) == 1 and local[0]["command"] == "LOCAL"
    assert [proxied for (address, _), proxied in connected.items() if address == DIRECT] == [None]
    authenticated = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "authenticated"]
    assert [r["requestMetadata"]["clientAddress"] for r in authenticated] == ["10.1.2.4"]


async def test_filters_and_limits_judge_the_client_not_the_load_balancer(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path)

    def clients() -> list[bool]:
        return [
            _closed_unread(stack.sasl_address, LOAD_BALANCER, header.v2(DENIED_CLIENT, "127.0.0.1", 1, 2) + wire.encode_frame(API_VERSIONS)),
            _closed_unread(stack.sasl_address, LOAD_BALANCER, header.v1(NO_CONNECTIONS_CLIENT, "127.0.0.1", 1, 2) + wire.encode_frame(API_VERSIONS)),
            _answered(stack.sasl_address, LOAD_BALANCER, header.v2("10.7.7.7", "127.0.0.1", 1, 2)),  # same load balancer, another client
        ]

    assert await trio.to_thread.run_sync(clients) == [True, True, True]
    refused = {r["requestMetadata"]["clientAddress"]: r for r in _refused(tmp_path)}
    assert refused[DENIED_CLIENT]["authorizationInfo"]["reason"] == "ip-filter"
    assert refused[NO_CONNECTIONS_CLIENT]["authorizationInfo"]["reason"] == "max.connections.per.ip.overrides"
    assert {r["requestMetadata"]["proxiedBy"]["address"] for r in refused.values()} == {LOAD_BALANCER}
    assert stack.proxy.service.metrics.connections_refused.labels("CLIENT", "ip_filter")._value.get() == 1


async def test_hostile_headers_cost_only_their_own_connection(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path)
    address = stack.sasl_address

    def slowloris() -> bool:
        with wire.connect(address, source=LOAD_BALANCER, timeout=5) as sock:
            line = header.v1("10.1.2.3", "127.0.0.1", 1, 2)
            began = time.monotonic()
            try:
                for index in range(len(line)):
                    sock.sendall(line[index : index + 1])
                    time.sleep(0.1)
            except OSError:
                pass
            return wire.is_closed(sock) and time.monotonic() - began < HEADER_TIMEOUT_MS / 1000 + 2

    def hostile() -> list[bool]:
        return [
            _closed_unread(address, UNTRUSTED, header.v2("10.1.2.3", "127.0.0.1", 1, 2)),  # a header from outside the trusted list
            _closed_unread(address, UNTRUSTED, b""),  # required mode: closed before a byte is read
            _closed_unread(address, LOAD_BALANCER, header.v2("10.1.2.3", "127.0.0.1", 1, 2)[:20]),  # truncated, then silence
            _closed_unread(address, LOAD_BALANCER, b"GET / HTTP/1.1\r\n\r\n"),  # garbage
            _closed_unread(address, LOAD_BALANCER, header.V2_SIGNATURE + b"\x21\x11\xff\xff"),  # over the length cap
            _closed_unread(address, LOAD_BALANCER, wire.encode_frame(API_VERSIONS)),  # Kafka without the header
            _closed_unread(stack.plaintext_address, UNTRUSTED, header.v1("10.1.2.3", "127.0.0.1", 1, 2)),  # optional: still only from trusted
        ]

    async with trio.open_nursery() as attackers:
        attackers.start_soon(trio.to_thread.run_sync, slowloris)
        results = await trio.to_thread.run_sync(hostile)
        # while the slow one still holds its connection, others are served
        assert await trio.to_thread.run_sync(lambda: _answered(address, LOAD_BALANCER, header.v2("10.1.2.9", "127.0.0.1", 1, 2)))
    assert results == [True] * 7
    reasons = [(r["requestMetadata"]["clientAddress"], r["authorizationInfo"]["reason"]) for r in _refused(tmp_path)]
    assert reasons.count((UNTRUSTED, "proxy-protocol-untrusted")) == 3
    assert reasons.count((LOAD_BALANCER, "proxy-protocol-header")) == 5  # four hostile, one slow
    metrics = stack.proxy.service.metrics.connections_refused
    assert metrics.labels("CLIENT", "proxy_protocol_header")._value.get() == 5
    assert metrics.labels("CLIENT", "proxy_protocol_untrusted")._value.get() == 2
    assert await trio.to_thread.run_sync(lambda: _answered(address, LOAD_BALANCER, header.v1("10.1.2.10", "127.0.0.1", 1, 2)))


