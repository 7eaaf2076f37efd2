"""Realistic synthetic audit records (docs/audit-schema.md, version 2) for the audit job benchmark.

Traffic as a deployment writes it, configurable with :class:`Traffic`:

- several proxy nodes (``source`` envelope-proxy/<node>), each rotating its file every hour
  (``audit-<node>-<UTC hour>-<seq>.jsonl``), over several days;
- several listeners (SASL_SSL/SCRAM, SASL_PLAINTEXT/PLAIN, SSL, PLAINTEXT as User:ANONYMOUS);
- about 160 principals whose volumes follow a Zipf law (a few service accounts do most of the work),
  every forwarded request carrying the proxy's own identity as ``forwardingPrincipal``;
- whole connections: connected, authenticated, requests, disconnected (with a cause);
  refused connections (IP filter, connection limits, privileged principals, protocol errors);
  brute-force bursts of failed logins from one address;
- requests: forwarded (intent + outcome: success, per-resource errors, authorization failures,
  envelope errors), reads authorized at the edge (some with denied resources), local answers
  and request refusals;
- the edge cases of a real audit directory: outcomes whose intent is missing, intents that never
  got an outcome, records written twice in one file and re-published in a later file,
  malformed lines (torn, wrong types, no id, unknown schema version) and blank lines.

Deterministic for a given seed. ``python bench/audit/generate.py DIR --records N`` writes a directory.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 21, tzinfo=UTC)
PROXY_IDENTITY = "User:envelope-proxy"
SASL_FAILED = 58
UNSUPPORTED_MECHANISM = 33
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42

# (method, api key, operation, resource type, weight, max resources)
FORWARDED = (
    ("kafka.CreateTopics", 19, "CREATE", "TOPIC", 30, 5),
    ("kafka.DeleteTopics", 20, "DELETE", "TOPIC", 8, 3),
    ("kafka.CreatePartitions", 37, "ALTER", "TOPIC", 5, 2),
    ("kafka.AlterConfigs", 33, "ALTER_CONFIGS", "TOPIC", 4, 2),
    ("kafka.IncrementalAlterConfigs", 44, "ALTER_CONFIGS", "TOPIC", 10, 2),
    ("kafka.CreateAcls", 30, "ALTER", "CLUSTER", 3, 1),
    ("kafka.DeleteAcls", 31, "ALTER", "CLUSTER", 1, 1),
    ("kafka.AlterUserScramCredentials", 51, "ALTER", "CLUSTER", 1, 1),
    ("kafka.AlterClientQuotas", 49, "ALTER_CONFIGS", "CLUSTER", 1, 1),
    ("kafka.DeleteRecords", 21, "DELETE", "TOPIC", 2, 2),
)
READS = (("kafka.Metadata", 3, "DESCRIBE"), ("kafka.DescribeConfigs", 32, "DESCRIBE_CONFIGS"), ("kafka.DescribeAcls", 29, "DESCRIBE"))
LOCAL = (("kafka.ApiVersions", 18), ("kafka.Metadata", 3), ("kafka.DescribeCluster", 60))
# per-resource errors a controller answers besides authorization failures
RESOURCE_ERRORS = ((36, "TOPIC_ALREADY_EXISTS"), (3, "UNKNOWN_TOPIC_OR_PARTITION"), (37, "INVALID_PARTITIONS"), (40, "INVALID_CONFIG"))
AUTHZ_ERRORS = {"TOPIC": (29, "TOPIC_AUTHORIZATION_FAILED"), "CLUSTER": (31, "CLUSTER_AUTHORIZATION_FAILED")}
DISCONNECT_CAUSES = (("client", 90), ("idle", 6), ("versions-changed", 2), ("shutdown", 1), ("error", 1))
REFUSAL_REASONS = ("ip-filter", "max.connections.per.ip", "max.connections", "protocol-error")
CLIENTS = (
    ("adminclient-1", "apache-kafka-java", "4.1.0"),
    ("terraform-provider-kafka", "sarama", "1.43.0"),
    ("rdkafka", "librdkafka", "2.6.1"),
    ("kafka-python-2.0.2", "kafka-python", "2.0.2"),
    ("strimzi-topic-operator", "apache-kafka-java", "3.9.0"),
)


@dataclass(frozen=True)
class Listener:
    name: str
    protocol: str
    mechanism: str | None


LISTENERS = (
    Listener("CLIENT", "SASL_SSL", "SCRAM-SHA-512"),
    Listener("INTERNAL", "SASL_PLAINTEXT", "PLAIN"),
    Listener("MTLS", "SSL", "SSL"),
    Listener("LEGACY", "PLAINTEXT", None),
)


@dataclass(frozen=True)
class Traffic:
    """What the generated audit directory looks like (rates are per written line)."""

    nodes: int = 3
    days: int = 3
    principals: int = 160
    #: exponent of the Zipf law of the principals' volumes
    zipf: float = 1.1
    listeners: tuple[Listener, ...] = LISTENERS
    topics: int = 2000
    addresses: int = 600
    #: share of connections that are brute-force bursts of failed logins
    brute_force: float = 0.002
    #: share of connections refused as a whole
    refused_connections: float = 0.01
    malformed: float = 0.001
    blank: float = 0.0005
    #: a line written twice in the same file / re-published in a later file of the node
    duplicate_in_file: float = 0.001
    duplicate_across_files: float = 0.001
    #: forwarded requests whose intent (resp. outcome) is missing
    lost_intent: float = 0.001
    lost_outcome: float = 0.002
    #: audit.file.rotate.ms
    rotate_seconds: int = 3600
    #: days after 2026-11-21 the traffic starts (a later day's files)
    start_day: int = 0


@dataclass(frozen=True)
class Counts:
    """The written lines: good + malformed + blank + duplicates = lines."""

    records: int
    malformed: int
    duplicates: int
    blank: int = 0
    files: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Generator:
    def __init__(self, seed: int, traffic: Traffic | None = None) -> None:
        self.traffic = traffic or Traffic()
        t = self.traffic
        self.rng = random.Random(seed)
        rng = self.rng
        services = [f"User:svc-{name}" for name in ("orders", "billing", "gitops", "strimzi", "terraform", "platform")]
        people = [f"User:user{i:03d}" for i in range(max(0, t.principals - len(services)))]
        self.principals = (services + people)[: t.principals]
        weights = [1.0 / (rank**t.zipf) for rank in range(1, len(self.principals) + 1)]
        self.cumulative = list(itertools.accumulate(weights))
        self.addresses = [f"10.{i // 250}.{i % 250}.{rng.randint(1, 254)}" for i in range(t.addresses)]
        self.attackers = [f"203.0.113.{i}" for i in range(1, 40)]
        self.home = {p: rng.sample(self.addresses, 2) for p in self.principals}
        # each principal mostly uses one listener, some a second one
        self.listeners = {p: rng.sample(list(t.listeners), min(2, len(t.listeners))) for p in self.principals}
        self.topics = [f"{rng.choice(['orders', 'payments', 'clicks', 'logs', 'metrics', 'audit'])}-{i:04d}" for i in range(t.topics)]
        self.nodes = list(range(100, 100 + t.nodes))
        self.clock = START + timedelta(days=t.start_day)
        self.connection_seq = 0
        self.lost_intents = 0
        self.lost_outcomes = 0

    # ------------------------------------------------------------------ helpers

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _principal(self) -> str:
        return self.principals[bisect.bisect_left(self.cumulative, self.rng.random() * self.cumulative[-1])]

    def _tick(self, mean_ms: float) -> None:
        self.clock += timedelta(milliseconds=self.rng.expovariate(1.0 / max(mean_ms, 0.001)))

    def _record(self, node: int, subject: str | None, data: dict[str, Any], kind: str = "request") -> dict[str, Any]:
        return {
            "specversion": "1.0",
            "id": self._uuid(),
            "type": f"io.github.kafka-envelope-proxy.{kind}",
            "source": f"envelope-proxy/{node}",
            "time": _time(self.clock),
            "subject": subject,
            "datacontenttype": "application/json",
            "schemaversion": 2,
            "data": data,
        }

    def _base(self, conn: dict[str, Any], stage: str, method: str, api_key: int | None, principal: str | None) -> dict[str, Any]:
        listener: Listener = conn["listener"]
        client = conn["client"]
        return {
            "requestId": self._uuid(),
            "stage": stage,
            "methodName": method,
            "apiKey": api_key,
            "apiVersion": None if api_key is None else self.rng.randint(0, 7),
            "authenticationInfo": {
                "principal": principal,
                "mechanism": listener.mechanism if principal is not None else None,
                "listener": listener.name,
                "securityProtocol": listener.protocol,
            },
            "forwardingPrincipal": None,
            "requestMetadata": {
                "clientAddress": conn["address"],
                "clientPort": conn["port"],
                "clientId": None if api_key is None else client[0],
                "clientSoftwareName": None if api_key is None else client[1],
                "clientSoftwareVersion": None if api_key is None else client[2],
                "correlationId": None if api_key is None else self.rng.randint(1, 100_000),
                "connectionId": conn["id"],
            },
            "resources": [],
            "authorizationInfo": None,
            "result": None,
            "timings": None,
            "upstream": None,
        }

    def _connection_event(self, conn: dict[str, Any], stage: str, principal: str | None) -> dict[str, Any]:
        data = self._base(conn, stage, "kafka.Connection", None, principal)
        data["connection"] = {"cause": None, "durationMs": None, "requests": None}
        return data

    def _timings(self, upstream: float) -> dict[str, float]:
        queue = round(self.rng.random() * 0.2, 3)
        return {"queueMs": queue, "upstreamMs": upstream, "totalMs": round(upstream + queue + self.rng.random() * 0.5, 3)}

    # ------------------------------------------------------------------ requests

    def _forwarded(self, conn: dict[str, Any], principal: str) -> Iterator[dict[str, Any]]:
        method, api_key, operation, rtype, _, most = self.rng.choices(FORWARDED, weights=[f[4] for f in FORWARDED])[0]
        if rtype == "CLUSTER":
            names = ["kafka-cluster"]
        else:
            names = self.rng.sample(self.topics, self.rng.randint(1, most))
        resources = [{"type": rtype, "name": n, "patternType": "LITERAL", "operation": operation} for n in names]
        subject = f"{rtype.lower()}:{names[0]}"
        data = self._base(conn, "intent", method, api_key, principal)
        data["forwardingPrincipal"] = PROXY_IDENTITY
        data["resources"] = resources
        controller = self.rng.choice((1, 2, 3))
        data["upstream"] = {"address": f"10.9.0.{controller}:9093", "nodeId": controller, "attempts": 1, "controllers": [controller]}
        intent = self._record(conn["node"], subject, data)
        if self.rng.random() < self.traffic.lost_intent:
            self.lost_intents += 1
        else:
            yield intent
        upstream = round(self.rng.lognormvariate(1.2, 0.8), 3)
        self._tick(upstream)
        if self.rng.random() < self.traffic.lost_outcome:
            self.lost_outcomes += 1
            return
        outcome = {**data, "stage": "outcome"}
        roll = self.rng.random()
        denied_top = principal.startswith("User:user1") and rtype == "CLUSTER"
        errors: list[dict[str, Any]] = []
        status, top, envelope = "SUCCESS", 0, 0
        if denied_top or roll < 0.03:
            code, name = AUTHZ_ERRORS[rtype]
            if rtype == "CLUSTER":
                status, top = "FAILURE", 0
                errors = [{"resource": "kafka-cluster", "errorCode": code, "errorName": name, "message": "Authorization failed."}]
            else:
                status = "FAILURE"
                denied = names[: self.rng.randint(1, len(names))]
                errors = [{"resource": n, "errorCode": code, "errorName": name, "message": "Authorization failed."} for n in denied]
        elif roll < 0.10:
            status = "FAILURE"
            code, name = self.rng.choice(RESOURCE_ERRORS)
            errors = [{"resource": names[-1], "errorCode": code, "errorName": name, "message": f"{name.lower()}"}]
        elif roll < 0.11:
            status, top, envelope = "ERROR", 7, 0  # REQUEST_TIMED_OUT from the upstream link
        outcome["result"] = {"status": status, "envelopeErrorCode": envelope, "errorCode": top, "errors": errors}
        outcome["timings"] = self._timings(upstream)
        yield self._record(conn["node"], subject, outcome)

    def _read(self, conn: dict[str, Any], principal: str) -> dict[str, Any]:
        method, api_key, operation = self.rng.choice(READS)
        names = self.rng.sample(self.topics, self.rng.randint(1, 4))
        resources = [{"type": "TOPIC", "name": n, "patternType": "LITERAL", "operation": operation} for n in names]
        data = self._base(conn, "read", method, api_key, principal)
        data["resources"] = resources
        denied = [r for r in resources if self.rng.random() < 0.04]
        data["authorizationInfo"] = {"decision": "ALLOWED", "reason": "edge-authorizer", "denied": denied}
        errors = [{"resource": r["name"], "errorCode": 29, "errorName": "TOPIC_AUTHORIZATION_FAILED", "message": "denied"} for r in denied]
        data["result"] = {"status": "FAILURE" if errors else "SUCCESS", "envelopeErrorCode": 0, "errorCode": 0, "errors": errors}
        data["timings"] = self._timings(round(self.rng.lognormvariate(0.5, 0.5), 3))
        return self._record(conn["node"], f"topic:{names[0]}", data)

    def _local(self, conn: dict[str, Any], principal: str | None) -> dict[str, Any]:
        method, api_key = self.rng.choice(LOCAL)
        data = self._base(conn, "local", method, api_key, principal)
        data["result"] = {"status": "SUCCESS", "envelopeErrorCode": None, "errorCode": 0, "errors": []}
        data["timings"] = {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": round(0.02 + self.rng.random() * 0.1, 3)}
        return self._record(conn["node"], None, data)

    def _refused_request(self, conn: dict[str, Any], principal: str | None) -> dict[str, Any]:
        method, api_key = self.rng.choice((("kafka.Envelope", 58), ("kafka.Produce", 0), ("kafka.Unknown", 999)))
        data = self._base(conn, "refused", method, api_key, principal)
        data["authorizationInfo"] = {"decision": "DENIED", "reason": "protocol-error", "detail": f"{method} is not served"}
        data["result"] = {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": INVALID_REQUEST, "errors": []}
        data["timings"] = {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.0}
        return self._record(conn["node"], None, data)

    # ------------------------------------------------------------------ connections

    def _connection(self, principal: str, address: str | None = None, listener: Listener | None = None) -> dict[str, Any]:
        self.connection_seq += 1
        chosen = listener or (self.listeners[principal][0] if self.rng.random() < 0.9 else self.listeners[principal][-1])
        if address is None:
            address = self.rng.choice(self.home[principal]) if self.rng.random() < 0.97 else self.rng.choice(self.addresses)
        return {
            "node": self.rng.choice(self.nodes),
            "listener": chosen,
            "address": address,
            "port": self.rng.randint(32768, 60999),
            "id": f"{chosen.name}-{self.connection_seq}",
            "client": self.rng.choice(CLIENTS),
            "opened": self.clock,
        }

    def _disconnected(self, conn: dict[str, Any], principal: str | None, cause: str, requests: int) -> dict[str, Any]:
        data = self._connection_event(conn, "disconnected", principal)
        data["connection"] = {
            "cause": cause,
            "durationMs": round((self.clock - conn["opened"]).total_seconds() * 1000, 3),
            "requests": requests,
        }
        return self._record(conn["node"], None, data, kind="connection")

    def session(self, mean_gap_ms: float) -> Iterator[dict[str, Any]]:
        """One client connection from accept to close."""
        principal = self._principal()
        conn = self._connection(principal)
        listener: Listener = conn["listener"]
        who = "User:ANONYMOUS" if listener.protocol == "PLAINTEXT" else principal
        yield self._record(conn["node"], None, self._connection_event(conn, "connected", None), kind="connection")
        if listener.protocol != "PLAINTEXT":
            self._tick(5)
            yield self._record(conn["node"], None, self._connection_event(conn, "authenticated", who), kind="connection")
        count = 0
        for _ in range(self.rng.choice((1, 1, 2, 3, 4, 6, 10))):
            self._tick(mean_gap_ms)
            roll = self.rng.random()
            if roll < 0.25:
                yield self._local(conn, who)
            elif roll < 0.40:
                yield self._read(conn, who)
            elif roll < 0.405:
                yield self._refused_request(conn, who)
                count += 1
                self._tick(1)
                yield self._disconnected(conn, who, "protocol-error", count)
                return
            else:
                yield from self._forwarded(conn, who)
            count += 1
        self._tick(mean_gap_ms)
        cause = self.rng.choices([c for c, _ in DISCONNECT_CAUSES], weights=[w for _, w in DISCONNECT_CAUSES])[0]
        yield self._disconnected(conn, who, cause, count)

    def brute_force(self) -> Iterator[dict[str, Any]]:
        """Failed logins from one address, a few hundred milliseconds apart."""
        address = self.rng.choice(self.attackers)
        listener = self.rng.choice([li for li in self.traffic.listeners if li.mechanism not in (None, "SSL")] or list(self.traffic.listeners))
        target = self.rng.choice(("User:admin", "User:root", "User:kafka", self._principal()))
        for _ in range(self.rng.randint(15, 120)):
            self._tick(300)
            conn = self._connection(target, address, listener)
            yield self._record(conn["node"], None, self._connection_event(conn, "connected", None), kind="connection")
            data = self._connection_event(conn, "authentication-failed", target)
            mechanism_refused = self.rng.random() < 0.05
            code = UNSUPPORTED_MECHANISM if mechanism_refused else SASL_FAILED
            data["result"] = {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": code, "errors": []}
            data["authorizationInfo"] = {
                "decision": "DENIED",
                "reason": "authentication-failed",
                "detail": "Authentication failed: Invalid username or password",
            }
            self._tick(2)
            yield self._record(conn["node"], None, data, kind="connection")
            yield self._disconnected(conn, None, "authentication-failed", 0)

    def refused_connection(self) -> dict[str, Any]:
        reason = self.rng.choice(REFUSAL_REASONS)
        principal = self._principal()
        conn = self._connection(principal, self.rng.choice(self.attackers + self.addresses))
        accept_time = reason != "protocol-error"
        if accept_time:
            conn["id"] = None
        data = self._connection_event(conn, "refused", None)
        data["requestMetadata"]["connectionId"] = conn["id"]
        data["authorizationInfo"] = {"decision": "DENIED", "reason": reason, "detail": f"refused: {reason}"}
        data["result"] = {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": None, "errors": []}
        data["timings"] = {"queueMs": 0.0, "upstreamMs": 0.0, "totalMs": 0.0}
        return self._record(conn["node"], None, data, kind="connection")

    def records(self, total: int) -> Iterator[dict[str, Any]]:
        """Exactly ``total`` records, in time order, spread over ``traffic.days`` days."""
        t = self.traffic
        # the clock ticks about once per 1.5 records (an intent and its outcome share a tick)
        span_ms = t.days * 86_400_000
        mean_gap_ms = 1.5 * span_ms / max(total, 1)
        produced = 0
        while produced < total:
            roll = self.rng.random()
            if roll < t.brute_force:
                batch: Iterator[dict[str, Any]] = self.brute_force()
            elif roll < t.brute_force + t.refused_connections:
                self._tick(mean_gap_ms)
                batch = iter([self.refused_connection()])
            else:
                self._tick(mean_gap_ms)
                batch = self.session(mean_gap_ms)
            for record in batch:
                if produced >= total:
                    return
                produced += 1
                yield record


def _malformed(rng: random.Random, line: str, record: dict[str, Any]) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return line[: len(line) // 2]  # a torn line
    broken = json.loads(line)
    if kind == 1:
        broken["schemaversion"] = "two"  # a string where the schema has an integer
    elif kind == 2:
        del broken["id"]
    else:
        broken["schemaversion"] = 9
    return json.dumps(broken, separators=(",", ":"))


class _Files:
    """One open file per node, rotated when a record's hour differs from the file's."""

    def __init__(self, directory: Path, rotate_seconds: int) -> None:
        self.directory = directory
        self.rotate = rotate_seconds
        self.open: dict[str, tuple[int, Any]] = {}
        self.previous: dict[str, list[str]] = {}
        self.recent: dict[str, list[str]] = {}
        self.seq = 0
        self.count = 0

    def handle(self, node: str, time: str) -> Any:
        moment = datetime.fromisoformat(time.replace("Z", "+00:00"))
        slot = int(moment.timestamp()) // self.rotate
        current = self.open.get(node)
        if current is not None and current[0] == slot:
            return current[1]
        if current is not None:
            current[1].close()
            self.previous[node] = self.recent.get(node, [])
            self.recent[node] = []
        self.seq += 1
        self.count += 1
        stamp = datetime.fromtimestamp(slot * self.rotate, UTC).strftime("%Y%m%dT%H%M%SZ")
        handle = (self.directory / f"audit-{node}-{stamp}-{self.seq:06d}.jsonl").open("w", encoding="utf-8")
        self.open[node] = (slot, handle)
        return handle

    def close(self) -> None:
        for _, handle in self.open.values():
            handle.close()


def write(directory: Path, total: int, *, seed: int = 7, traffic: Traffic | None = None) -> Counts:
    """Write ``total`` lines into hourly files per node in ``directory``, edge cases included."""
    t = traffic or Traffic()
    directory.mkdir(parents=True, exist_ok=True)
    generator = Generator(seed, t)
    rng = random.Random(seed + 1)
    files = _Files(directory, t.rotate_seconds)
    malformed = duplicates = good = blank = 0
    written = 0
    records = generator.records(total)
    try:
        while written < total:
            roll = rng.random()
            record = next(records, None)
            if record is None:
                break
            node = record["source"].rsplit("/", 1)[1]
            handle = files.handle(node, record["time"])
            line = json.dumps(record, separators=(",", ":"))
            recent = files.recent.setdefault(node, [])
            previous = files.previous.get(node) or []
            if roll < t.malformed:
                handle.write(_malformed(rng, line, record) + "\n")
                malformed += 1
                written += 1
                continue  # the record itself was never written whole: nothing may duplicate it
            # A blank line or a duplicate comes before the record's own line.
            before: str | None = None
            if roll < t.malformed + t.blank:
                before = ""
                blank += 1
            elif roll < t.malformed + t.blank + t.duplicate_in_file and recent:
                before = rng.choice(recent)
                duplicates += 1
            elif roll < t.malformed + t.blank + t.duplicate_in_file + t.duplicate_across_files and previous:
                before = rng.choice(previous)  # a restarted proxy publishing again what an earlier file of the node holds
                duplicates += 1
            if before is not None:
                handle.write(before + "\n")
                written += 1
                if written >= total:
                    break
            handle.write(line + "\n")
            good += 1
            written += 1
            if len(recent) < 200:
                recent.append(line)
            else:
                recent[rng.randrange(200)] = line
    finally:
        files.close()
    return Counts(
        records=good,
        malformed=malformed,
        duplicates=duplicates,
        blank=blank,
        files=files.count,
        extra={"lost_intents": generator.lost_intents, "lost_outcomes": generator.lost_outcomes},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Write realistic audit files (docs/audit-schema.md) into a directory.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--records", type=int, default=1_000_000, help="lines to write (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=Traffic.days)
    parser.add_argument("--nodes", type=int, default=Traffic.nodes)
    parser.add_argument("--principals", type=int, default=Traffic.principals)
    parser.add_argument("--start-day", type=int, default=0, help="days after 2026-11-21 the traffic starts (for a later day's files)")
    args = parser.parse_args()
    traffic = Traffic(days=args.days, nodes=args.nodes, principals=args.principals, start_day=args.start_day)
    counts = write(args.directory, args.records, seed=args.seed, traffic=traffic)
    print(json.dumps({"lines": args.records, **counts.__dict__}))


if __name__ == "__main__":
    main()
