"""The embedded controller goes away and a different one comes back on the same address.

The replacement speaks fewer CreateTopics versions and first answers
NOT_CONTROLLER, as a controller that is still electing itself does: the proxy
answers REQUEST_TIMED_OUT while nobody listens, reconnects, closes idle client
connections so they ask ApiVersions again (KIP-590), and re-sends envelopes
answered with NOT_CONTROLLER.
"""

import time
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from apiversions import VersionRange
from controller.config import parse_controller_config
from controller.server import ControllerConnection, EmbeddedController
from devkit import wire
from envelope import kafka_uuid
from envelope.apis import ApiKey
from envelope.header import RequestHeaderInfo
from envelope.wrap import wrap_response
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config


class ElectingController(EmbeddedController):
    """The embedded controller, answering its first `not_yet` envelopes with NOT_CONTROLLER."""

    def __init__(self, *args: Any, not_yet: int) -> None:
        super().__init__(*args)
        self.not_yet = not_yet
        self.envelopes = 0

    def handle_envelope(self, session: ControllerConnection, header: RequestHeaderInfo, frame: bytes) -> bytes:
        self.envelopes += 1
        if self.envelopes <= self.not_yet:
            return wrap_response(header.correlation_id, ErrorCode.not_controller, None)
        return super().handle_envelope(session, header, frame)


def _create_topic(address: str, name: str) -> int:
    return wire.create_topic_at(address, "admin", DEFAULT_USERS["admin"], name)


def _create_topics_range(address: str) -> tuple[int, int]:
    with wire.connect(address, timeout=30) as sock:
        body = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"}, 9)
        (entry,) = [k for k in body.api_keys if int(k.api_key) == ApiKey.CREATE_TOPICS]
        return int(entry.min_version), int(entry.max_version)


async def test_a_replaced_controller_is_followed_and_clients_told(nursery: Any, tmp_path: Path) -> None:
    # The replacement is a node of the same cluster: the proxy refuses a controller that reports another cluster id.
    cluster = {"cluster.id": kafka_uuid.random_text()}
    first = EmbeddedController(parse_controller_config({**controller_properties(), **cluster}))
    first_scope = trio.CancelScope()

    async def run_first(task_status: trio.TaskStatus[Any]) -> None:
        with first_scope:
            await first.run(task_status=task_status)

    (bound,) = await nursery.start(run_first)
    port = bound.port
    config = parse_proxy_config({**proxy_properties(port, tmp_path / "audit"), "request.timeout.ms": "1500", "controller.forward.timeout.ms": "1500"})
    running = await nursery.start(run_proxy, config)
    address = f"127.0.0.1:{running.listener('CLIENT').port}"
    upstream = running.service.upstream

    assert await trio.to_thread.run_sync(_create_topic, address, "before") == 0
    before_range = await trio.to_thread.run_sync(_create_topics_range, address)
    idle = await trio.to_thread.run_sync(lambda: wire.connect(address, timeout=10))
    try:
        assert await trio.to_thread.run_sync(wire.sasl_plain_login, idle, "alice", DEFAULT_USERS["alice"]) == 0

        first_scope.cancel()
        with trio.fail_after(10):
            while upstream.connected:
                await trio.sleep(0.05)
        assert await trio.to_thread.run_sync(_create_topic, address, "while-away") == ErrorCode.request_timed_out

        second = ElectingController(parse_controller_config({**controller_properties(port=port), **cluster}), not_yet=2)
        lowered = VersionRange(before_range[0], before_range[1] - 1)
        second.ranges[ApiKey.CREATE_TOPICS] = lowered
        await nursery.start(second.run)
        with trio.fail_after(20):
            while not upstream.connected:
                await trio.sleep(0.05)

        idle.settimeout(10)
        assert await trio.to_thread.run_sync(wire.is_closed, idle), "an idle client must be closed when versions change"
        assert await trio.to_thread.run_sync(_create_topics_range, address) == (lowered.min, lowered.max)
        started = time.monotonic()
        assert await trio.to_thread.run_sync(_create_topic, address, "after") == 0
        assert time.monotonic() - started < 10
        assert second.envelopes == 3  # two NOT_CONTROLLER answers, re-sent, then served
        assert "after" in second.image.topics
        assert upstream.reconnects >= 1
    finally:
        idle.close()
