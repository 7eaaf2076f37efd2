"""The files one forwarded CreateTopics crosses, traced, against the list in docs/architecture.md.

The proxy runs in this process and the embedded controller in another, so the trace holds only
the proxy's side: from the accepted socket to the answer and the closed connection.
"""

import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import trio

from envelope.apis import ApiKey
from envelope_proxy.embedded import controller_properties, proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from tests.integration import wire
from tests.processes import free_port, start_server, wait_for_port, write_properties

ROOT = Path(__file__).resolve().parents[3]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MOST_FILES_IN_FORWARD = 8  # the bound; 7 today


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
    if relative.startswith((".venv/", "tests/")):
        return None
    return relative


def _create_topics(address: str) -> Any:
    sock = wire.connect(address)
    try:
        wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "path", "client_software_version": "1"})
        topic = {"name": "traced", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        return wire.call(sock, ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 5000, "validate_only": False}, 2)
    finally:
        sock.close()


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
        listener = running.listener("PLAIN")
        address = f"{listener.advertised_host}:{listener.port}"
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


def _named_in_path_section() -> set[str]:
    text = ARCHITECTURE.read_text()
    section = text.split("## The path of one forwarded request", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`((?:proxy|authz|apiversions|envelope)/[\w/]+\.py)", section))


async def test_a_forwarded_create_topics_crosses_the_files_the_architecture_names(controller_port: int, tmp_path: Path) -> None:
    response, crossed = await _trace_one_create_topics(controller_port, tmp_path / "audit")

    assert [topic.error_code for topic in response.topics] == [0]
    outside_envelope = {name for name in crossed if not name.startswith("envelope/")}
    forward = {name for name in outside_envelope if name.startswith("proxy/forward/")}
    assert "proxy/forward/forwarding.py" in forward, "the trace must see the forwarding path"
    assert len(forward) <= MOST_FILES_IN_FORWARD, sorted(forward)
    unnamed = outside_envelope - _named_in_path_section()
    assert not unnamed, f"crossed but not named in docs/architecture.md: {sorted(unnamed)}"
