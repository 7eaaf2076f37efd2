"""Version 4 records behind a load balancer: the reports name the client, never the load balancer.

`requestMetadata.clientAddress` is the client the load balancer's PROXY protocol header named and `proxiedBy` the
load balancer; the job carries `proxiedBy` and reads none of it into a report, so a principal's first-seen
address is where the principal is, even when every connection arrived from the same load balancer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_audit import identity_reports
from spark_audit.read import parse, records_of
from tests.spark_audit.records import request
from tests.spark_audit.scenario import BASELINE, flat_of

pytestmark = pytest.mark.spark

LOAD_BALANCER = "10.0.0.1"


def behind(record: dict[str, Any], client: str, port: int) -> dict[str, Any]:
    record["schemaversion"] = 4
    metadata = record["data"]["requestMetadata"]
    metadata.update(
        clientAddress=client,
        clientPort=port,
        proxiedBy={"address": LOAD_BALANCER, "port": 51000 + port % 100, "version": 2, "command": "PROXY", "authority": "kafka.example", "tls": None},
    )
    return record


def test_first_seen_and_forwarding_reports_name_the_client_behind_the_load_balancer(spark: SparkSession) -> None:
    records = [
        behind(request(1, "2026-11-21T10:00:01.000Z", "a", "intent", client="ignored", version=4), "192.0.2.7", 40001),
        behind(request(2, "2026-11-21T10:00:01.100Z", "a", "outcome", status="SUCCESS", client="ignored", version=4), "192.0.2.7", 40001),
        behind(request(3, "2026-11-21T10:00:02.000Z", "b", "intent", principal="User:bob", client="ignored", version=4), "2001:db8::9", 40002),
    ]
    flat = flat_of(spark, records)
    pairs = {(row["principal"], row["clientAddress"]) for row in identity_reports.first_seen_pairs(flat, BASELINE).collect()}
    assert pairs == {("User:alice", "192.0.2.7"), ("User:bob", "2001:db8::9")}
    assert LOAD_BALANCER not in {row["clientAddress"] for row in flat.collect()}
    # the load balancer is carried in the records, for a reader who asks
    lines = spark.createDataFrame([(json.dumps(r), "test") for r in records], "value string, origin string")
    carried = records_of(parse(lines)).select("data.requestMetadata.proxiedBy.address", "data.requestMetadata.proxiedBy.version").distinct().collect()
    assert [tuple(row) for row in carried] == [(LOAD_BALANCER, 2)]
