"""The benchmark's synthetic audit records, one connection at a time: what :class:`Generator` yields, in time order,
for the traffic :mod:`audit_traffic` describes (docs/audit-schema.md, version 2). Deterministic for a given seed."""

from __future__ import annotations

import bisect
import itertools
import random
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from audit_traffic import (
    AUTHZ_ERRORS,
    CLIENTS,
    DISCONNECT_CAUSES,
    FORWARDED,
    INVALID_REQUEST,
    LOCAL,
    PROXY_IDENTITY,
    READS,
    REFUSAL_REASONS,
    REFUSED,
    REQUEST_TIMED_OUT,
    RESOURCE_ERRORS,
    SASL_FAILED,
    START,
    UNSUPPORTED_MECHANISM,
    Listener,
    Traffic,
)


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
        #: each node's proxy process, as the proxy names it in `source` (pid and a random part): a later day's files
        #: (start_day) are a later process's, whose hash chain starts again
        self.instance = f"{1000 + t.start_day}-{seed & 0xFFFFFFFF:08x}"
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
            "source": f"envelope-proxy/{node}/{self.instance}",
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
            status, top, envelope = "ERROR", REQUEST_TIMED_OUT, 0  # from the upstream link
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
        code, name = AUTHZ_ERRORS["TOPIC"]
        errors = [{"resource": r["name"], "errorCode": code, "errorName": name, "message": "denied"} for r in denied]
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
        method, api_key = self.rng.choice(REFUSED)
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

