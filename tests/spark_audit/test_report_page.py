"""The report page as a person reads it (issue 50, "the report says what happened, plainly").

One Spark run over the hand-made scenario (tests/spark_audit/scenario.py) plus the changes and denials a
newcomer's first day makes: bob granting himself ALL on ``topic:*`` (denied by the controller, per binding,
with no top-level code), alice setting ``retention.ms`` and a redacted JAAS config, a request the controller
refused because the proxy's own principal lacks CLUSTER_ACTION, and a read the proxy's edge authorizer denied.
Then headless Chromium loads ``report.html`` in a laptop's window (1366 x 768) and the test reads the visible
text and the tables' boxes. The rest runs without Spark or a browser: the words for a change's parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from pyspark.sql import SparkSession

from envelope.apis import ApiKey
from spark_audit import changes
from spark_audit.html_report import DENIED_BY_MEANING, STATUS_MEANING, render
from spark_audit.options import JobOptions
from spark_audit.pipeline import run
from spark_audit.report_data import ReportData, Table
from spark_audit.view import DENIED_BY
from tests.proxy.audit.test_request_parameters import intent
from tests.spark_audit.browser import Seen, look
from tests.spark_audit.records import err, request, resource, write_jsonl
from tests.spark_audit.scenario import RECORDS

#: Where an intent carries what a change changes (docs/audit-schema.md, "What a change changes").
PARAMETERS = "request"

BOB_GRANT = {
    "creations": [
        {
            "resourceType": "TOPIC",
            "resourceName": "*",
            "patternType": "LITERAL",
            "principal": "User:bob",
            "host": "*",
            "operation": "ALL",
            "permissionType": "ALLOW",
        }
    ]
}
ALICE_CONFIGS = {
    "resources": [
        {
            "resourceType": "TOPIC",
            "resourceName": "orders",
            "configs": [{"name": "retention.ms", "operation": "SET", "value": "86400000", "sensitive": False}],
        },
        {
            "resourceType": "BROKER",
            "resourceName": "1",
            "configs": [{"name": "listener.name.client.plain.sasl.jaas.config", "operation": "SET", "value": "[hidden]", "sensitive": True}],
        },
    ],
    "validateOnly": False,
}


def _with(record: dict[str, Any], **data: Any) -> dict[str, Any]:
    record["data"].update(data)
    return record


def _result(record: dict[str, Any], **result: Any) -> dict[str, Any]:
    record["data"]["result"].update(result)
    return record


def first_day() -> list[dict[str, Any]]:
    """What a newcomer's first day adds to the scenario (schema version 3): changes with their parameters, and each
    kind of denial."""
    topic_star = [resource("*", "ALTER")]
    configs = [resource("orders", "ALTER_CONFIGS"), resource("1", "ALTER_CONFIGS", "BROKER")]
    records = [
        # bob grants himself ALL on topic:*: the controller denies the binding (CreateAcls has no top-level code)
        _with(
            request(101, "2026-11-21T10:03:00.000Z", "grant", "intent", principal="User:bob", client="127.0.0.2", method="kafka.CreateAcls", api_key=30, subject="topic:*", resources=topic_star),
            **{PARAMETERS: BOB_GRANT},
        ),
        request(
            102,
            "2026-11-21T10:03:00.020Z",
            "grant",
            "outcome",
            principal="User:bob",
            client="127.0.0.2",
            method="kafka.CreateAcls",
            api_key=30,
            subject="topic:*",
            resources=topic_star,
            status="FAILURE",
            error_code=0,
            errors=[{"resource": None, "errorCode": 31, "errorName": "CLUSTER_AUTHORIZATION_FAILED", "message": "m"}],
        ),
        # alice sets retention.ms on orders, and a broker's JAAS config (its value redacted in the record)
        _with(
            request(103, "2026-11-21T10:04:00.000Z", "configs", "intent", method="kafka.IncrementalAlterConfigs", api_key=44, resources=configs),
            **{PARAMETERS: ALICE_CONFIGS},
        ),
        request(104, "2026-11-21T10:04:00.030Z", "configs", "outcome", method="kafka.IncrementalAlterConfigs", api_key=44, resources=configs, status="SUCCESS"),
        # dave's CreateTopics: the controller refused the proxy's own Envelope (User:proxy lacks CLUSTER_ACTION)
        request(105, "2026-11-21T10:05:00.000Z", "rights", "intent", principal="User:dave", client="127.0.0.4", resources=[resource("invoices")], subject="topic:invoices"),
        _result(
            request(
                106,
                "2026-11-21T10:05:00.010Z",
                "rights",
                "outcome",
                principal="User:dave",
                client="127.0.0.4",
                resources=[resource("invoices")],
                subject="topic:invoices",
                status="ERROR",
                error_code=31,
                errors=[
                    {
                        "resource": "invoices",
                        "errorCode": 31,
                        "errorName": "CLUSTER_AUTHORIZATION_FAILED",
                        "message": "the proxy's principal User:proxy lacks CLUSTER_ACTION on the controller",
                    }
                ],
            ),
            envelopeErrorCode=31,
        ),
        # erin's DescribeConfigs of a topic the proxy's edge authorizer does not let her see
        request(
            107,
            "2026-11-21T10:06:00.000Z",
            "edge",
            "read",
            principal="User:erin",
            client="127.0.0.5",
            method="kafka.DescribeConfigs",
            api_key=32,
            subject="topic:secret",
            resources=[resource("secret", "DESCRIBE_CONFIGS")],
            status="FAILURE",
            error_code=0,
            errors=[err(29, "TOPIC_AUTHORIZATION_FAILED", "secret")],
            forwarding=None,
            decision={
                "decision": "DENIED",
                "reason": "edge authorizer (acls)",
                "denied": [resource("secret", "DESCRIBE_CONFIGS")],
            },
        ),
    ]
    for record in records:
        record["schemaversion"] = 3
    return records


@pytest.fixture(scope="module")
def report(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("report-page")
    source, out = directory / "audit", directory / "out"
    write_jsonl(source / "audit-1-20261121T100000Z-000001.jsonl", [*RECORDS, *first_day()])
    summary = run(None, str(out), spark=spark, options=JobOptions(input=str(source), print_report=False))
    yield out, summary


@pytest.fixture(scope="module")
def seen(report: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Seen:
    out, _ = report
    return look(out / "report.html", tmp_path_factory.mktemp("chromium"))


@pytest.mark.spark
def test_the_counts_say_what_they_count(report: tuple[Path, dict[str, Any]], seen: Seen) -> None:
    _, summary = report
    # r5 (bob's CreateTopics of orders and pay) is one request and two request x resource
    assert summary["request_resources"] > summary["requests"]
    text = seen.text
    assert f"{summary['requests']}\nrequests\neach request once, however many resources it names" in text
    assert f"{summary['request_resources']}\nrequest \u00d7 resource\nonce per resource it names: a CreateTopics of two topics counts 2" in text
    assert "a CreateTopics of two topics counts twice" in text
    assert f"add up to the request \u00d7 resource count ({summary['request_resources']}), not the requests count ({summary['requests']})" in text
    assert "requests on this resource" in text


@pytest.mark.spark
def test_a_legend_explains_every_status_and_who_denied(seen: Seen) -> None:
    text = seen.text
    assert "How to read this page" in text
    for status, meaning in STATUS_MEANING:
        assert f"{status}\n{meaning}" in text or f"{status}\t{meaning}" in text, status
    for by, meaning in DENIED_BY_MEANING:
        assert f"{by}\n{meaning}" in text or f"{by}\t{meaning}" in text, by


@pytest.mark.spark
def test_denials_are_split_by_who_denied_with_their_real_code(report: tuple[Path, dict[str, Any]], seen: Seen) -> None:
    _, summary = report
    assert summary["denials_by"] == {"controller": 3, "proxy-connection": 4, "proxy-edge": 2, "proxy-rights": 1}
    assert sum(summary["denials_by"].values()) == summary["denials"]
    lines = seen.text.splitlines()
    # the latest denials, newest first: the proxy's missing rights are not dave's
    rights = next(line for line in lines if "User:dave" in line and "proxy-rights" in line)
    assert "31 CLUSTER_AUTHORIZATION_FAILED" in rights
    assert "the proxy's principal User:proxy lacks CLUSTER_ACTION on the controller; User:dave's own rights were not checked" in seen.text
    edge = next(line for line in lines if "User:erin" in line and "proxy-edge" in line)
    assert "29 TOPIC_AUTHORIZATION_FAILED" in edge and "edge authorizer (acls)" in edge
    assert "Denials by who denied" in seen.text


@pytest.mark.spark
def test_sensitive_changes_say_what_changed(seen: Seen) -> None:
    text = seen.text
    start = text.index("\nSensitive changes\n")
    changes_text = text[start : text.index("\nIdentities\n", start)]
    # bob's grant: the binding, who denied it, and the denial's own code rather than CreateAcls' top-level 0
    grant = next(line for line in changes_text.splitlines() if "User:bob ALL" in line)
    assert grant.split("\t", 1)[1] == "CreateAcls\tALLOW User:bob ALL on topic:* (LITERAL) from host *\tFAILURE\tcontroller\t31 CLUSTER_AUTHORIZATION_FAILED"
    assert "\t0\t" not in changes_text and "\t0\n" not in changes_text and "\t0 NONE" not in changes_text
    # alice's configs: the key and value, and the redacted value as redacted
    assert "topic:orders: SET retention.ms = 86400000" in changes_text
    assert "broker:1: SET listener.name.client.plain.sasl.jaas.config = (redacted)" in changes_text
    # a change whose records carry no parameters shows its resources, and says so
    assert "cluster:kafka-cluster ALTER_CONFIGS\n(the records name the resources, not what changed)" in changes_text


@pytest.mark.spark
def test_tables_fit_a_laptop_screen(seen: Seen) -> None:
    assert seen.page_width <= seen.viewport_width, "the page scrolls sideways"
    assert seen.tables
    for box in seen.tables:
        where = f"{box['section']} / {box['heading']} {box['columns']}"
        assert box["right"] <= seen.viewport_width + 1, f"{where} runs off the screen"
        assert box["scrollWidth"] <= box["clientWidth"] + 1, f"{where} is wider than its box ({box['scrollWidth']} > {box['clientWidth']})"


# --------------------------------------------------------------------------- without Spark or a browser


def test_the_fixtures_are_what_the_proxy_writes() -> None:
    """The changes above are the proxy's own ``data.request`` for those requests (a secret value hidden)."""
    grant = {"resource_type": 2, "resource_name": "*", "resource_pattern_type": 3, "principal": "User:bob", "host": "*", "operation": 2, "permission_type": 3}
    written, _ = trio.run(intent, ApiKey.CREATE_ACLS, 3, {"creations": [grant]})
    assert written["request"] == BOB_GRANT
    configs = {
        "resources": [
            {"resource_type": 2, "resource_name": "orders", "configs": [{"name": "retention.ms", "config_operation": 0, "value": "86400000"}]},
            {"resource_type": 4, "resource_name": "1", "configs": [{"name": "listener.name.client.plain.sasl.jaas.config", "config_operation": 0, "value": "secret"}]},
        ],
        "validate_only": False,
    }
    written, line = trio.run(intent, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, configs)
    assert written["request"] == ALICE_CONFIGS and b"secret" not in line


