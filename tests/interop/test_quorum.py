"""The proxy in front of a real quorum of three Kafka controllers: it finds the leader through
followers, and a leader killed or restarted under a trickle of requests hangs none of them.

Every request must be answered within controller.forward.timeout.ms plus a margin, with success
or an error Kafka calls retriable (never NOT_CONTROLLER: the proxy re-sends it), and successes
must resume within the election time plus a few seconds (bounded generously here: the machine
may be a loaded 2-core one). Every wait is a bounded poll, none a fixed sleep.
"""

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from envelope_proxy.embedded import proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from tests.audit_records import records_under
from tests.interop.kafka_quorum import FETCH_TIMEOUT_MS, KafkaQuorum
from tests.interop.trickle import CLIENT_WAIT, Trickle, unexpected
from tests.interop.upstreams import poll

pytestmark = pytest.mark.interop
REQUEST_TIMEOUT_MS = 5000
FORWARD_TIMEOUT_MS = 20000
ANSWER_MARGIN = 10.0
"""Beyond controller.forward.timeout.ms, what a request may take to be answered (login, audit, a busy machine)."""
# Followers notice a killed leader after the fetch timeout (2 s), then elect within about an election timeout
# (1 s); a gracefully stopped leader resigns at once. On 2 busy cores, with JVMs that pause, 30 s bounds
# "the election plus a few seconds".
RESUME_WITHIN = FETCH_TIMEOUT_MS / 1000 + 28.0


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


def outcomes(audit_dir: Path) -> list[dict[str, Any]]:
    return [r["data"] for r in records_under(audit_dir) if r["data"]["stage"] == "outcome" and r["data"].get("upstream")]


def outcomes_upstream(audit_dir: Path) -> list[dict[str, Any]]:
    return [data["upstream"] for data in outcomes(audit_dir)]


def hard_errors(trickle: Trickle, audit_dir: Path) -> list[tuple[str, str, int | str]]:
    """What no client of a failover should see: hung, closed, or an error that is not retriable.

    One exception: TOPIC_ALREADY_EXISTS for a trickle topic (each name is used once) that the audit shows
    the proxy sent more than once. The old leader committed it, then died or resigned before answering,
    and the re-send met the committed topic, as it would behind a Kafka broker's forwarding.
    """
    resent = {
        resource["name"]
        for data in outcomes(audit_dir)
        if data["upstream"].get("attempts", 0) > 1
        for resource in data["resources"]
        if resource["type"] == "TOPIC"
    }
    answers = zip(trickle.names, trickle.outcomes, strict=False)
    return [
        (phase, name, code)
        for name, (phase, code) in answers
        if unexpected([(phase, code)]) and not (code == ErrorCode.topic_already_exists and name in resent)
    ]


@pytest.mark.parametrize(
    ("key", "leader_listed"),
    [
        ("controller.quorum.bootstrap.servers", False),
        ("controller.quorum.bootstrap.servers", True),
        ("controller.quorum.voters", False),
        ("controller.quorum.voters", True),
    ],
    ids=["bootstrap-followers", "bootstrap-leader-last", "voters-followers", "voters-leader-last"],
)
async def test_a_proxy_that_lists_followers_first_forwards_to_the_leader(
    kafka_quorum: KafkaQuorum, nursery: trio.Nursery, tmp_path: Path, key: str, leader_listed: bool
) -> None:
    leader = await trio.to_thread.run_sync(kafka_quorum.leader_id)
    listed = [node for node in kafka_quorum.nodes if node != leader] + ([leader] if leader_listed else [])
    if key.endswith("voters"):
        value = ",".join(f"{node}@{kafka_quorum.controller_address(node)}" for node in listed)
    else:
        value = ",".join(kafka_quorum.controller_address(node) for node in listed)
    address = await start_proxy(nursery, kafka_quorum, tmp_path, key, value)
    trickle = Trickle(address, pause=0.0, limit=4, kinds=("topics", "acls"))
    await trio.to_thread.run_sync(trickle.run)
    assert [code for _, code in trickle.outcomes] == [ErrorCode.none] * 4, trickle.outcomes
    assert {upstream["nodeId"] for upstream in outcomes_upstream(tmp_path)} == {leader}


def _through_a_failover(quorum: KafkaQuorum, trickle: Trickle, graceful: bool) -> dict[str, Any]:
    runner = threading.Thread(target=trickle.run, daemon=True)
    runner.start()
    leader = quorum.leader_id()
    resumed: float | None = None
    new_leader: int | None = None
    back = False
    gone = time.monotonic()
    try:
        assert poll(lambda: trickle.successes("before") >= 4, bool, 60, 0.1), trickle.outcomes
        trickle.phase = "failover"
        gone = time.monotonic()
        if graceful:
            quorum.stop(leader)
        else:
            quorum.kill(leader)
        resumed = poll(lambda: trickle.first_success_after(gone), lambda t: t is not None, RESUME_WITHIN + CLIENT_WAIT, 0.1)
        new_leader = quorum.leader_id()
        trickle.phase = "restarting"
        quorum.restart(leader)
        trickle.phase = "after"
        back = poll(lambda: trickle.successes("after") >= 4, bool, 90, 0.1)
    finally:
        trickle.stop.set()
        runner.join(CLIENT_WAIT + 5)
        if not quorum.nodes[leader].running:
            quorum.restart(leader)  # the next test finds three voters again
    return {
        "resumed after": None if resumed is None else round(resumed - gone, 2),
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
    print(f"failover ({'graceful' if graceful else 'SIGKILL'}): {seen}, slowest answer {trickle.slowest():.2f}s, {len(trickle.outcomes)} requests")
    assert seen["back"] and seen["runner stopped"], (seen, trickle.outcomes)
    assert seen["new leader"] not in (None, seen["old leader"]), seen
    assert seen["resumed after"] is not None and seen["resumed after"] < RESUME_WITHIN, (seen, trickle.outcomes)
    assert trickle.slowest() < FORWARD_TIMEOUT_MS / 1000 + ANSWER_MARGIN, (trickle.durations, trickle.outcomes)
    assert hard_errors(trickle, tmp_path) == [], trickle.outcomes  # nothing hung, closed, or a hard error
    assert ErrorCode.not_controller not in {code for _, code in trickle.outcomes}  # the proxy re-sends it
    nodes = {upstream["nodeId"] for upstream in outcomes_upstream(tmp_path)}
    assert {seen["old leader"], seen["new leader"]} <= nodes
