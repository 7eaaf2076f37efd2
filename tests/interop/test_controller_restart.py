"""The real controller crashes and comes back under a steady trickle of admin requests.

Every request must end answered, with success or a retriable error
(REQUEST_TIMED_OUT while the controller is away, NOT_CONTROLLER while it
elects itself), never hung; the proxy reconnects and work succeeds again.
"""

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from devkit.kafka_node import KafkaNode
from tests.interop.trickle import CLIENT_WAIT, Trickle
from tests.interop.upstreams import kafka_target, poll

pytestmark = pytest.mark.interop
REQUEST_TIMEOUT_MS = 3000
RETRIABLE = {ErrorCode.request_timed_out, ErrorCode.not_controller}


async def test_a_controller_crash_leaves_no_request_unanswered(
    own_kafka_node: KafkaNode, nursery: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="proxy")
    # The forward deadline is shorter than the time the node is away, so requests sent meanwhile time out (7).
    overrides = {"request.timeout.ms": str(REQUEST_TIMEOUT_MS), "controller.forward.timeout.ms": str(REQUEST_TIMEOUT_MS)}
    target = await kafka_target(nursery, own_kafka_node, tmp_path / "audit", overrides)
    upstream = target.proxy.service.upstream
    trickle = Trickle(target.address)

    def work() -> dict[str, Any]:
        runner = threading.Thread(target=trickle.run, daemon=True)
        runner.start()
        try:
            assert poll(lambda: trickle.successes("before") >= 3, bool, 60, 0.1), trickle.outcomes
            trickle.phase = "down"
            own_kafka_node.kill()
            time.sleep(2 * REQUEST_TIMEOUT_MS / 1000)  # long enough for requests to time out while it is gone
            trickle.phase = "restarting"
            own_kafka_node.restart()
            trickle.phase = "after"
            back = poll(lambda: trickle.successes("after") >= 3, bool, 90, 0.1)
        finally:
            trickle.stop.set()
            runner.join(CLIENT_WAIT + 5)
        return {"back": back, "runner stopped": not runner.is_alive()}

    seen = await trio.to_thread.run_sync(work)
    codes = {code for _, code in trickle.outcomes}
    assert seen == {"back": True, "runner stopped": True}, trickle.outcomes
    assert codes <= {ErrorCode.none} | RETRIABLE, trickle.outcomes  # no hung, closed or unexpected answer
    assert any(phase == "down" and code in RETRIABLE for phase, code in trickle.outcomes), trickle.outcomes
    assert upstream.reconnects >= 1
    assert upstream.controller_ranges is not None
    assert any("active controller:" in r.getMessage() for r in caplog.records if r.created > 0)
