"""Each report on the hand-made scenario (tests/spark_audit/scenario.py)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import date

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_audit import denial_reports, identity_reports, request_reports
from spark_audit.options import parse_instant
from tests.spark_audit.records import err, request, resource, rid, ts
from tests.spark_audit.scenario import BASELINE, RECORDS, flat_of

pytestmark = pytest.mark.spark

D = date(2026, 11, 21)


@pytest.fixture(scope="module")
def flat(spark: SparkSession) -> Iterator[DataFrame]:
    # a malformed line and a record written twice must not change any report
    frame = flat_of(spark, [*RECORDS, "garbage {", RECORDS[4], RECORDS[16]]).cache()
    yield frame
    frame.unpersist()


def t(clock: str, day: str = "2026-11-21") -> object:
    return ts(f"{day}T{clock}Z")


def test_requests_counts_each_request_once(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [
            ("User:alice", "kafka.CreateAcls", "SUCCESS", 1),
            ("User:alice", "kafka.CreateTopics", "SUCCESS", 4),
            ("User:bob", "kafka.AlterConfigs", "FAILURE", 1),
            ("User:bob", "kafka.CreateTopics", "FAILURE", 2),
            ("User:bob", "kafka.CreateTopics", "SUCCESS", 1),
            ("User:carol", "kafka.CreateTopics", "NO_OUTCOME", 1),
            ("User:mallory", "kafka.Envelope", "REFUSED", 1),
        ],
        "principal string, method string, status string, count long",
    )
    assertDataFrameEqual(request_reports.requests_by_principal_method_outcome(flat), expected, checkRowOrder=True)


def test_who_did_what_per_bucket_and_resource(spark: SparkSession, flat: DataFrame) -> None:
    day19, day21 = ts("2026-11-19T00:00:00Z"), ts("2026-11-21T00:00:00Z")
    expected = spark.createDataFrame(
        [
            (day19, date(2026, 11, 19), "User:alice", "kafka.CreateTopics", "topic:orders", "CREATE", 1, 0),
            (day19, date(2026, 11, 19), "User:bob", "kafka.CreateTopics", "topic:orders", "CREATE", 1, 0),
            (day21, D, "User:alice", "kafka.CreateAcls", "topic:orders", "ALTER", 1, 0),
            (day21, D, "User:alice", "kafka.CreateTopics", "topic:orders", "CREATE", 3, 0),
            (day21, D, "User:bob", "kafka.AlterConfigs", "cluster:kafka-cluster", "ALTER_CONFIGS", 1, 1),
            (day21, D, "User:bob", "kafka.CreateTopics", "topic:orders", "CREATE", 2, 0),
            (day21, D, "User:bob", "kafka.CreateTopics", "topic:pay", "CREATE", 1, 1),
            (day21, D, "User:carol", "kafka.CreateTopics", "topic:orders", "CREATE", 1, 0),
            (day21, D, "User:mallory", "kafka.Envelope", "(none)", None, 1, 1),
        ],
        "bucket timestamp, date date, principal string, method string, resource string, operation string, requests long, denied long",
    )
    assertDataFrameEqual(request_reports.who_did_what(flat, bucket="1 day"), expected, checkRowOrder=True)


def test_denials_list_requests_and_connections(spark: SparkSession, flat: DataFrame) -> None:
    auth_failed = "SASL_AUTHENTICATION_FAILED"
    expected = spark.createDataFrame(
        [
            (
                t("10:00:04"),
                "User:bob",
                "127.0.0.2",
                "kafka.AlterConfigs",
                "cluster:kafka-cluster",
                31,
                "CLUSTER_AUTHORIZATION_FAILED",
                "FAILURE",
            ),
            (t("10:00:05"), "User:bob", "127.0.0.2", "kafka.CreateTopics", "topic:orders", 29, "TOPIC_AUTHORIZATION_FAILED", "FAILURE"),
            (t("10:00:06"), "User:mallory", "10.0.0.9", "kafka.Envelope", None, 42, "INVALID_REQUEST", "REFUSED"),
            (t("10:01:00"), "User:mallory", "10.0.0.9", "kafka.Connection", None, 58, auth_failed, "REFUSED"),
            (t("10:01:05"), "User:mallory", "10.0.0.9", "kafka.Connection", None, 58, auth_failed, "REFUSED"),
            (t("10:01:09"), "User:mallory", "10.0.0.9", "kafka.Connection", None, 58, auth_failed, "REFUSED"),
            (t("10:02:00"), None, "10.0.0.66", "kafka.Connection", None, None, None, "REFUSED"),
        ],
        "time timestamp, principal string, clientAddress string, method string, subject string, errorCode int, errorName string, status string",
    )
    # each denial's date is its time's: the report is partitioned by it
    assertDataFrameEqual(denial_reports.denials(flat), expected.withColumn("date", F.to_date("time")).select("time", "date", *expected.columns[1:]), checkRowOrder=True)


def test_denial_ranking_by_principal_address_and_resource(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [
            ("address", "10.0.0.9", 4, t("10:00:06"), t("10:01:09"), 1),
            ("address", "127.0.0.2", 2, t("10:00:04"), t("10:00:05"), 2),
            ("address", "10.0.0.66", 1, t("10:02:00"), t("10:02:00"), 3),
            ("principal", "User:mallory", 4, t("10:00:06"), t("10:01:09"), 1),
            ("principal", "User:bob", 2, t("10:00:04"), t("10:00:05"), 2),
            ("principal", "(unauthenticated)", 1, t("10:02:00"), t("10:02:00"), 3),
            ("resource", "(connection)", 4, t("10:01:00"), t("10:02:00"), 1),
            ("resource", "(none)", 1, t("10:00:06"), t("10:00:06"), 2),
            ("resource", "cluster:kafka-cluster", 1, t("10:00:04"), t("10:00:04"), 3),
            ("resource", "topic:pay", 1, t("10:00:05"), t("10:00:05"), 4),
        ],
        "dimension string, key string, denials long, first timestamp, last timestamp, rank int",
    )
    assertDataFrameEqual(denial_reports.denial_ranking(flat), expected, checkRowOrder=True)


def test_bursts_need_the_threshold_within_the_window(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [("10.0.0.9", "authentication-failure", t("10:01:00"), t("10:01:09"), D, 3, 3, ["User:mallory"])],
        "clientAddress string, kind string, start timestamp, end timestamp, date date, events long, peak long, principals array<string>",
    )
    assertDataFrameEqual(denial_reports.bursts(flat, window_seconds=60, threshold=3), expected)
    assert denial_reports.bursts(flat, window_seconds=60, threshold=4).count() == 0
    # 10:01:00 and 10:01:09 are 9 s apart: with a 5 s window no three fall together
    assert denial_reports.bursts(flat, window_seconds=5, threshold=3).count() == 0


def test_sensitive_changes_with_category_and_outcome(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [
            (
                t("10:00:04"),
                D,
                "config",
                "kafka.AlterConfigs",
                "User:bob",
                "127.0.0.2",
                "CLIENT",
                "User:proxy",
                "cluster:kafka-cluster ALTER_CONFIGS",
                "FAILURE",
                31,
                True,
                rid("r6"),
            ),
            (
                t("10:00:08"),
                D,
                "acl",
                "kafka.CreateAcls",
                "User:alice",
                "127.0.0.1",
                "INTERNAL",
                "User:proxy",
                "topic:orders ALTER",
                "SUCCESS",
                0,
                False,
                rid("r8"),
            ),
        ],
        "time timestamp, date date, category string, method string, principal string, clientAddress string, listener string, "
        "forwardingPrincipal string, resources string, status string, errorCode int, denied boolean, requestId string",
    )
    assertDataFrameEqual(request_reports.sensitive_changes(flat), expected, checkRowOrder=True)


def test_impersonation_forwarder_by_principal(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [
            ("User:proxy", "User:alice", ["CLIENT", "INTERNAL"], 5, 0, ts("2026-11-19T09:00:00.010Z"), t("10:00:09")),
            ("User:proxy", "User:bob", ["CLIENT"], 4, 2, ts("2026-11-19T09:05:00Z"), t("10:00:05")),
            ("User:proxy", "User:carol", ["CLIENT"], 1, 0, t("10:00:02"), t("10:00:02")),
        ],
        "forwardingPrincipal string, principal string, listeners array<string>, requests long, denied long, first timestamp, last timestamp",
    )
    assertDataFrameEqual(identity_reports.impersonation(flat), expected, checkRowOrder=True)


def test_unusual_listener_against_the_principals_history(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [("User:alice", "INTERNAL", t("10:00:08"), t("10:00:08"), 1, ["CLIENT"])],
        "principal string, listener string, first timestamp, last timestamp, events long, baselineListeners array<string>",
    )
    assertDataFrameEqual(identity_reports.unusual_listeners(flat, BASELINE), expected, checkRowOrder=True)


def test_first_seen_pairs_against_the_baseline(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [
            ("User:carol", "127.0.0.1", t("10:00:02"), t("10:00:02"), 1, ["CLIENT"], D),
            ("User:mallory", "10.0.0.9", t("10:00:06"), t("10:01:09"), 4, ["CLIENT"], D),
            ("User:alice", "10.1.1.1", t("10:00:09"), t("10:00:09"), 1, ["CLIENT"], D),
        ],
        "principal string, clientAddress string, first timestamp, last timestamp, events long, listeners array<string>, date date",
    )
    assertDataFrameEqual(identity_reports.first_seen_pairs(flat, BASELINE), expected, checkRowOrder=True)
    # a baseline that ends later holds every pair of the day: nothing is new after it
    later = identity_reports.Baseline(None, parse_instant("2026-11-21T10:01:30Z"))
    assert identity_reports.first_seen_pairs(flat, later).count() == 0


def test_intents_without_outcome_leave_out_recent_ones(spark: SparkSession, flat: DataFrame) -> None:
    expected = spark.createDataFrame(
        [(rid("r3"), t("10:00:02"), D, "User:carol", "127.0.0.1", "CLIENT", "kafka.CreateTopics", "topic:orders", "topic:orders CREATE")],
        "requestId string, time timestamp, date date, principal string, clientAddress string, listener string, method string, subject string, resources string",
    )
    assertDataFrameEqual(request_reports.intents_without_outcome(flat, before_us=parse_instant("2026-11-21T10:01:00Z")), expected)
    assert request_reports.intents_without_outcome(flat, before_us=parse_instant("2026-11-21T10:00:01Z")).count() == 0


def test_latency_percentiles_per_api(spark: SparkSession) -> None:
    records = [
        request(n, "2026-11-21T10:00:00.000Z", f"c{n}", "outcome", status="SUCCESS", total_ms=float(n), upstream_ms=n - 0.5)
        for n in range(1, 101)
    ]
    # c1's outcome written twice (two ids): counted once
    records += [request(101, "2026-11-21T10:00:00.000Z", "c1", "outcome", status="SUCCESS", total_ms=1.0, upstream_ms=0.5)]
    records += [request(102, "2026-11-21T10:00:00.000Z", "c102", "intent")]
    records += [
        request(
            n, "2026-11-21T10:00:00.000Z", f"d{n}", "outcome", method="kafka.DeleteTopics", status="SUCCESS", total_ms=7.0, upstream_ms=6.5
        )
        for n in range(200, 204)
    ]
    flat = flat_of(spark, records)
    expected = spark.createDataFrame(
        [
            ("kafka.CreateTopics", 100, 50.0, 90.0, 99.0, 100.0, 49.5, 89.5, 98.5),
            ("kafka.DeleteTopics", 4, 7.0, 7.0, 7.0, 7.0, 6.5, 6.5, 6.5),
        ],
        "method string, requests long, totalP50 double, totalP90 double, totalP99 double, totalMax double, "
        "upstreamP50 double, upstreamP90 double, upstreamP99 double",
    )
    assertDataFrameEqual(request_reports.latency(flat), expected, checkRowOrder=True)


@pytest.mark.parametrize("dates", [1, 3])
def test_latency_beyond_the_sketch_size_is_within_its_rank_error(spark: SparkSession, dates: int) -> None:
    """More outcomes of a method than the KLL sketch keeps exactly: each percentile's rank is within the stated error of
    the exact one, from one sketch or from one per date merged (as an incremental run keeps them)."""
    n, k = 5 * request_reports.LATENCY_SKETCH_K, request_reports.LATENCY_SKETCH_K
    # the timings 0 .. n-1 in a scattered order (a multiplier prime to n), so the exact rank of a value is the value
    timing = ((F.col("id") * F.lit(7919)) % F.lit(n)).cast("double")
    flat = spark.range(n).select(
        F.lit(True).alias("isRequestRow"),
        F.lit("outcome").alias("stage"),
        F.lit("SUCCESS").alias("status"),
        F.lit("kafka.CreateTopics").alias("method"),
        (F.col("id") % F.lit(dates)).alias("date"),
        timing.alias("totalMs"),
        timing.alias("upstreamMs"),
    )
    sketches = request_reports.latency_sketches(flat, by=("date",))
    (row,) = request_reports.latency_of_sketches(sketches, merge=True).collect()
    assert row["requests"] == n and row["totalMax"] == n - 1
    # normalised rank error 2.296 / k^0.9723 (DataSketches' KLL), with room for the sketch's randomness
    bound = 2 * 2.296 / k**0.9723 * n
    for level, name in zip(request_reports.LATENCY_LEVELS, ("50", "90", "99"), strict=True):
        exact = math.ceil(level * n) - 1
        assert abs(row[f"totalP{name}"] - exact) <= bound and abs(row[f"upstreamP{name}"] - exact) <= bound, (name, row)


def test_a_resource_listed_twice_counts_once_per_request(spark: SparkSession) -> None:
    """CreateAcls with a LITERAL and a PREFIXED binding on one topic: one request on topic:orders, one denial of it."""
    bindings = [{**resource("orders", "ALTER"), "patternType": pattern} for pattern in ("LITERAL", "PREFIXED")]
    denied = [err(31, "CLUSTER_AUTHORIZATION_FAILED"), err(31, "CLUSTER_AUTHORIZATION_FAILED")]
    acls = {"method": "kafka.CreateAcls", "api_key": 30, "resources": bindings}
    flat = flat_of(
        spark,
        [
            request(1, "2026-11-21T10:00:00.000Z", "acls", "intent", **acls),
            request(2, "2026-11-21T10:00:00.100Z", "acls", "outcome", status="FAILURE", errors=denied, **acls),
        ],
    )

    who = request_reports.who_did_what(flat, bucket="1 day").select("resource", "operation", "requests", "denied").collect()
    ranking = denial_reports.denial_ranking(flat).filter("dimension = 'resource'").select("key", "denials").collect()

    assert [tuple(row) for row in who] == [("topic:orders", "ALTER", 1, 1)]
    assert [tuple(row) for row in ranking] == [("topic:orders", 1)]


def test_an_error_row_denies_only_a_resource_of_the_type_its_code_names(spark: SparkSession) -> None:
    """Found by an outside check: IncrementalAlterConfigs on a topic and a group both named orders, the group denied
    (GROUP_AUTHORIZATION_FAILED, by bare name): only group:orders is denied."""
    configs = {"method": "kafka.IncrementalAlterConfigs", "api_key": 44, "resources": [resource("orders", "ALTER_CONFIGS"), resource("orders", "ALTER_CONFIGS", "GROUP")]}
    flat = flat_of(
        spark,
        [
            request(1, "2026-11-21T10:00:00.000Z", "configs", "intent", **configs),
            request(2, "2026-11-21T10:00:00.100Z", "configs", "outcome", status="FAILURE", errors=[err(30, "GROUP_AUTHORIZATION_FAILED")], **configs),
        ],
    )

    who = request_reports.who_did_what(flat, bucket="1 day").select("resource", "requests", "denied").orderBy("resource").collect()
    ranking = denial_reports.denial_ranking(flat).filter("dimension = 'resource'").select("key", "denials").collect()

    assert [tuple(row) for row in who] == [("group:orders", 1, 1), ("topic:orders", 1, 0)]
    assert [tuple(row) for row in ranking] == [("group:orders", 1)]


def test_the_resources_text_tells_a_prefixed_binding_from_a_literal_one(spark: SparkSession) -> None:
    """Found by an outside check: a LITERAL and a PREFIXED ACL on one topic both read topic:orders ALTER."""
    bindings = [{**resource("orders", "ALTER"), "patternType": pattern} for pattern in ("LITERAL", "PREFIXED")]
    acls = {"method": "kafka.CreateAcls", "api_key": 30, "resources": bindings}
    flat = flat_of(spark, [request(1, "2026-11-21T10:00:00.000Z", "acls", "intent", **acls), request(2, "2026-11-21T10:00:00.100Z", "acls", "outcome", **acls)])

    (row,) = request_reports.sensitive_changes(flat).select("resources").collect()

    assert row[0] == "topic:orders ALTER, topic:orders ALTER (PREFIXED)"
