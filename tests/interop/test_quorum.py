"""The proxy in front of a real quorum of three Kafka controllers: it finds the leader through
followers, and a leader killed or restarted under a trickle of requests hangs none of them.

Every request must end with success or an error Kafka calls retriable, and successes must
resume within the election time plus a few seconds (bounded generously here: the machine
may be a loaded 2-core one).
"""

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from proxy.tools.embedded import proxy_properties
from tests.audit_records import records_under
from tests.interop.kafka_quorum import KafkaQuorum
from tests.interop.trickle import CLIENT_WAIT, Trickle, unexpected
from tests.interop.upstreams import poll

pytestmark = pytest.mark.interop
REQUEST_TIMEOUT_MS = 5000
FORWARD_TIMEOUT_MS = 20000
# Raft's election timeout is 1 s by default and fetch timeout 2 s; a killed leader's broker also needs its
# session to expire before partitions move. On 2 busy cores, 45 s bounds "the election plus a few seconds".
RESUME_WITHIN = 45.0


async def start_proxy(nursery: trio.Nursery, quorum: KafkaQuorum, audit_dir: Path, quorum_key: str, quorum_value: str) -> str:
    node = quorum.nodes[1]
    props = proxy_properties(0, audit_dir)
    props.update(node.proxy_upstream_properties())
    del props["controller.quorum.bootstrap.servers"]
    props[quorum_key] = quorum_value
    props["read.bootstrap.servers"] = ",".join(n.broker_address for n in quorum.nodes.values())
    props["request.timeout.ms"] = str(REQUEST_TIMEOUT_MS)
    props["controller.forward.timeout.ms"] = str(FORWARD_TIMEOUT_MS)
    running = await nursery.start(run_proxy, parse_proxy_config(props))
    return f"127.0.0.1:{running.listener('CLIENT').port}"


def outcomes_upstream(audit_dir: Path) -> list[dict[str, Any]]:
    return [r["data"]["upstream"] for r in records_under(audit_dir) if r["data"]["stage"] == "outcome" and r["data"].get("upstream")]


@pytest.mark.parametrize("key", ["controller.quorum.bootstrap.servers", "controller.quorum.voters"])
async def test_a_proxy_that_knows_only_followers_forwards_to_the_leader(
    kafka_quorum: KafkaQuorum, nursery: trio.Nursery, tmp_path: Path, key: str
) -> None:
    leader = await trio.to_thread.run_sync(kafka_quorum.leader_id)
    followers = [node for node in kafka_quorum.nodes if node != leader]
    if key.endswith("voters"):
        value = ",".join(f"{node}@{kafka_quorum.controller_address(node)}" for node in followers)
    else:
        value = ",".join(kafka_quorum.controller_address(node) for node in followers)
    address = await start_proxy(nursery, kafka_quorum, tmp_path, key, value)
    trickle = Trickle(address, pause=0.0, limit=4, kinds=("topics", "acls"))
    await trio.to_thread.run_sync(trickle.run)
    assert [code for _, code in trickle.outcomes] == [ErrorCode.none] * 4, trickle.outcomes
    assert {upstream["nodeId"] for upstream in outcomes_upstream(tmp_path)} == {leader}


def _through_a_failover(quorum: KafkaQuorum, trickle: Trickle, graceful: bool) -> dict[str, Any]:
    runner = threading.Thread(target=trickle.run, daemon=True)
    runner.start()
    leader = quorum.leader_id()
    try:
        assert poll(lambda: trickle.successes("before") >= 4, bool, 60, 0.1), trickle.outcomes
        trickle.phase = "failover"
        gone = time.monotonic()
        if graceful:
            quorum.nodes[leader].terminate()
        else:
            quorum.nodes[leader].kill()
        resumed = poll(lambda: trickle.first_success_after(gone), lambda t: t is not None, RESUME_WITHIN + CLIENT_WAIT, 0.1)
        new_leader = quorum.leader_id()
        trickle.phase = "restarting"
        quorum.nodes[leader].restart()
        trickle.phase = "after"
        back = poll(lambda: trickle.successes("after") >= 4, bool, 90, 0.1)
    finally:
        trickle.stop.set()
        runner.join(CLIENT_WAIT + 5)
        if not quorum.nodes[leader].running:
            quorum.nodes[leader].restart()  # the next test finds three voters again
    return {
        "resumed after": None if resumed is None else resumed - gone,
        "new leader": new_leader,
        "old leader": leader,
        "back": back,
        "runner stopped": not runner.is_alive(),
    }


@pytest.mark.parametrize("graceful", [False, True], ids=["sigkill", "graceful-restart"])
async def test_losing_the_leader_under_a_trickle_hangs_no_request(
    kafka_quorum: KafkaQuorum, nursery: trio.Nursery, tmp_path: Path, graceful: bool
) -> None:
    servers = ",".join(node.controller_address for node in kafka_quorum.nodes.values())
    address = await start_proxy(nursery, kafka_quorum, tmp_path, "controller.quorum.bootstrap.servers", servers)
    trickle = Trickle(address, pause=0.1, kinds=("topics", "acls"))
    seen = await trio.to_thread.run_sync(_through_a_failover, kafka_quorum, trickle, graceful)
    assert seen["back"] and seen["runner stopped"], (seen, trickle.outcomes)
    assert seen["new leader"] != seen["old leader"]
    assert seen["resumed after"] is not None and seen["resumed after"] < RESUME_WITHIN, (seen, trickle.outcomes)
    assert unexpected(trickle.outcomes) == [], trickle.outcomes  # nothing hung, closed, or a hard error
    assert ErrorCode.not_controller not in {code for _, code in trickle.outcomes}  # the proxy re-sends it
    nodes = {upstream["nodeId"] for upstream in outcomes_upstream(tmp_path)}
    assert {seen["old leader"], seen["new leader"]} <= nodes
