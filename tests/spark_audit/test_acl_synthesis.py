"""Least-privilege synthesis, usage matching and the kafka-acls lines, without Spark; the CLI's ACL options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from authz import AclBinding, Operation, PatternType, PermissionType, ResourceType
from authz.acl_file import load_acl_file, parse_acls
from spark_audit import cli
from spark_audit.acl_commands import command, json_lines, script
from spark_audit.acl_matching import Decided, GrantMatcher, implies
from spark_audit.acl_synthesis import Need, collapse, prefixes_of, synthesize
from tests.spark_audit.records import request, write_jsonl

TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER


def need(name: str, operation: str, principal: str = "User:a", kind: ResourceType = TOPIC, host: str = "*") -> Need:
    return Need(principal, host, kind, name, Operation[operation])


def allow(
    name: str, operation: str, pattern: str = "LITERAL", principal: str = "User:a", kind: ResourceType = TOPIC, host: str = "*"
) -> AclBinding:
    return AclBinding(kind, name, PatternType[pattern], principal, host, Operation[operation], PermissionType.ALLOW)


def test_prefixes_end_at_a_separator_after_at_least_one_character() -> None:
    assert prefixes_of("payments-eu.orders_1") == ["payments-", "payments-eu.", "payments-eu.orders_"]
    assert prefixes_of("-x") == []
    assert prefixes_of("plain") == []


def test_collapse_takes_the_longest_prefix_that_still_covers_the_threshold() -> None:
    names = ["pay-eu-1", "pay-eu-2", "pay-eu-3", "pay-us-1", "other"]
    assert collapse(names, 3) == (["pay-eu-"], ["other", "pay-us-1"])
    # with a fourth pay- name outside pay-eu-, pay- has the threshold by itself
    assert collapse([*names, "pay-us-2", "pay-ap-1"], 3) == (["pay-", "pay-eu-"], ["other"])
    assert collapse(names, 0) == ([], sorted(names))


def test_synthesis_drops_what_a_wider_binding_covers_and_never_prefixes_the_cluster() -> None:
    needs = [
        need("pay-eu-1", "WRITE"),
        need("pay-eu-2", "WRITE"),
        need("pay-eu-3", "WRITE"),
        need("pay-eu-1", "DESCRIBE"),  # WRITE implies DESCRIBE: covered by the prefix
        need("pay-us-1", "WRITE"),
        need("pay-us-1", "DESCRIBE"),  # covered by the literal WRITE
        need("orders", "ALTER_CONFIGS"),
        need("orders", "DESCRIBE_CONFIGS"),  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
        need("kafka-cluster", "ALTER", kind=CLUSTER),
        need("x", "READ", principal="User:b", host="10.0.0.1"),
        need("x", "READ", principal="User:b", host="10.0.0.2"),
    ]
    assert synthesize(needs, prefix_threshold=3) == [
        allow("kafka-cluster", "ALTER", kind=CLUSTER),
        allow("orders", "ALTER_CONFIGS"),
        allow("pay-eu-", "WRITE", "PREFIXED"),
        allow("pay-us-1", "WRITE"),
        allow("x", "READ", principal="User:b", host="10.0.0.1"),
        allow("x", "READ", principal="User:b", host="10.0.0.2"),
    ]


def test_implied_operations_are_the_authorizers() -> None:
    assert implies(Operation.ALTER, Operation.DESCRIBE)
    assert implies(Operation.ALL, Operation.CLUSTER_ACTION)
    assert not implies(Operation.DESCRIBE, Operation.ALTER)
    assert not implies(Operation.ALTER, Operation.DESCRIBE_CONFIGS)


def test_grant_matcher_follows_patterns_hosts_wildcards_and_deny_precedence() -> None:
    bindings = [
        allow("orders-", "CREATE", "PREFIXED"),  # 0
        allow("*", "ALL", principal="User:*"),  # 1
        allow("orders-1", "DESCRIBE", host="10.0.0.1"),  # 2
        AclBinding(TOPIC, "orders-2", PatternType.LITERAL, "User:a", "*", Operation.ALL, PermissionType.DENY),  # 3
        allow("kafka-cluster", "CREATE", kind=CLUSTER),  # 4
        allow("kafka-cluster", "CLUSTER_ACTION", principal="User:proxy", kind=CLUSTER, host="10.9.9.9"),  # 5
    ]
    matcher = GrantMatcher(bindings, super_users=["User:admin"])
    assert matcher.used(Decided("User:a", "10.0.0.1", "kafka.CreateTopics", "TOPIC", "orders-1", "CREATE")) == [0, 1, 4]
    assert matcher.used(Decided("User:a", "10.0.0.1", "kafka.DescribeConfigs", "TOPIC", "orders-1", "DESCRIBE")) == [1, 2]
    assert matcher.used(Decided("User:a", "10.0.0.2", "kafka.DescribeConfigs", "TOPIC", "orders-1", "DESCRIBE")) == [1]
    assert matcher.used(Decided("User:a", "10.0.0.1", "kafka.DeleteTopics", "TOPIC", "orders-2", "DELETE")) == []  # DENY wins
    assert matcher.used(Decided("User:admin", "10.0.0.1", "kafka.DeleteTopics", "TOPIC", "x", "DELETE")) == []
    # the proxy's own check: no address recorded, so a binding's host does not rule it out
    assert matcher.used(Decided("User:proxy", None, "kafka.Envelope", "CLUSTER", "kafka-cluster", "CLUSTER_ACTION")) == [5]
    # what no ACL can name allowed nothing, and stops nothing
    assert matcher.used(Decided("no-colon", "10.0.0.1", "kafka.DeleteTopics", "TOPIC", "orders-1", "DELETE")) == []
    assert matcher.used(Decided("User:a", "10.0.0.1", "kafka.AlterConfigs", "BROKER_LOGGER", "1", "ALTER_CONFIGS")) == []


def test_outputs_read_back_as_the_same_bindings_and_quote_for_the_shell() -> None:
    bindings = [
        allow("pay-", "WRITE", "PREFIXED", principal="User:CN=a b,O=x"),
        allow("kafka-cluster", "DESCRIBE_CONFIGS", kind=CLUSTER, host="10.0.0.1"),
        allow("tx", "DESCRIBE", kind=ResourceType.TRANSACTIONAL_ID),
    ]
    assert parse_acls(json_lines(bindings, ["a header"])) == bindings
    assert command(bindings[0], remove=False).endswith(
        "--add --allow-principal 'User:CN=a b,O=x' --allow-host '*' --operation Write --topic pay- --resource-pattern-type prefixed"
    )
    assert command(bindings[1], remove=True).endswith(
        "--remove --force --allow-principal User:a --allow-host 10.0.0.1 --operation DescribeConfigs --cluster --resource-pattern-type literal"
    )
    assert "--transactional-id tx" in command(bindings[2], remove=False)
    text = script(bindings, remove=False, header=["stage 1"])
    assert text.startswith("#!/bin/sh\n# stage 1\n") and "set -eu" in text and text.count('"$KAFKA_ACLS"') == len(bindings)


# --------------------------------------------------------------------------- the command line, before Spark


def _args(tmp_path: Path, *extra: str) -> list[str]:
    source = write_jsonl(tmp_path / "audit" / "a.jsonl", [request(1, "2026-11-21T10:00:00.000Z", "r", "intent")]).parent
    return ["--input", str(source), "--output", str(tmp_path / "out"), "--quiet", *extra]


@pytest.mark.parametrize(
    ("acls", "reason"),
    [
        ('{"principal": "User:a", "operation": "READ"', "line 1: not JSON"),
        ('# c\n{"principal": "User:a", "operation": "FLY", "resourceType": "TOPIC", "resourceName": "t"}', "line 2: operation 'FLY'"),
    ],
)
def test_a_malformed_acl_file_exits_2_naming_file_line_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], acls: str, reason: str
) -> None:
    path = tmp_path / "in-force.jsonl"
    path.write_text(acls)
    assert cli.main(_args(tmp_path, "--acl-file", str(path))) == 2
    err = capsys.readouterr().err
    assert f"--acl-file: {path}: {reason}" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--acl-window", "1 day"], "need the ACLs in force"),
        (["--acl-file", "F", "--acl-prefix-threshold", "1"], "--acl-prefix-threshold must be 0"),
        (["--acl-file", "F", "--acl-admin-option", "sasl.username=a"], "go with --acl-from-controller"),
        (["--acl-file", "F", "--acl-super-users", "admin"], "--acl-super-users: expected a string in format"),
        (["--acl-file", "F", "--acl-window", "soon"], "--acl-window:"),
    ],
)
def test_bad_acl_options_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    (tmp_path / "F").write_text(json.dumps({"principal": "User:a", "operation": "READ", "resourceType": "TOPIC", "resourceName": "t"}))
    args = [str(tmp_path / "F") if a == "F" else a for a in extra]
    assert cli.main(_args(tmp_path, *args)) == 2
    assert message in capsys.readouterr().err


def test_acl_options_read_the_file_before_spark(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "acls.jsonl", [{"principal": "User:a", "operation": "READ", "resourceType": "TOPIC", "resourceName": "t"}]
    )
    options = cli.options_from(
        cli.parser().parse_args(
            _args(
                tmp_path,
                "--acl-file",
                str(path),
                "--acl-super-users",
                "User:admin;User:proxy",
                "--acl-window",
                "7d",
                "--acl-hosts",
                "observed",
            )
        )
    )
    assert options.acls is not None
    assert options.acls.acls == tuple(load_acl_file(path))
    assert options.acls.super_users == {"User:admin", "User:proxy"}
    assert (options.acls.window_seconds, options.acls.observed_hosts, options.acls.prefix_threshold) == (7 * 86400, True, 3)
