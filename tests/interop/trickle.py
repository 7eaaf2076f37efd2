"""A steady trickle of admin requests through a proxy, each outcome recorded: who got what, and when."""

import threading
import time

from kio.schema.errors import ErrorCode

from authz.model import Operation, PatternType, PermissionType, ResourceType
from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS
from tests.interop.test_conformance import unique

CLIENT_WAIT = 30.0  # far above request.timeout.ms: a request still unanswered by then is hung


class Trickle:
    """One request every `pause` seconds on a fresh connection, alternating over `kinds`; bounded by `limit`."""

    def __init__(self, address: str, pause: float = 0.25, limit: int = 400, kinds: tuple[str, ...] = ("acls",)) -> None:
        self.address, self.pause, self.limit, self.kinds = address, pause, limit, kinds
        self.outcomes: list[tuple[str, int | str]] = []
        self.sent: list[float] = []
        """When each request was sent (time.monotonic())."""
        self.times: list[float] = []
        """When each answer came."""
        self.durations: list[float] = []
        """Seconds from connecting to the answer, per request."""
        self.names: list[str] = []
        """The topic (CreateTopics) or ACL resource (CreateAcls) each request named, unique per request."""
        self.phase = "before"
        self.stop = threading.Event()

    def successes(self, phase: str) -> int:
        return sum(1 for p, code in self.outcomes if p == phase and code == ErrorCode.none)

    def first_success_after(self, moment: float) -> float | None:
        """When the first request sent after `moment` succeeded (its answer's time), or None."""
        # read while run() appends: the other lists grow first, so zip stops at the outcomes written so far
        answers = zip(self.sent, self.times, list(self.outcomes), strict=False)
        return next((answered for sent, answered, (_, code) in answers if sent > moment and code == ErrorCode.none), None)

    def run(self) -> None:
        for n in range(self.limit):
            if self.stop.is_set():
                return
            phase = self.phase
            name = unique("trickle")
            started = time.monotonic()
            outcome = self._one(self.kinds[n % len(self.kinds)], name)
            answered = time.monotonic()
            self.names.append(name)
            self.sent.append(started)
            self.durations.append(answered - started)
            self.times.append(answered)
            self.outcomes.append((phase, outcome))  # last: a reader that sees the outcome sees the rest
            time.sleep(self.pause)

    def slowest(self) -> float:
        return max(self.durations, default=0.0)

    def _one(self, kind: str, name: str) -> int | str:
        try:
            with wire.connect(self.address, timeout=CLIENT_WAIT) as sock:
                if wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) != ErrorCode.none:
                    return "login failed"
                if kind == "topics":
                    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                    body = wire.call(sock, ApiKey.CREATE_TOPICS, 5, {"topics": [topic], "timeout": 5000, "validate_only": False}, 3)
                    return int(body.topics[0].error_code)
                acl = {
                    "resource_type": ResourceType.TOPIC,
                    "resource_name": name,
                    "resource_pattern_type": PatternType.LITERAL,
                    "principal": "User:bob",
                    "host": "*",
                    "operation": Operation.READ,
                    "permission_type": PermissionType.ALLOW,
                }
                body = wire.call(sock, ApiKey.CREATE_ACLS, 2, {"creations": [acl]}, 3)
                return int(body.results[0].error_code)
        except TimeoutError:
            return "hung"
        except OSError as exc:
            return f"closed: {exc!r}"


def unexpected(outcomes: list[tuple[str, int | str]]) -> list[tuple[str, int | str]]:
    """Outcomes that are neither success nor an error Kafka calls retriable (hung, closed, or a hard error)."""
    return [(p, code) for p, code in outcomes if not (isinstance(code, int) and (code == ErrorCode.none or ErrorCode(code).retriable))]