def test_every_denied_by_value_has_a_meaning() -> None:
    assert tuple(by for by, _ in DENIED_BY_MEANING) == DENIED_BY


def test_acl_bindings_read_as_grants_and_filters() -> None:
    assert changes.describe("kafka.CreateAcls", json.dumps(BOB_GRANT), "topic:* ALTER") == "ALLOW User:bob ALL on topic:* (LITERAL) from host *"
    deletion = {
        "filters": [
            {"resourceType": "TOPIC", "resourceName": "orders", "patternType": "PREFIXED", "principal": "User:alice", "host": "*", "operation": "WRITE", "permissionType": "DENY"},
            {"resourceType": "ANY", "resourceName": None, "patternType": "MATCH", "principal": None, "host": None, "operation": "ANY", "permissionType": "ANY"},
        ]
    }
    assert changes.describe("kafka.DeleteAcls", json.dumps(deletion), None).splitlines() == [
        "delete ACLs matching DENY User:alice WRITE on topic:orders (PREFIXED) from host *",
        "delete ACLs matching ANY any principal ANY on any:any (MATCH) from host any host",
    ]


def test_config_values_are_shown_and_hidden_ones_are_not() -> None:
    text = changes.describe("kafka.IncrementalAlterConfigs", json.dumps(ALICE_CONFIGS), None)
    assert text.splitlines() == [
        "topic:orders: SET retention.ms = 86400000",
        "broker:1: SET listener.name.client.plain.sasl.jaas.config = (redacted)",
    ]
    configs = [
        {"name": "ssl.key.password", "operation": "SET", "value": "[hidden]", "sensitive": True},
        {"name": "retention.ms", "operation": "DELETE", "value": None, "sensitive": False},
        {"name": "cleanup.policy", "operation": "APPEND", "value": "compact", "sensitive": False},
    ]
    request = {"resources": [{"resourceType": "TOPIC", "resourceName": "t", "configs": configs}], "validateOnly": True}
    assert changes.describe("kafka.IncrementalAlterConfigs", json.dumps(request), None).splitlines() == [
        "topic:t: SET ssl.key.password = (redacted)",
        "topic:t: DELETE retention.ms",
        "topic:t: APPEND cleanup.policy = compact",
        changes.VALIDATE_ONLY,
    ]


