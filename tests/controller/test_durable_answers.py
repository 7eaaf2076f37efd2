"""The image is written in a worker thread, one write at a time, and no answer leaves before what it shows is on disk."""

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import controller_properties

PROXY = ("proxy", "proxy-secret")  # a super user of controller_properties()


def _create_topic(address: str, name: str) -> int:
    return wire.create_topic_at(address, *PROXY, name, version=7)


def _topic_names(address: str) -> list[str]:
    with wire.connect(address, timeout=30) as sock:
        assert wire.sasl_plain_login(sock, *PROXY) == 0
        values = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        body = wire.call(sock, ApiKey.METADATA, 12, values, correlation_id=3)
        return sorted(str(t.name) for t in body.topics)


def _api_versions(address: str) -> int:
    with wire.connect(address, timeout=30) as sock:
        body = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"}, correlation_id=1)
        return int(body.error_code)


class GatedWrites:
    """Stands in for MetadataStore.write: records each write and holds it until released."""

    def __init__(self, write: Any) -> None:
        self.write = write
        self.started: list[bytes] = []
        self.finished: list[bytes] = []
        self.threads: set[int] = set()
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._active = 0
        self.overlapped = False

    def __call__(self, data: bytes) -> None:
        with self._lock:
            self._active += 1
            self.overlapped |= self._active > 1
            self.threads.add(threading.get_ident())
            self.started.append(data)
        try:
            assert self.release.wait(20), "the test never released the write"
            self.write(data)
            self.finished.append(data)
        finally:
            with self._lock:
                self._active -= 1


def _topics_in(data: bytes) -> list[str]:
    return sorted(json.loads(data)["topics"])


async def _until(condition: Any) -> None:
    with trio.fail_after(20):
        while not condition():
            await trio.sleep(0.01)


async def test_writes_leave_the_event_loop_run_one_at_a_time_and_hold_the_answers(
    nursery: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctl = EmbeddedController(parse_controller_config({**controller_properties(), "metadata.log.dir": str(tmp_path)}))
    assert ctl.store is not None
    gate = GatedWrites(ctl.store.write)
    monkeypatch.setattr(ctl.store, "write", gate)
    (bound,) = await nursery.start(ctl.run)
    address = f"127.0.0.1:{bound.port}"
    answers: dict[str, Any] = {}

    async def ask(key: str, call: Any, *args: Any) -> None:
        answers[key] = await trio.to_thread.run_sync(call, address, *args)

    nursery.start_soon(ask, "t1", _create_topic, "t1")
    await _until(lambda: gate.started)
    # The first write is held in its thread; the event loop still answers and applies other requests.
    assert await trio.to_thread.run_sync(_api_versions, address) == 0
    nursery.start_soon(ask, "t2", _create_topic, "t2")
    await _until(lambda: "t2" in ctl.image.topics)
    nursery.start_soon(ask, "read", _topic_names)
    await trio.sleep(0.3)
    assert answers == {}  # neither change is acknowledged, and the read does not show them, before they are durable
    assert len(gate.started) == 1 and _topics_in(gate.started[0]) == ["t1"]  # encoded before t2 was applied

    gate.release.set()
    await _until(lambda: len(answers) == 3)
    assert answers == {"t1": 0, "t2": 0, "read": ["t1", "t2"]}
    assert [_topics_in(data) for data in gate.finished] == [["t1"], ["t1", "t2"]]
    assert not gate.overlapped
    assert threading.get_ident() not in gate.threads
    assert _topics_in((tmp_path / "metadata.json").read_bytes()) == ["t1", "t2"]


async def test_an_unchanged_image_is_not_written_again(nursery: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctl = EmbeddedController(parse_controller_config({**controller_properties(), "metadata.log.dir": str(tmp_path)}))
    assert ctl.store is not None
    gate = GatedWrites(ctl.store.write)
    gate.release.set()
    monkeypatch.setattr(ctl.store, "write", gate)
    (bound,) = await nursery.start(ctl.run)
    address = f"127.0.0.1:{bound.port}"
    assert await trio.to_thread.run_sync(_create_topic, address, "t1") == 0
    stored = (tmp_path / "metadata.json").stat().st_ino
    assert await trio.to_thread.run_sync(_create_topic, address, "t1") == ErrorCode.topic_already_exists  # nothing changed
    assert await trio.to_thread.run_sync(_topic_names, address) == ["t1"]  # a read alone never writes
    assert len(gate.started) == 2 and gate.started[0] == gate.started[1]
    assert (tmp_path / "metadata.json").stat().st_ino == stored  # not replaced: the same image is not written twice
