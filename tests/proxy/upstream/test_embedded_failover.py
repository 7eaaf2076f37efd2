"""Failover through the whole proxy, with three embedded controllers standing in for a KRaft quorum.

The leader is moved with `set_active`, deterministically, where a real quorum would hold an
election: the proxy must find the active node through followers, re-send what a follower
refused, answer every request (REQUEST_TIMED_OUT only while no leader exists), and resume.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from devkit.processes import free_port
from envelope import kafka_uuid
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties
from proxy.app import RunningProxy, run_proxy
from proxy.config import parse_proxy_config
from tests.audit_records import records_under

NODES = (1, 2, 3)
WAIT = 30.0  # bound on every wait; none is expected to come near it


@dataclass
class Quorum:
    controllers: dict[int, EmbeddedController]
    ports: dict[int, int]

    def set_active(self, node_id: int | None) -> None:
        """An election every voter agrees on at once."""
        for controller in self.controllers.values():
            controller.set_active(node_id)


async def start_quorum(nursery: trio.Nursery, active: int) -> Quorum:
    ports = {node: free_port() for node in NODES}
    voters = ",".join(f"{node}@127.0.0.1:{port}" for node, port in ports.items())
    controllers = {}
    cluster_id = kafka_uuid.random_text()  # one id for the whole quorum, as kafka-storage format gives it
    for node, port in ports.items():
        props = {
            **controller_properties(port=port),
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "embedded.controller.active.id": str(active),
            "cluster.id": cluster_id,
        }
        controllers[node] = EmbeddedController(parse_controller_config(props))
        await nursery.start(controllers[node].run)
    return Quorum(controllers, ports)


async def start_proxy(nursery: trio.Nursery, audit_dir: Path, quorum_key: str, quorum_value: str, **extra: str) -> str:
    props = proxy_properties(0, audit_dir)
    del props["controller.quorum.bootstrap.servers"]
    props[quorum_key] = quorum_value
    running: RunningProxy = await nursery.start(run_proxy, parse_proxy_config({**props, **extra}))
    return f"127.0.0.1:{running.listener('CLIENT').port}"


def create_topic(address: str, name: str) -> int:
    return wire.create_topic_at(address, "admin", DEFAULT_USERS["admin"], name, timeout=WAIT)


def outcome_of(audit_dir: Path, topic: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        r["data"]
        for r in records_under(audit_dir)
        if r["data"]["stage"] == "outcome" and any(res.get("name") == topic for res in r["data"].get("resources", []))
    ]
    (record,) = found
    return record


def holder(quorum: Quorum, topic: str) -> list[int]:
    return [node for node, controller in quorum.controllers.items() if topic in controller.image.topics]


@pytest.mark.parametrize(
    "key",
    ["controller.quorum.bootstrap.servers", "controller.quorum.voters"],
)
async def test_a_proxy_that_knows_only_a_follower_forwards_to_the_leader(nursery: trio.Nursery, tmp_path: Path, key: str) -> None:
    quorum = await start_quorum(nursery, active=2)
    follower = f"127.0.0.1:{quorum.ports[1]}"
    address = await start_proxy(nursery, tmp_path, key, follower if key.endswith("servers") else f"1@{follower}")
    assert await trio.to_thread.run_sync(create_topic, address, "through-a-follower") == ErrorCode.none
    assert holder(quorum, "through-a-follower") == [2]
    assert outcome_of(tmp_path, "through-a-follower")["upstream"]["nodeId"] == 2


async def test_a_request_refused_by_the_old_leader_is_sent_to_the_new_one(nursery: trio.Nursery, tmp_path: Path) -> None:
    quorum = await start_quorum(nursery, active=2)
    servers = ",".join(f"127.0.0.1:{quorum.ports[node]}" for node in NODES)
    address = await start_proxy(nursery, tmp_path, "controller.quorum.bootstrap.servers", servers)
    assert await trio.to_thread.run_sync(create_topic, address, "before") == ErrorCode.none
    quorum.set_active(3)
    assert await trio.to_thread.run_sync(create_topic, address, "after") == ErrorCode.none
    assert (holder(quorum, "before"), holder(quorum, "after")) == ([2], [3])
    upstream = outcome_of(tmp_path, "after")["upstream"]
    assert upstream["nodeId"] == 3 and upstream["controllers"][0] == 2 and upstream["attempts"] >= 2


async def test_a_trickle_survives_elections_with_no_error_reaching_the_client(nursery: trio.Nursery, tmp_path: Path) -> None:
    quorum = await start_quorum(nursery, active=1)
    servers = ",".join(f"127.0.0.1:{quorum.ports[node]}" for node in NODES)
    address = await start_proxy(nursery, tmp_path, "controller.quorum.bootstrap.servers", servers)
    answers: list[int] = []
    done = trio.Event()

    async def trickle(client: int, count: int) -> None:
        for n in range(count):
            answers.append(await trio.to_thread.run_sync(create_topic, address, f"trickle-{client}-{n}"))

    async def clients() -> None:
        async with trio.open_nursery() as inner:
            for client in range(3):
                inner.start_soon(trickle, client, 15)
        done.set()

    nursery.start_soon(clients)
    with trio.fail_after(WAIT * 2):
        for leader in (2, 3, 1, 2):
            while len(answers) < 5 * leader and not done.is_set():
                await trio.sleep(0.01)
            quorum.set_active(leader)
        await done.wait()
    assert answers == [ErrorCode.none] * 45
    placed = [node for client in range(3) for n in range(15) for node in holder(quorum, f"trickle-{client}-{n}")]
    assert len(placed) == 45 and len(set(placed)) > 1  # each topic made exactly once, on more than one leader


async def test_without_a_leader_requests_time_out_and_resume_after_an_election(nursery: trio.Nursery, tmp_path: Path) -> None:
    quorum = await start_quorum(nursery, active=1)
    servers = ",".join(f"127.0.0.1:{quorum.ports[node]}" for node in NODES)
    address = await start_proxy(nursery, tmp_path, "controller.quorum.bootstrap.servers", servers, **{"controller.forward.timeout.ms": "1500"})
    assert await trio.to_thread.run_sync(create_topic, address, "while-led") == ErrorCode.none
    quorum.set_active(None)
    timed: Callable[[], int] = lambda: create_topic(address, "leaderless")  # noqa: E731
    with trio.fail_after(WAIT):
        assert await trio.to_thread.run_sync(timed) == ErrorCode.request_timed_out
    assert holder(quorum, "leaderless") == []
    quorum.set_active(3)
    with trio.fail_after(WAIT):
        assert await trio.to_thread.run_sync(create_topic, address, "re-elected") == ErrorCode.none
    assert holder(quorum, "re-elected") == [3]
