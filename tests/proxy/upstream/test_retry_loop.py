"""The one retry loop of a request, over a scripted Sender: how each attempt is classified, which counts
the waits grow with, and when the deadline ends it. No connections, and the clock jumps."""

from dataclasses import dataclass, field

import pytest
import trio
from kio.schema.errors import ErrorCode
from trio.testing import MockClock

from envelope.wrap import wrap_response
from proxy.backoff import Backoff
from proxy.net.addresses import ControllerAddress
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import Attempt, Build, EnvelopeReply, send, send_envelope

NODE = ControllerAddress("127.0.0.1", 9093, 1)
LOST = "lost"
INITIAL, MAXIMUM = 0.05, 1.0  # Kafka's reconnect.backoff.ms and reconnect.backoff.max.ms


def build(correlation_id: int) -> bytes:
    return b"request"


def middle(low: float, high: float) -> float:
    return (low + high) / 2


@dataclass
class ScriptedSender:
    """Each attempt ends as the script says: LOST, or an envelope error code (the last one repeats)."""

    script: list[str | int]
    backoff: Backoff = field(default_factory=lambda: Backoff(INITIAL, MAXIMUM, uniform=middle))
    admitted: list[bool] = field(default_factory=list)
    retries: list[float] = field(default_factory=list)
    refused_by: list[ControllerAddress] = field(default_factory=list)
    slept_at: list[float] = field(default_factory=list)

    async def attempt(self, build: Build, deadline: float, *, admitted: bool) -> Attempt:
        self.admitted.append(admitted)
        self.slept_at.append(trio.current_time())
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if step == LOST:
            return Attempt(NODE, None, 0.0, 0.0)
        assert isinstance(step, int)
        return Attempt(NODE, wrap_response(7, step, None if step else b"answer"), 0.0, 0.0)

    async def retry_after(self, delay: float) -> None:
        self.retries.append(delay)
        await trio.sleep(delay)

    def not_controller(self, server: ControllerAddress) -> None:
        self.refused_by.append(server)


async def test_not_controller_and_lost_attempts_are_sent_again_until_answered(autojump_clock: MockClock) -> None:
    sender = ScriptedSender([LOST, LOST, ErrorCode.not_controller, LOST, ErrorCode.none])
    seen: list[EnvelopeReply] = []
    reply = await send_envelope(sender, build, deadline=trio.current_time() + 30, answered=seen.append)
    assert (reply.error, reply.embedded, reply.not_controller) == (ErrorCode.none, b"answer", False)
    assert [r.error for r in seen] == [ErrorCode.not_controller, ErrorCode.none]
    # Only losses are the pool's retries, and their count starts again after an answer (NOT_CONTROLLER too).
    assert sender.retries == pytest.approx([INITIAL, 2 * INITIAL, INITIAL])
    assert sender.admitted == [False, True, True, False, True]
    assert sender.refused_by == [NODE]
    # Each answer records the attempts since the one before.
    assert [len(r.delivery.attempts) for r in seen] == [3, 2]


async def test_not_controller_until_the_deadline_is_the_final_reply(autojump_clock: MockClock) -> None:
    sender = ScriptedSender([ErrorCode.not_controller])
    started = trio.current_time()
    reply = await send_envelope(sender, build, deadline=started + 3.0)
    assert reply.not_controller
    # NOT_CONTROLLER answers count over the whole request: 50, 100, 200, 400, 800, 1000 ms... until the deadline.
    gaps = [later - earlier for earlier, later in zip(sender.slept_at, sender.slept_at[1:], strict=False)]
    assert gaps == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0])
    assert sender.retries == [] and len(sender.refused_by) == len(sender.slept_at)


async def test_a_request_sent_as_it_is_passes_any_answer_on(autojump_clock: MockClock) -> None:
    sender = ScriptedSender([ErrorCode.not_controller])
    delivery = await send(sender, build, deadline=trio.current_time() + 3.0)
    assert delivery.server == NODE and sender.refused_by == []


async def test_losses_until_the_deadline_are_unavailable(autojump_clock: MockClock) -> None:
    sender = ScriptedSender([LOST])
    with pytest.raises(UpstreamUnavailable, match="the next would come after the deadline"):
        await send_envelope(sender, build, deadline=trio.current_time() + 1.0)
    assert sender.refused_by == [] and len(sender.retries) == len(sender.slept_at) - 1
