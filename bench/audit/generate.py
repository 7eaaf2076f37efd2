"""Synthetic audit records (docs/audit-schema.md, version 2) for the audit job benchmark.

One simulated day: a few dozen principals from a few hundred addresses doing
admin work (forwarded requests write an intent and an outcome), reads and
local answers, some denials, bursts of authentication failures, and a
sprinkle of malformed and duplicated lines, as a real audit directory has.
Deterministic for a given seed.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 21, tzinfo=UTC)
FORWARDED = (
    ("kafka.CreateTopics", 19, "CREATE", 30),
    ("kafka.DeleteTopics", 20, "DELETE", 8),
    ("kafka.CreatePartitions", 37, "ALTER", 5),
    ("kafka.AlterConfigs", 33, "ALTER_CONFIGS", 6),
    ("kafka.IncrementalAlterConfigs", 44, "ALTER_CONFIGS", 8),
    ("kafka.CreateAcls", 30, "ALTER", 3),
    ("kafka.DeleteAcls", 31, "ALTER", 1),
)
LOCAL = (("kafka.ApiVersions", 18), ("kafka.Metadata", 3), ("kafka.DescribeCluster", 60))


@dataclass(frozen=True)
class Counts:
    records: int
    malformed: int
    duplicates: int


def _time(offset_ms: int) -> str:
    moment = START + timedelta(milliseconds=offset_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.principals = [f"User:user{i:02d}" for i in range(40)]
        self.addresses = [f"10.{i // 250}.{i % 250}.{self.rng.randint(1, 254)}" for i in range(300)]
        self.home = {p: self.rng.sample(self.addresses, 3) for p in self.principals}
        self.topics = [f"topic-{i:03d}" for i in range(500)]
        self.clock = 0

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _record(self, subject: str | None, data: dict[str, Any], kind: str = "request") -> dict[str, Any]:
        return {
            "specversion": "1.0",
            "id": self._uuid(),
            "type": f"io.github.kafka-envelope-proxy.{kind}",
            "source": "envelope-proxy/100",
            "time": _time(self.clock),
            "subject": subject,
            "datacontenttype": "application/json",
            "schemaversion": 2,
            "data": data,
        }

    def _data(self, principal: str | None, address: str, method: str, api_key: int | None, stage: str, request_id: str) -> dict[str, Any]:
        return {
            "requestId": request_id,
            "stage": stage,
            "methodName": method,
            "apiKey": api_key,
            "apiVersion": None if api_key is None else 5,
            "authenticationInfo": {
                "principal": principal,
                "mechanism": "SCRAM-SHA-512",
                "listener": "CLIENT",
                "securityProtocol": "SASL_SSL",
            },
            "forwardingPrincipal": None,
            "requestMetadata": {
                "clientAddress": address,
                "clientPort": self.rng.randint(32768, 60999),
                "clientId": "adminclient",
                "clientSoftwareName": "apache-kafka-java",
                "clientSoftwareVersion": "4.1.0",
                "correlationId": None if api_key is None else self.rng.randint(1, 10_000),
                "connectionId": f"c-{self.rng.getrandbits(32):08x}",
            },
            "resources": [],
            "authorizationInfo": None,
            "result": None,
            "timings": None,
            "upstream": None,
        }

    def forwarded(self) -> Iterator[dict[str, Any]]:
        method, api_key, operation, _ = self.rng.choices(FORWARDED, weights=[w for *_, w in FORWARDED])[0]
        principal = self.rng.choice(self.principals)
        address = self.rng.choice(self.home[principal]) if self.rng.random() < 0.98 else self.rng.choice(self.addresses)
        topic = self.rng.choice(self.topics)
        request_id = self._uuid()
        resource = {"type": "TOPIC", "name": topic, "patternType": "LITERAL", "operation": operation}
        data = self._data(principal, address, method, api_key, "intent", request_id)
        data["forwardingPrincipal"] = "User:proxy"
        data["resources"] = [resource]
        data["upstream"] = {"address": "10.9.0.1:9093", "nodeId": 1}
        yield self._record(f"topic:{topic}", data)
        self.clock += self.rng.randint(1, 40)
        outcome = {**data, "stage": "outcome"}
        denied = self.rng.random() < 0.05
        errors = (
            [{"resource": topic, "errorCode": 29, "errorName": "TOPIC_AUTHORIZATION_FAILED", "message": "Authorization failed."}]
            if denied
            else []
        )
        outcome["result"] = {"status": "FAILURE" if denied else "SUCCESS", "envelopeErrorCode": 0, "errorCode": 0, "errors": errors}
        upstream = round(self.rng.lognormvariate(1.2, 0.6), 3)
        outcome["timings"] = {"queueMs": 0.0, "upstreamMs": upstream, "totalMs": round(upstream + self.rng.random(), 3)}
        yield self._record(f"topic:{topic}", outcome)

    def local(self) -> dict[str, Any]:
        method, api_key = self.rng.choice(LOCAL)
        principal = self.rng.choice(self.principals)
        data = self._data(principal, self.rng.choice(self.home[principal]), method, api_key, "local", self._uuid())
        data["result"] = {"status": "SUCCESS", "envelopeErrorCode": None, "errorCode": 0, "errors": []}
        data["timings"] = {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.05}
        return self._record(None, data)

    def auth_failure(self, address: str) -> dict[str, Any]:
        data = self._data(
            f"User:{self.rng.choice(['admin', 'root', 'kafka'])}", address, "kafka.Connection", None, "authentication-failed", self._uuid()
        )
        data["result"] = {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": 58, "errors": []}
        data["authorizationInfo"] = {"decision": "DENIED", "reason": "authentication-failed", "detail": "Authentication failed"}
        data["requestMetadata"]["clientId"] = None
        data["connection"] = {"cause": None, "durationMs": None, "requests": None}
        return self._record(None, data, kind="connection")

    def records(self, total: int) -> Iterator[dict[str, Any]]:
        """Exactly ``total`` records in time order."""
        produced = 0
        step = max(1, 86_400_000 // max(total, 1))
        while produced < total:
            self.clock += self.rng.randint(0, 2 * step)
            roll = self.rng.random()
            if roll < 0.001:
                attacker = self.rng.choice(self.addresses)
                batch = []
                for _ in range(25):
                    self.clock += self.rng.randint(50, 500)
                    batch.append(self.auth_failure(attacker))
            elif roll < 0.25:
                batch = [self.local()]
            else:
                batch = list(self.forwarded())
            for record in batch[: total - produced]:
                produced += 1
                yield record


def write(directory: Path, total: int, *, seed: int = 7, per_file: int = 250_000) -> Counts:
    """Write ``total`` lines into ``directory/audit-*.jsonl``: 0.1% malformed, 0.1% duplicates of earlier records."""
    directory.mkdir(parents=True, exist_ok=True)
    generator = Generator(seed)
    rng = random.Random(seed + 1)
    malformed = duplicates = good = 0
    handle = None
    recent: list[str] = []
    for index, record in enumerate(generator.records(total)):
        if index % per_file == 0:
            if handle is not None:
                handle.close()
            handle = (directory / f"audit-100-{index // per_file:06d}.jsonl").open("w", encoding="utf-8")
        assert handle is not None
        line = json.dumps(record, separators=(",", ":"))
        roll = rng.random()
        if roll < 0.001:
            line = line[: len(line) // 2]  # a torn line
            malformed += 1
        elif roll < 0.002 and recent:
            line = rng.choice(recent)
            duplicates += 1
        else:
            good += 1
            if len(recent) < 1000:
                recent.append(line)
            else:
                recent[rng.randrange(1000)] = line
        handle.write(line + "\n")
    if handle is not None:
        handle.close()
    return Counts(records=good, malformed=malformed, duplicates=duplicates)
