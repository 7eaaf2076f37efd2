"""IP filtering at accept time, with distinct loopback source addresses."""

import logging
import socket
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import EmbeddedStack, start_stack
from tests.integration.conftest import audit_records

API_VERSIONS = wire.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=7)


def _ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


def _served(address: str, source: str) -> bool:
    """True when the listener answers ApiVersions; False when the connection was closed without a byte."""
    with wire.connect(address, source=source) as sock:
        try:
            sock.sendall(wire.encode_frame(API_VERSIONS))
            frame = wire.read_frame(sock)
        except (ConnectionError, OSError):
            return False
        return len(frame) > 0


def _address(stack: EmbeddedStack, name: str) -> str:
    listener = stack.proxy.listener(name)
    host = f"[{listener.host}]" if ":" in listener.host else listener.host
    return f"{host}:{listener.port}"


async def _stack(nursery: Any, tmp_path: Path, overrides: dict[str, str]) -> EmbeddedStack:
    return await start_stack(nursery, tmp_path / "audit", proxy_overrides=overrides)


async def test_a_global_deny_list_refuses_listed_sources_only(nursery: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stack = await _stack(nursery, tmp_path, {"security.ip.filter.rule.type": "deny", "security.ip.filter.list": "127.0.0.2/32,10.0.0.0/8"})
    caplog.set_level(logging.WARNING, logger="proxy.net.listener")

    def probe() -> tuple[bool, bool, bool]:
        return (
            _served(stack.plaintext_address, "127.0.0.2"),
            _served(stack.plaintext_address, "127.0.0.3"),
            _served(stack.sasl_address, "127.0.0.2"),
        )

    assert await trio.to_thread.run_sync(probe) == (False, True, False)
    refused = [r for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert {(r["data"]["requestMetadata"]["clientAddress"], r["data"]["authenticationInfo"]["listener"]) for r in refused} == {
        ("127.0.0.2", "PLAIN"),
        ("127.0.0.2", "CLIENT"),
    }
    record = refused[0]["data"]
    assert record["methodName"] == "kafka.Connection"
    assert record["authorizationInfo"]["reason"] == "ip-filter"
    assert "127.0.0.2/32" in record["authorizationInfo"]["detail"]
    assert record["result"]["status"] == "REFUSED"
    assert stack.proxy.service.refusals.counts[("PLAIN", "ip-filter")] == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "refused" in r.getMessage()]
    assert any("127.0.0.2" in line and "PLAIN" in line and "127.0.0.2/32" in line for line in warnings)


async def test_a_refused_connection_is_closed_before_any_byte_is_read(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(nursery, tmp_path, {"security.ip.filter.rule.type": "deny", "security.ip.filter.list": "127.0.0.2"})

    def first_read() -> bool:
        with wire.connect(stack.plaintext_address, source="127.0.0.2") as sock:
            return wire.is_closed(sock)  # nothing sent: only the server's close can end this read

    assert await trio.to_thread.run_sync(first_read)


async def test_a_per_listener_allow_list_leaves_other_listeners_alone(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(
        nursery,
        tmp_path,
        {"listener.name.plain.security.ip.filter.rule.type": "allow", "listener.name.plain.security.ip.filter.list": "127.0.0.3/32"},
    )

    def probe() -> tuple[bool, bool, bool, bool]:
        return (
            _served(stack.plaintext_address, "127.0.0.3"),
            _served(stack.plaintext_address, "127.0.0.4"),
            _served(stack.plaintext_address, "127.0.0.1"),
            _served(stack.sasl_address, "127.0.0.4"),  # CLIENT has no filter
        )

    assert await trio.to_thread.run_sync(probe) == (True, False, False, True)
    refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert sorted(r["requestMetadata"]["clientAddress"] for r in refused) == ["127.0.0.1", "127.0.0.4"]
    assert all("listener.name.plain.security.ip.filter.list" in r["authorizationInfo"]["detail"] for r in refused)


async def test_a_listener_override_can_turn_a_global_filter_off(nursery: Any, tmp_path: Path) -> None:
    stack = await _stack(
        nursery,
        tmp_path,
        {
            "security.ip.filter.rule.type": "deny",
            "security.ip.filter.list": "127.0.0.0/8",
            "listener.name.plain.security.ip.filter.rule.type": "",
            "listener.name.plain.security.ip.filter.list": "",
        },
    )

    def probe() -> tuple[bool, bool]:
        return _served(stack.plaintext_address, "127.0.0.5"), _served(stack.sasl_address, "127.0.0.5")

    assert await trio.to_thread.run_sync(probe) == (True, False)


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this host")
@pytest.mark.parametrize(("rule_type", "cidrs", "v6_served", "v4_served"), [("deny", "::1/128", False, True), ("allow", "::1", True, False)])
async def test_ipv6_sources(nursery: Any, tmp_path: Path, rule_type: str, cidrs: str, v6_served: bool, v4_served: bool) -> None:
    stack = await _stack(
        nursery,
        tmp_path,
        {
            "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0,V6://[::1]:0",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,V6:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            "listener.name.v6.security.ip.filter.rule.type": rule_type,
            "listener.name.v6.security.ip.filter.list": cidrs,
            "listener.name.plain.security.ip.filter.rule.type": rule_type,
            "listener.name.plain.security.ip.filter.list": cidrs,
        },
    )

    def probe() -> tuple[bool, bool]:
        return _served(_address(stack, "V6"), "::1"), _served(stack.plaintext_address, "127.0.0.1")

    assert await trio.to_thread.run_sync(probe) == (v6_served, v4_served)
    if not v6_served:
        refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
        assert [r["requestMetadata"]["clientAddress"] for r in refused] == ["::1"]
