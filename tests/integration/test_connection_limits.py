"""Connection limits at accept time: excess connections are closed, and a freed slot is usable again."""

import socket
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import trio

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import EmbeddedStack, start_stack
from tests.integration.conftest import audit_records

API_VERSIONS = wire.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=7)


def _open(address: str, source: str) -> socket.socket | None:
    """A served connection (it answered ApiVersions), or None when the proxy closed it."""
    sock = wire.connect(address, source=source)
    try:
        sock.sendall(wire.encode_frame(API_VERSIONS))
        wire.read_frame(sock)
    except (ConnectionError, OSError):
        sock.close()
        return None
    return sock


def _open_many(stack: ExitStack, address: str, source: str, count: int) -> list[socket.socket | None]:
    opened = [_open(address, source) for _ in range(count)]
    for sock in opened:
        if sock is not None:
            stack.enter_context(sock)
    return opened


def _poll_open(address: str, source: str, seconds: float = 5.0) -> socket.socket | None:
    """The server notices a closed connection asynchronously: retry a bounded number of times."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock = _open(address, source)
        if sock is not None:
            return sock
        time.sleep(0.05)
    return None


async def test_per_ip_limit_and_override(nursery: Any, tmp_path: Path) -> None:
    stack: EmbeddedStack = await start_stack(
        nursery,
        tmp_path / "audit",
        proxy_overrides={"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "127.0.0.6:4"},
    )
    address = stack.plaintext_address

    def probe() -> tuple[list[bool], list[bool], bool]:
        with ExitStack() as sockets:
            limited = _open_many(sockets, address, "127.0.0.5", 3)
            overridden = _open_many(sockets, address, "127.0.0.6", 5)
            first = limited[0]
            assert first is not None
            first.close()
            again = _poll_open(address, "127.0.0.5")
            if again is not None:
                sockets.enter_context(again)
            return [s is not None for s in limited], [s is not None for s in overridden], again is not None

    limited, overridden, reopened = await trio.to_thread.run_sync(probe)
    assert limited == [True, True, False]
    assert overridden == [True, True, True, True, False]
    assert reopened
    refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    reasons = {(r["requestMetadata"]["clientAddress"], r["authorizationInfo"]["reason"]) for r in refused}
    assert ("127.0.0.5", "max.connections.per.ip") in reasons
    assert ("127.0.0.6", "max.connections.per.ip.overrides") in reasons


async def test_max_connections_per_listener(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides={"listener.name.plain.max.connections": "3"})

    def probe() -> tuple[list[bool], bool, bool]:
        with ExitStack() as sockets:
            opened = _open_many(sockets, stack.plaintext_address, "127.0.0.7", 2) + _open_many(
                sockets, stack.plaintext_address, "127.0.0.8", 2
            )
            other_listener = _open(stack.sasl_address, "127.0.0.7")  # CLIENT has no limit
            if other_listener is not None:
                sockets.enter_context(other_listener)
            first = opened[0]
            assert first is not None
            first.close()
            again = _poll_open(stack.plaintext_address, "127.0.0.9")
            if again is not None:
                sockets.enter_context(again)
            return [s is not None for s in opened], other_listener is not None, again is not None

    opened, other_listener, reopened = await trio.to_thread.run_sync(probe)
    assert opened == [True, True, True, False]
    assert other_listener
    assert reopened
    refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    # _poll_open's attempts from 127.0.0.9 may be refused too until the server has noticed the close.
    reasons = [(r["requestMetadata"]["clientAddress"], r["authorizationInfo"]["reason"]) for r in refused]
    assert [item for item in reasons if item[0] != "127.0.0.9"] == [("127.0.0.8", "max.connections")]
    assert {item for item in reasons if item[0] == "127.0.0.9"} <= {("127.0.0.9", "max.connections")}


async def test_global_max_connections_spans_listeners(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides={"max.connections": "2"})

    def probe() -> list[bool]:
        with ExitStack() as sockets:
            plain = _open_many(sockets, stack.plaintext_address, "127.0.0.10", 1)
            client = _open_many(sockets, stack.sasl_address, "127.0.0.11", 2)
            return [s is not None for s in plain + client]

    assert await trio.to_thread.run_sync(probe) == [True, True, False]
    assert stack.proxy.service.refusals.counts[("CLIENT", "max.connections")] == 1
