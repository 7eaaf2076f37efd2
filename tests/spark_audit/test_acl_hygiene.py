"""ACL hygiene in the job: a workload whose unused grants and minimal ACLs are computed by hand, run through the
command line; and the unused-grant report against an independent pure-Python computation on generated data."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from authz import AclBinding, Operation, PatternType, PermissionType, ResourceType
from authz.acl_file import load_acl_file
from spark_audit.acl_usage import MatcherSpec, allowed_decisions, binding_uses, distinct_decisions
from spark_audit.cli import main
from tests.spark_audit import acl_oracle
from tests.spark_audit.harness import bench_generator, edge_case_traffic
from tests.spark_audit.records import acl, err, request, resource, write_jsonl
from tests.spark_audit.scenario import flat_of

D = "2026-11-21"
BOB_HOST = "10.0.0.2"


IN_FORCE = [
    acl("User:alice", "CREATE", "TOPIC", "orders-", "PREFIXED"),  # used by alice's CreateTopics
    acl("User:alice", "ALL", "TOPIC", "payments"),  # used: ALL allows ALTER
    acl("User:bob", "ALTER", "TOPIC", "*", host=BOB_HOST),  # used from bob's own host only
    acl("User:*", "DESCRIBE", "GROUP", "*"),  # unused: no group was touched
    acl("User:carol", "DESCRIBE_CONFIGS", "TOPIC", "orders-1"),  # used by carol's read
    acl("User:bob", "ALTER", "TOPIC", "secret", permission="DENY"),  # a denial, kept as it is
    acl("User:bob", "ALTER", "CLUSTER", "kafka-cluster"),  # used by bob's CreateAcls
    acl("User:proxy", "CLUSTER_ACTION", "CLUSTER", "kafka-cluster"),  # used by every forwarded decision
    acl("User:dave", "WRITE", "TOPIC", "logs-", "PREFIXED"),  # unused: dave did nothing
    acl("User:alice", "DESCRIBE", "TOPIC", "payments"),  # unused: alice only altered it
    acl("User:*", "ALTER_CONFIGS", "TOPIC", "orders-1", permission="DENY"),  # added after carol's change: a new denial
]

WORKLOAD: list[dict[str, Any]] = [
    request(1, f"{D}T10:00:01.000Z", "r1", "outcome", resources=[resource("orders-1")], status="SUCCESS"),
    request(2, f"{D}T10:00:02.000Z", "r2", "outcome", resources=[resource("orders-2"), resource("orders-3")], status="SUCCESS"),
    request(3, f"{D}T10:00:03.000Z", "r3", "outcome", method="kafka.CreatePartitions", resources=[resource("payments", "ALTER")], status="SUCCESS"),
    request(4, f"{D}T10:00:04.000Z", "r4", "outcome", principal="User:bob", client=BOB_HOST, method="kafka.CreatePartitions",
            resources=[resource("clicks", "ALTER")], status="SUCCESS"),
    request(5, f"{D}T10:00:05.000Z", "r5", "outcome", principal="User:bob", client=BOB_HOST, method="kafka.CreatePartitions",
            resources=[resource("secret", "ALTER")], status="FAILURE", errors=[err(29, "TOPIC_AUTHORIZATION_FAILED", "secret")]),
    request(6, f"{D}T10:00:06.000Z", "r6", "read", principal="User:carol", method="kafka.DescribeConfigs", forwarding=None,
            resources=[resource("orders-1", "DESCRIBE_CONFIGS")], status="SUCCESS"),
    request(7, f"{D}T10:00:07.000Z", "r7", "outcome", principal="User:bob", client=BOB_HOST, method="kafka.CreateAcls", api_key=30,
            resources=[resource("orders-1", "ALTER")], status="SUCCESS"),
    request(8, f"{D}T10:00:08.000Z", "r8", "outcome", principal="User:eve", resources=[resource("x")], status="FAILURE",
            errors=[err(29, "TOPIC_AUTHORIZATION_FAILED", "x")]),
    request(9, f"{D}T10:00:09.000Z", "r9", "outcome", principal="User:admin", resources=[resource("anything")], status="SUCCESS"),
    # allowed then, from an address bob's grant no longer covers: allowed with no grant in force
    request(10, f"{D}T10:00:10.000Z", "r10", "outcome", principal="User:bob", client="10.0.0.9", method="kafka.CreatePartitions",
            resources=[resource("orders-1", "ALTER")], status="SUCCESS"),
    request(11, f"{D}T10:00:11.000Z", "r11", "outcome", principal="User:carol", method="kafka.IncrementalAlterConfigs", api_key=44,
            resources=[resource("orders-1", "ALTER_CONFIGS")], status="SUCCESS"),
    # denied then; the minimal prefix orders- would allow it
    request(12, f"{D}T10:00:12.000Z", "r12", "outcome", resources=[resource("orders-9")], status="FAILURE",
            errors=[err(29, "TOPIC_AUTHORIZATION_FAILED", "orders-9")]),
    # nobody decided: not replayed, not a use
    request(13, f"{D}T10:00:13.000Z", "r13", "outcome", principal="User:dave", resources=[resource("logs-1", "WRITE")], status="ERROR",
            error_code=7, errors=[err(7, "REQUEST_TIMED_OUT", "logs-1")]),
]  # fmt: skip


def grant(principal: str, operation: str, kind: str, name: str, pattern: str = "LITERAL", host: str = "*") -> AclBinding:
    return AclBinding(ResourceType[kind], name, PatternType[pattern], principal, host, Operation[operation], PermissionType.ALLOW)


@pytest.mark.spark
def test_known_workload_unused_grants_minimal_acls_and_proof(spark: SparkSession, tmp_path: Path) -> None:
    source, out = tmp_path / "audit", tmp_path / "out"
    write_jsonl(source / "audit-1.jsonl", WORKLOAD)
    in_force = write_jsonl(tmp_path / "in-force.jsonl", IN_FORCE)

    status = main(
        ["--input", str(source), "--output", str(out), "--master", "local[2]", "--quiet", "--acl-file", str(in_force),
         "--acl-super-users", "User:admin", "--acl-prefix-threshold", "3"]
    )  # fmt: skip

    assert status == 0
    summary = json.loads((out / "summary.json").read_text())["acl_hygiene"]
    unused = spark.read.parquet(str(out / "acls" / "unused_grants")).collect()
    assert sorted((r["principal"], r["operation"], r["resourceType"], r["resourceName"], r["lastUsed"]) for r in unused) == [
        ("User:*", "DESCRIBE", "GROUP", "*", None),
        ("User:alice", "DESCRIBE", "TOPIC", "payments", None),
        ("User:dave", "WRITE", "TOPIC", "logs-", None),
    ]
    usage = {(r["principal"], r["resourceName"], r["operation"]): (r["uses"], r["lastUsed"]) for r in spark.read.parquet(str(out / "acls" / "usage")).collect()}
    assert usage[("User:alice", "orders-", "CREATE")] == (3, f"{D}T10:00:02.000Z")  # orders-1, orders-2, orders-3
    assert usage[("User:proxy", "kafka-cluster", "CLUSTER_ACTION")] == (11, f"{D}T10:00:12.000Z")  # every decided forwarded outcome
    assert usage[("User:carol", "orders-1", "DESCRIBE_CONFIGS")] == (1, f"{D}T10:00:06.000Z")  # not r11: DENY wins there

    assert load_acl_file(out / "acls" / "minimal-acls.jsonl") == [
        grant("User:alice", "CREATE", "TOPIC", "orders-", "PREFIXED"),
        grant("User:alice", "ALTER", "TOPIC", "payments"),
        grant("User:bob", "ALTER", "CLUSTER", "kafka-cluster"),
        grant("User:bob", "ALTER", "TOPIC", "clicks"),
        grant("User:bob", "ALTER", "TOPIC", "orders-1"),
        grant("User:carol", "ALTER_CONFIGS", "TOPIC", "orders-1"),  # implies carol's DESCRIBE_CONFIGS
        grant("User:proxy", "CLUSTER_ACTION", "CLUSTER", "kafka-cluster"),
    ]
    assert {k: summary[k] for k in ("bindings", "grants", "unusedGrants", "allowedWithoutGrant", "minimalAcls", "supersededGrants")} == {
        "bindings": 11,
        "grants": 9,
        "unusedGrants": 3,
        "allowedWithoutGrant": 2,  # bob from 10.0.0.9, carol's change under the DENY
        "minimalAcls": 7,
        "supersededGrants": 3,  # bob's ALTER on *, alice's ALL on payments, carol's DESCRIBE_CONFIGS
    }
    proof = spark.read.parquet(str(out / "acls" / "proof")).collect()
    assert [(r["change"], r["principal"], r["resourceName"], r["operation"]) for r in proof] == [
        ("allowed -> denied", "User:carol", "orders-1", "ALTER_CONFIGS"),
        ("denied -> allowed", "User:alice", "orders-9", "CREATE"),
    ]
    assert "matched DENY: DENY User:* ALTER_CONFIGS on topic:orders-1 (LITERAL) from host *" in proof[0]["why"]
    assert "matched ALLOW: ALLOW User:alice CREATE on topic:orders- (PREFIXED) from host *" in proof[1]["why"]
    # 13 replayed decisions, and the forwarding principal's CLUSTER_ACTION
    assert summary["proof"] == {"decisions": 14, "newDenials": 1, "newlyAllowed": 1, "errors": 0, "forwarderDenials": 0}

    add = (out / "acls" / "add-minimal-acls.sh").read_text()
    assert "--add --allow-principal User:alice --allow-host '*' --operation Create --topic orders- --resource-pattern-type prefixed" in add
    remove = (out / "acls" / "remove-unused-grants.sh").read_text()
    assert "--remove --force --allow-principal User:dave --allow-host '*' --operation Write --topic logs- --resource-pattern-type prefixed" in remove
    # the scripts are valid shell, and refuse to run without their settings
    assert subprocess.run(["sh", "-n", str(out / "acls" / "add-minimal-acls.sh")], check=False).returncode == 0
    refused = subprocess.run(["sh", str(out / "acls" / "remove-superseded-grants.sh")], capture_output=True, text=True, check=False)
    assert refused.returncode != 0 and "set BOOTSTRAP" in refused.stderr

    page = (out / "report.html").read_text()
    assert '<section id="acls">' in page and 'href="#acls"' in page and "unused grants" in page


@pytest.mark.spark
def test_unused_grants_match_an_independent_computation_on_generated_data(spark: SparkSession, tmp_path: Path) -> None:
    generate = bench_generator()
    source = tmp_path / "audit"
    generate.write(source, 1500, seed=23, traffic=edge_case_traffic(days=1, nodes=2, principals=12, topics=30, addresses=8))
    lines = [line for path in sorted(source.glob("*.jsonl")) for line in path.read_text().splitlines() if line.strip()]
    times = acl_oracle.record_times(lines)
    window_start_us = min(times) + (max(times) - min(times)) // 2
    bindings = acl_oracle.generated_acls(acl_oracle.allowed(lines), window_start_us, seed=5)
    super_users = frozenset({"User:svc-orders"})

    distinct = distinct_decisions(allowed_decisions(flat_of(spark, lines)), window_start_us)
    uses = binding_uses(distinct, MatcherSpec(tuple(bindings), super_users))

    expected = acl_oracle.binding_uses(lines, bindings, super_users, window_start_us)
    got = {index: (use.uses, use.last_used) for index, use in uses.items() if index >= 0}
    assert got == {index: (n, acl_oracle.iso(at)) for index, (n, at) in expected.items()}
    unused = {i for i, b in enumerate(bindings) if b.permission is PermissionType.ALLOW and got.get(i, (0, None))[0] == 0}
    used = {i for i, (n, _) in got.items() if n > 0}
    # the generated ACLs are chosen so that both kinds are there, and grants used only before the window
    assert unused and used and any(got.get(i, (0, None))[1] for i in unused)