def test_credentials_quotas_and_other_apis_read_plainly() -> None:
    scram = {"deletions": [{"name": "bob", "mechanism": "SCRAM-SHA-512"}], "upsertions": [{"name": "alice", "mechanism": "SCRAM-SHA-256", "iterations": 8192}]}
    assert changes.describe("kafka.AlterUserScramCredentials", json.dumps(scram), None).splitlines() == [
        "set SCRAM-SHA-256 credential of alice (8192 iterations)",
        "delete SCRAM-SHA-512 credential of bob",
    ]
    quota = {
        "entries": [
            {"entity": [{"entityType": "user", "entityName": "alice"}], "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]},
            {"entity": [{"entityType": "client-id", "entityName": None}], "ops": [{"key": "request_percentage", "value": None, "remove": True}]},
        ],
        "validateOnly": False,
    }
    assert changes.describe("kafka.AlterClientQuotas", json.dumps(quota), None).splitlines() == [
        "user=alice: SET producer_byte_rate = 1024.0",
        "client-id=(default): REMOVE request_percentage",
    ]
    token = {"owner": None, "renewers": ["User:alice"], "maxLifetimeMs": -1}
    assert changes.describe("kafka.CreateDelegationToken", json.dumps(token), None).splitlines() == ["owner=null, maxLifetimeMs=-1", "renewers: User:alice"]
    assert changes.describe("kafka.CreateAcls", json.dumps({"unreadable": "boom"}), None) == "the proxy could not read the parameters: boom"
    many = {"creations": [{**BOB_GRANT["creations"][0], "resourceName": f"t{i}"} for i in range(30)]}
    lines = changes.describe("kafka.CreateAcls", json.dumps(many), None).splitlines()
    assert len(lines) == changes.MAX_LINES + 1 and lines[-1] == f"... {30 - changes.MAX_LINES} more"
    assert changes.describe("kafka.CreateAcls", None, "topic:* ALTER") == "topic:* ALTER\n(the records name the resources, not what changed)"


def test_wrapped_cells_keep_their_lines() -> None:
    page = render(
        ReportData(
            summary={"requests": 1, "request_resources": 2},
            tables={"sensitive_changes": Table(["time", "what changed"], [("2026-11-21T10:00:00.000Z", "a = 1\nb = <2>")])},
        )
    )
    assert '<td class="wrap wide">a = 1\nb = &lt;2&gt;</td>' in page
    assert "2\nrequest" not in page and ">request \u00d7 resource<" in page
