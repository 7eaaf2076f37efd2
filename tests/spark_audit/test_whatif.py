"""Authorizer what-if replay: the ACL file, the candidate, and re-deciding history in Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from authz import AclBinding, Operation, PatternType, PermissionType, ResourceType
from authz.acl_file import AclFileError, load_acl_file
from spark_audit.whatif import Candidate, WhatIfError, actions_for, replay
from tests.spark_audit.records import acl, connection, err, request, resource, rid, ts, write_jsonl
from tests.spark_audit.scenario import flat_of

HERE = Path(__file__).resolve().parent
D = "2026-11-21"

CHANGE_SCHEMA = (
    "time timestamp, date date, requestId string, principal string, clientAddress string, listener string, forwardingPrincipal string, "
    "method string, resourceType string, resourceName string, operation string, old string, new string, error string"
)

HISTORY: list[dict[str, Any]] = [
    request(1, f"{D}T10:00:01.000Z", "w1", "outcome", status="SUCCESS"),
    request(
        2,
        f"{D}T10:00:02.000Z",
        "w2",
        "outcome",
        principal="User:bob",
        resources=[resource("pay")],
        status="FAILURE",
        errors=[err(29, "TOPIC_AUTHORIZATION_FAILED", "pay")],
    ),
    request(
        3,
        f"{D}T10:00:03.000Z",
        "w3",
        "outcome",
        method="kafka.CreateAcls",
        api_key=30,
        resources=[resource("orders", "ALTER")],
        status="SUCCESS",
    ),
    request(
        4,
        f"{D}T10:00:04.000Z",
        "w4",
        "outcome",
        principal="User:bob",
        method="kafka.CreateAcls",
        api_key=30,
        resources=[resource("orders", "ALTER")],
        status="FAILURE",
        errors=[err(31, "CLUSTER_AUTHORIZATION_FAILED", "acl")],
    ),
    request(
        5,
        f"{D}T10:00:05.000Z",
        "w5",
        "outcome",
        method="kafka.AlterConfigs",
        api_key=33,
        resources=[resource("orders", "ALTER_CONFIGS")],
        status="SUCCESS",
    ),
    request(6, f"{D}T10:00:06.000Z", "w6", "intent"),
    request(
        7,
        f"{D}T10:00:07.000Z",
        "w7",
        "refused",
        method="kafka.Envelope",
        resources=[],
        status="REFUSED",
        error_code=42,
        decision={"decision": "DENIED", "reason": "Envelope is not accepted from clients"},
    ),
    request(8, f"{D}T10:00:08.000Z", "w8", "outcome", status="ERROR", error_code=7, errors=[err(7, "REQUEST_TIMED_OUT")]),
    request(
        9,
        f"{D}T10:00:09.000Z",
        "w9",
        "read",
        principal="User:carol",
        method="kafka.DescribeConfigs",
        api_key=32,
        resources=[resource("orders", "DESCRIBE_CONFIGS")],
        forwarding=None,
        status="FAILURE",
        errors=[err(29, "TOPIC_AUTHORIZATION_FAILED")],
    ),
    connection(10, f"{D}T10:00:10.000Z", "authentication-failed", principal="User:eve"),
    request(11, f"{D}T10:00:11.000Z", "w11", "outcome", principal="User:broken", status="SUCCESS"),
]


# --------------------------------------------------------------------------- the ACL file


def test_acl_file_json_lines_with_comments_and_kafka_spellings(tmp_path: Path) -> None:
    path = tmp_path / "acls.jsonl"
    path.write_text(
        "# candidate ACLs\n\n"
        + json.dumps({"principal": "User:alice", "operation": "AlterConfigs", "resourceType": "Topic", "resourceName": "orders"})
        + "\n"
        + json.dumps(
            {
                "principal": "User:bob",
                "operation": "CREATE",
                "resourceType": "BROKER",
                "resourceName": "kafka-cluster",
                "permission": "Deny",
                "host": "10.0.0.1",
            }
        )
        + "\n"
        + json.dumps(
            {
                "principal": "User:*",
                "operation": "read",
                "resourceType": "transactional-id",
                "resourceName": "tx-",
                "patternType": "Prefixed",
            }
        )
        + "\n"
    )
    assert load_acl_file(path) == [
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", Operation.ALTER_CONFIGS, PermissionType.ALLOW),
        AclBinding(
            ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:bob", "10.0.0.1", Operation.CREATE, PermissionType.DENY
        ),
        AclBinding(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED, "User:*", "*", Operation.READ, PermissionType.ALLOW),
    ]


def test_acl_file_array_and_controller_metadata(tmp_path: Path) -> None:
    one = acl("User:alice", "CREATE", "CLUSTER", "kafka-cluster")
    (tmp_path / "array.json").write_text(json.dumps([one]))
    (tmp_path / "metadata.json").write_text(json.dumps({"version": 2, "topics": {}, "acls": [{**one, "host": "*", "permission": "ALLOW"}]}))
    expected = [
        AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:alice", "*", Operation.CREATE, PermissionType.ALLOW)
    ]
    assert load_acl_file(tmp_path / "array.json") == expected
    assert load_acl_file(tmp_path / "metadata.json") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"principal": "User:a"', "line 1: not JSON"),
        (
            "# c\n" + json.dumps({"principal": "User:a", "operation": "FLY", "resourceType": "TOPIC", "resourceName": "t"}),
            "line 2: operation 'FLY' is not one of",
        ),
        (json.dumps({"principal": "User:a", "operation": "READ", "resourceType": "TOPIC"}), "line 1: missing resourceName"),
        (json.dumps({**acl("User:a", "ALTER", "CLUSTER", "other")}), "The only valid name for the CLUSTER resource is kafka-cluster"),
        (json.dumps({**acl("alice", "READ", "TOPIC", "t")}), "no colon"),
        (json.dumps({**acl("User:a", "READ", "TOPIC", "t"), "hots": "*"}), "unknown key(s) hots"),
        (json.dumps([{**acl("User:a", "READ", "TOPIC", "t"), "permission": "ANY"}]), "entry 1: Invalid permissionType ANY"),
    ],
)
def test_acl_file_errors_name_the_entry(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "acls.jsonl"
    path.write_text(text)
    with pytest.raises(AclFileError, match=r"acls\.jsonl") as caught:
        load_acl_file(path)
    assert message in str(caught.value)


def test_create_topics_is_allowed_by_cluster_create_or_topic_create() -> None:
    assert [(a.operation, a.resource_type, a.resource_name) for a in actions_for("kafka.CreateTopics", "TOPIC", "orders", "CREATE")] == [
        (Operation.CREATE, ResourceType.CLUSTER, "kafka-cluster"),
        (Operation.CREATE, ResourceType.TOPIC, "orders"),
    ]
    assert len(actions_for("kafka.DeleteTopics", "TOPIC", "orders", "DELETE")) == 1


def test_candidate_errors() -> None:
    with pytest.raises(WhatIfError, match=r"no\.such\.module"):
        Candidate("no.such.module:Authorizer").build()
    with pytest.raises(WhatIfError, match="keeps no ACLs"):
        Candidate("tests.spark_audit.whatif_plugin:DenyForwardedAclChanges", {}, (acl("User:a", "READ", "TOPIC", "t"),)).build()


# --------------------------------------------------------------------------- replay in Spark


def _change(
    n: int, request_id: str, principal: str, method: str, kind: str, name: str, operation: str, old: str, new: str, **extra: Any
) -> tuple[Any, ...]:
    from datetime import date

    return (
        ts(f"{D}T10:00:{n:02d}.000Z"),
        date(2026, 11, 21),
        rid(request_id),
        principal,
        "127.0.0.1",
        "CLIENT",
        extra.get("forwarding", "User:proxy"),
        method,
        kind,
        name,
        operation,
        old,
        new,
        extra.get("error"),
    )


@pytest.mark.spark
def test_replay_with_standard_authorizer_and_acls(spark: SparkSession, tmp_path: Path) -> None:
    acls = write_jsonl(
        tmp_path / "acls.jsonl",
        [
            acl("User:alice", "CREATE", "CLUSTER", "kafka-cluster"),
            acl("User:bob", "CREATE", "TOPIC", "pa", "PREFIXED"),
            acl("User:carol", "DESCRIBE_CONFIGS", "TOPIC", "orders"),
        ],
    )
    candidate = Candidate.from_files(None, {"super.users": "User:admin"}, str(acls))

    result = replay(spark, flat_of(spark, HISTORY), candidate)

    expected = spark.createDataFrame(
        [
            _change(2, "w2", "User:bob", "kafka.CreateTopics", "TOPIC", "pay", "CREATE", "DENIED", "ALLOWED"),
            _change(3, "w3", "User:alice", "kafka.CreateAcls", "CLUSTER", "kafka-cluster", "ALTER", "ALLOWED", "DENIED"),
            _change(5, "w5", "User:alice", "kafka.AlterConfigs", "TOPIC", "orders", "ALTER_CONFIGS", "ALLOWED", "DENIED"),
            _change(
                9, "w9", "User:carol", "kafka.DescribeConfigs", "TOPIC", "orders", "DESCRIBE_CONFIGS", "DENIED", "ALLOWED", forwarding=None
            ),
            _change(11, "w11", "User:broken", "kafka.CreateTopics", "TOPIC", "orders", "CREATE", "ALLOWED", "DENIED"),
        ],
        CHANGE_SCHEMA,
    )
    assertDataFrameEqual(result.changes, expected, checkRowOrder=True)
    assert result.stats == {"decisions": 7, "changed": 5, "allowedToDenied": 3, "deniedToAllowed": 2, "errors": 0, "distinctContexts": 7}
    counts = {(r["principal"], r["method"], r["old"], r["new"]): r["count"] for r in result.counts.collect()}
    assert counts == {
        ("User:bob", "kafka.CreateTopics", "DENIED", "ALLOWED"): 1,
        ("User:alice", "kafka.CreateAcls", "ALLOWED", "DENIED"): 1,
        ("User:alice", "kafka.AlterConfigs", "ALLOWED", "DENIED"): 1,
        ("User:carol", "kafka.DescribeConfigs", "DENIED", "ALLOWED"): 1,
        ("User:broken", "kafka.CreateTopics", "ALLOWED", "DENIED"): 1,
    }
    result.release()


@pytest.mark.spark
def test_replay_with_a_plugin_shipped_to_executors(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = HERE / "whatif_plugin.py"
    spark.sparkContext.addPyFile(str(plugin))
    monkeypatch.syspath_prepend(str(HERE))  # the driver builds the candidate too
    candidate = Candidate("whatif_plugin:DenyForwardedAclChanges", {"deny.forwarder": "User:proxy"})

    result = replay(spark, flat_of(spark, HISTORY), candidate)

    expected = spark.createDataFrame(
        [
            _change(2, "w2", "User:bob", "kafka.CreateTopics", "TOPIC", "pay", "CREATE", "DENIED", "ALLOWED"),
            _change(3, "w3", "User:alice", "kafka.CreateAcls", "CLUSTER", "kafka-cluster", "ALTER", "ALLOWED", "DENIED"),
            _change(
                9, "w9", "User:carol", "kafka.DescribeConfigs", "TOPIC", "orders", "DESCRIBE_CONFIGS", "DENIED", "ALLOWED", forwarding=None
            ),
            _change(
                11, "w11", "User:broken", "kafka.CreateTopics", "TOPIC", "orders", "CREATE", "ALLOWED", "ERROR", error="RuntimeError: boom"
            ),
        ],
        CHANGE_SCHEMA,
    )
    assertDataFrameEqual(result.changes, expected, checkRowOrder=True)
    assert result.stats["errors"] == 1
    result.release()
