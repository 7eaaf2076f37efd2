"""One hand-made day of audit records that every report has something to say about.

A baseline two days earlier (alice and bob at their usual addresses on CLIENT),
then on 2026-11-21: successes, a duplicated outcome, an intent without outcome,
per-resource and cluster denials, a refused request, an ACL change over an
unusual listener, alice from a new address, a burst of authentication failures
and an IP-filtered connection.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_audit.identity_reports import Baseline
from spark_audit.options import parse_instant
from spark_audit.read import deduplicate, parse, records_of
from spark_audit.view import flatten
from tests.spark_audit.records import connection, err, request, resource

CLUSTER = {"type": "CLUSTER", "name": "kafka-cluster", "patternType": "LITERAL", "operation": "ALTER_CONFIGS"}

RECORDS: list[dict[str, Any]] = [
    # baseline
    request(1, "2026-11-19T09:00:00.000Z", "b1", "intent"),
    request(2, "2026-11-19T09:00:00.010Z", "b1", "outcome", status="SUCCESS"),
    request(3, "2026-11-19T09:05:00.000Z", "b2", "outcome", status="SUCCESS", principal="User:bob", client="127.0.0.2"),
    # the day
    request(4, "2026-11-21T10:00:00.000Z", "r1", "intent"),
    request(5, "2026-11-21T10:00:00.010Z", "r1", "outcome", status="SUCCESS"),
    request(6, "2026-11-21T10:00:01.000Z", "r2", "outcome", status="SUCCESS"),
    request(7, "2026-11-21T10:00:01.000Z", "r2", "outcome", status="SUCCESS"),  # same outcome under a second id
    request(8, "2026-11-21T10:00:02.000Z", "r3", "intent", principal="User:carol"),
    request(
        9,
        "2026-11-21T10:00:03.000Z",
        "r4",
        "outcome",
        principal="User:bob",
        client="127.0.0.2",
        status="FAILURE",
        errors=[err(36, "TOPIC_ALREADY_EXISTS")],
    ),
    request(
        10,
        "2026-11-21T10:00:05.000Z",
        "r5",
        "outcome",
        principal="User:bob",
        client="127.0.0.2",
        resources=[resource("orders"), resource("pay")],
        status="FAILURE",
        errors=[err(36, "TOPIC_ALREADY_EXISTS"), err(29, "TOPIC_AUTHORIZATION_FAILED", "pay")],
    ),
    request(
        11,
        "2026-11-21T10:00:04.000Z",
        "r6",
        "outcome",
        principal="User:bob",
        client="127.0.0.2",
        method="kafka.AlterConfigs",
        api_key=33,
        subject="cluster:kafka-cluster",
        resources=[CLUSTER],
        status="FAILURE",
        error_code=31,
    ),
    request(
        12,
        "2026-11-21T10:00:06.000Z",
        "r7",
        "refused",
        principal="User:mallory",
        method="kafka.Envelope",
        api_key=58,
        subject=None,
        resources=[],
        status="REFUSED",
        error_code=42,
        client="10.0.0.9",
        forwarding=None,
        decision={"decision": "DENIED", "reason": "Envelope is not accepted from clients"},
    ),
    request(
        13,
        "2026-11-21T10:00:08.000Z",
        "r8",
        "outcome",
        method="kafka.CreateAcls",
        api_key=30,
        listener="INTERNAL",
        resources=[resource("orders", "ALTER")],
        status="SUCCESS",
    ),
    request(14, "2026-11-21T10:00:09.000Z", "r9", "outcome", client="10.1.1.1", status="SUCCESS"),
    connection(15, "2026-11-21T10:01:00.000Z", "authentication-failed", principal="User:mallory"),
    connection(16, "2026-11-21T10:01:05.000Z", "authentication-failed", principal="User:mallory"),
    connection(17, "2026-11-21T10:01:09.000Z", "authentication-failed", principal="User:mallory"),
    connection(18, "2026-11-21T10:02:00.000Z", "refused", mechanism=None, client="10.0.0.66", reason="ip-filter"),
    connection(19, "2026-11-21T10:00:00.000Z", "authenticated", principal="User:alice", client="127.0.0.1"),
]

BASELINE = Baseline(start_us=None, end_us=parse_instant("2026-11-20T00:00:00Z"))


def flat_of(spark: SparkSession, records: Sequence[dict[str, Any] | str]) -> DataFrame:
    """The flat view of ``records`` as the job builds it (parsed, de-duplicated)."""
    lines = [(r if isinstance(r, str) else json.dumps(r), "test") for r in records]
    raw = spark.createDataFrame(lines, "value string, origin string")
    return flatten(deduplicate(records_of(parse(raw))))
