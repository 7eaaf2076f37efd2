"""The files one forwarded CreateTopics crosses, traced, against the list in docs/architecture.md.

The proxy runs in this process and the embedded controller in another, so the trace holds only
the proxy's side. Two traces: the whole connection (accept, ApiVersions, the request, the close)
crosses only files the section names; one request on a connection already open, with the link to
the controller already open, calls code in at most 13 files of `proxy/`, each named in the
section's "from the socket to the upstream and back" list.
"""

import dis
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import trio

from devkit import wire
from devkit.processes import free_port, start_server, wait_for_port, write_properties
from envelope.apis import ApiKey
from envelope_proxy.embedded import controller_properties, proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config

ROOT = Path(__file__).resolve().parents[3]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MOST_FILES_IN_FORWARD = 8  # the bound for the whole connection; 5 today
MOST_PROXY_FILES_PER_REQUEST = 13  # from the socket to the upstream and back: 12 until the audit chain's seal joined
_RESUME = dis.opmap["RESUME"]


@pytest.fixture
def controller_port(tmp_path: Path) -> Iterator[int]:
    port = free_port()
    config = write_properties(tmp_path / "controller.properties", controller_properties(port=port, super_users="User:proxy;User:ANONYMOUS"))
    process = start_server(["controller", "--config", str(config)], tmp_path / "controller.log")
    try:
        wait_for_port(port, process)
        yield port
    finally:
        process.kill()
        process.wait(timeout=30)


def _project_file(filename: str) -> str | None:
    path = Path(filename)
    if not path.is_absolute() or ROOT not in path.parents:
        return None
    relative = path.relative_to(ROOT).as_posix()
    if relative.startswith((".venv/", "tests/", "devkit/")):  # the test's own client and its kit
        return None
    return relative


def _create_topics_call(sock: Any, name: str) -> Any:
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    return wire.call(sock, ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 5000, "validate_only": False}, 2)


def _create_topics(address: str) -> Any:
    sock = wire.connect(address)
    try:
        wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "path", "client_software_version": "1"})
        return _create_topics_call(sock, "traced")
    finally:
        sock.close()


def _resumed(frame: FrameType) -> bool:
    """A coroutine taken up again after an await, not a call: the connection's task (listener.py, the session
    loop) is resumed on every request, but its code was called once, when the connection opened."""
    code = frame.f_code.co_code
    lasti = frame.f_lasti
    return 0 <= lasti < len(code) - 1 and code[lasti] == _RESUME and code[lasti + 1] != 0


async def _trace_one_create_topics(controller_port: int, audit_dir: Path) -> tuple[Any, set[str]]:
    crossed: set[str] = set()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            relative = _project_file(frame.f_code.co_filename)
            if relative is not None:
                crossed.add(relative)

    config = parse_proxy_config(proxy_properties(controller_port, audit_dir))
    async with trio.open_nursery() as nursery:
        running = await nursery.start(run_proxy, config)
        address = running.address("PLAIN")
        sys.setprofile(profile)
        threading.setprofile(profile)
        try:
            response = await trio.to_thread.run_sync(_create_topics, address)
            with trio.fail_after(10):
                # The connection's end (release, disconnect record) is part of the path: wait for it.
                while running.tracker.total:
                    await trio.sleep(0.01)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
        nursery.cancel_scope.cancel()
    return response, crossed


def _path_section() -> str:
    return ARCHITECTURE.read_text().split("## The path of one forwarded request", 1)[1].split("\n## ", 1)[0]


def _files_named(text: str) -> set[str]:
    return set(re.findall(r"`((?:proxy|authz|apiversions|envelope)/[\w/]+\.py)", text))


def _named_in_path_section() -> set[str]:
    return _files_named(_path_section())


def _named_from_socket_to_upstream() -> set[str]:
    return _files_named(_path_section().split("**The connection around it**", 1)[0])


async def _trace_one_request_on_an_open_connection(controller_port: int, audit_dir: Path) -> tuple[Any, set[str]]:
    called: set[str] = set()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and not _resumed(frame):
            relative = _project_file(frame.f_code.co_filename)
            if relative is not None:
                called.add(relative)

    def client(address: str) -> Any:
        sock = wire.connect(address)
        try:
            wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "path", "client_software_version": "1"})
            assert [t.error_code for t in _create_topics_call(sock, "warm").topics] == [0]  # the link to the controller is open
            trio.from_thread.run_sync(sys.setprofile, profile)
            try:
                return _create_topics_call(sock, "traced")
            finally:
                trio.from_thread.run_sync(sys.setprofile, None)
        finally:
            sock.close()

    config = parse_proxy_config(proxy_properties(controller_port, audit_dir))
    async with trio.open_nursery() as nursery:
        running = await nursery.start(run_proxy, config)
        response = await trio.to_thread.run_sync(client, running.address("PLAIN"))
        nursery.cancel_scope.cancel()
    return response, called


async def test_a_forwarded_create_topics_crosses_the_files_the_architecture_names(controller_port: int, tmp_path: Path) -> None:
    response, crossed = await _trace_one_create_topics(controller_port, tmp_path / "audit")

    assert [topic.error_code for topic in response.topics] == [0]
    outside_envelope = {name for name in crossed if not name.startswith("envelope/")}
    forward = {name for name in outside_envelope if name.startswith("proxy/forward/")}
    assert "proxy/forward/forwarding.py" in forward, "the trace must see the forwarding path"
    assert len(forward) <= MOST_FILES_IN_FORWARD, sorted(forward)
    unnamed = outside_envelope - _named_in_path_section()
    assert not unnamed, f"crossed but not named in docs/architecture.md: {sorted(unnamed)}"


async def test_one_request_on_an_open_connection_calls_at_most_13_files_of_the_proxy(controller_port: int, tmp_path: Path) -> None:
    response, called = await _trace_one_request_on_an_open_connection(controller_port, tmp_path / "audit")

    assert [topic.error_code for topic in response.topics] == [0]
    proxy_files = {name for name in called if name.startswith("proxy/")}
    assert "proxy/forward/forwarding.py" in proxy_files and "proxy/upstream/link.py" in proxy_files, sorted(called)
    assert len(proxy_files) <= MOST_PROXY_FILES_PER_REQUEST, sorted(proxy_files)
    unnamed = called - _named_from_socket_to_upstream()
    assert not unnamed, f"called on the request's path but not in its list in docs/architecture.md: {sorted(unnamed)}"
