"""The action map, checked against the controller: exactly the mapped ACL is enough, and without it the API is denied.

For every forwardable admin API the product serves, an Envelope carries the
request as a fresh principal (so no other test's ACLs interfere) to the
controller listener, logged in as the forwarder. The principal is first
denied; then it is granted exactly what `authz.actions` says the API needs
and asked again until the grant has propagated. The real Kafka controller is
the judge; the embedded one must agree with it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from authz import Operation, PatternType, PermissionType, ResourceType
from authz.actions import CLUSTER_OPERATIONS
from envelope.principal import Principal
from tests.interop.envelope_client import BROKER_ID, Controller, EnvelopeClient
from tests.interop.upstreams import ACL_PROPAGATION, poll

AUTHORIZATION_FAILURES = {29: "TOPIC_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED", 65: "DELEGATION_TOKEN_AUTHORIZATION_FAILED"}
# What each kind of resource's denial is answered with (CreateTopics asks CLUSTER, then TOPIC: TOPIC's).
DENIED_WITH = {ResourceType.TOPIC: 29, ResourceType.CLUSTER: 31, ResourceType.USER: 65}
NEW_VOTER_DIRECTORY = uuid.UUID("0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9")
CLUSTER = (ResourceType.CLUSTER, "kafka-cluster")


@dataclass(frozen=True)
class Case:
    """One API, the request a fresh principal sends, and the ACL that must be enough."""

    api_key: int
    version: int
    values: Callable[[str, str], dict[str, Any]]  # (topic, principal name) -> request
    grant: Callable[[str], tuple[ResourceType, str, Operation]]  # topic -> exactly the ACL the action map names
    needs_topic: bool = False


def _config_values(resource_type: int, name: str, incremental: bool) -> dict[str, Any]:
    entry = {"name": "retention.ms" if resource_type == 2 else "log.cleaner.threads", "value": "3600000" if resource_type == 2 else "1"}
    if incremental:
        entry["config_operation"] = 0
    return {"resources": [{"resource_type": resource_type, "resource_name": name, "configs": [entry]}], "validate_only": True}


def _acl(principal: str) -> dict[str, Any]:
    return {
        "resource_type": ResourceType.TOPIC,
        "resource_name": f"am-acl-{principal}",
        "resource_pattern_type": PatternType.LITERAL,
        "principal": f"User:{principal}-target",
        "host": "*",
        "operation": Operation.READ,
        "permission_type": PermissionType.ALLOW,
    }


def _delete_filter(principal: str) -> dict[str, Any]:
    acl = _acl(principal)
    return {
        "resource_type_filter": acl["resource_type"],
        "resource_name_filter": acl["resource_name"],
        "pattern_type_filter": PatternType.LITERAL,
        "principal_filter": acl["principal"],
        "host_filter": None,
        "operation": Operation.ANY,
        "permission_type": PermissionType.ANY,
    }


def _cluster(api_key: int) -> Callable[[str], tuple[ResourceType, str, Operation]]:
    return lambda _topic: (*CLUSTER, CLUSTER_OPERATIONS[api_key])


def _topic(operation: Operation) -> Callable[[str], tuple[ResourceType, str, Operation]]:
    return lambda topic: (ResourceType.TOPIC, topic, operation)


CASES: dict[str, Case] = {
    "CreateTopics/TOPIC": Case(
        19,
        7,
        lambda t, _p: {
            "topics": [{"name": t, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 30000,
            "validate_only": True,
        },
        _topic(Operation.CREATE),
    ),
    "CreateTopics/CLUSTER": Case(
        19,
        7,
        lambda t, _p: {
            "topics": [{"name": t, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 30000,
            "validate_only": True,
        },
        lambda _t: (*CLUSTER, Operation.CREATE),
    ),
    "DeleteTopics": Case(20, 6, lambda t, _p: {"topics": [{"name": t, "topic_id": uuid.UUID(int=0)}], "timeout": 30000}, _topic(Operation.DELETE), True),
    "CreatePartitions": Case(
        37, 3, lambda t, _p: {"topics": [{"name": t, "count": 2, "assignments": None}], "timeout": 30000, "validate_only": True}, _topic(Operation.ALTER), True
    ),
    "AlterConfigs/TOPIC": Case(33, 2, lambda t, _p: _config_values(2, t, False), _topic(Operation.ALTER_CONFIGS), True),
    "AlterConfigs/BROKER": Case(33, 2, lambda _t, _p: _config_values(4, str(BROKER_ID), False), lambda _t: (*CLUSTER, Operation.ALTER_CONFIGS)),
    "IncrementalAlterConfigs/TOPIC": Case(44, 1, lambda t, _p: _config_values(2, t, True), _topic(Operation.ALTER_CONFIGS), True),
    "IncrementalAlterConfigs/BROKER": Case(44, 1, lambda _t, _p: _config_values(4, "", True), lambda _t: (*CLUSTER, Operation.ALTER_CONFIGS)),
    "CreateAcls": Case(30, 3, lambda _t, p: {"creations": [_acl(p)]}, lambda _t: (*CLUSTER, Operation.ALTER)),
    "DeleteAcls": Case(31, 3, lambda _t, p: {"filters": [_delete_filter(p)]}, lambda _t: (*CLUSTER, Operation.ALTER)),
    "ElectLeaders": Case(
        43, 2, lambda t, _p: {"election_type": 0, "topic_partitions": [{"topic": t, "partitions": [0]}], "timeout": 30000}, _cluster(43), True
    ),
    "AlterPartitionReassignments": Case(
        45,
        0,
        lambda t, _p: {"timeout": 30000, "topics": [{"name": t, "partitions": [{"partition_index": 0, "replicas": [BROKER_ID]}]}]},
        _cluster(45),
        True,
    ),
    "ListPartitionReassignments": Case(46, 0, lambda _t, _p: {"timeout": 30000, "topics": None}, _cluster(46)),
    "AlterClientQuotas": Case(
        49,
        1,
        lambda _t, p: {
            "entries": [{"entity": [{"entity_type": "user", "entity_name": p}], "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}],
            "validate_only": True,
        },
        _cluster(49),
    ),
    "AlterUserScramCredentials": Case(
        51,
        0,
        lambda _t, p: {
            "deletions": [],
            "upsertions": [{"name": p, "mechanism": 1, "iterations": 4096, "salt": os.urandom(16), "salted_password": os.urandom(32)}],
        },
        _cluster(51),
    ),
    "DescribeQuorum": Case(
        55, 1, lambda _t, _p: {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}, _cluster(55)
    ),
    "UpdateFeatures": Case(
        57,
        1,
        lambda _t, _p: {"timeout": 30000, "feature_updates": [{"feature": "group.version", "max_version_level": 1, "upgrade_type": 1}], "validate_only": True},
        _cluster(57),
    ),
    # A token for another owner needs CREATE_TOKENS on that owner as a USER resource (granted: a token is made).
    "CreateDelegationToken/USER": Case(
        38,
        3,
        lambda t, _p: {"owner_principal_type": "User", "owner_principal_name": f"{t}-owner", "renewers": [], "max_lifetime": 60000},
        lambda t: (ResourceType.USER, f"User:{t}-owner", Operation.CREATE_TOKENS),
    ),
    # Allowed, these change nothing: no broker 99, and a voter key that is refused (a negative id) after the ACL.
    "UnregisterBroker": Case(64, 0, lambda _t, _p: {"broker_id": 99}, _cluster(64)),
    "AddRaftVoter": Case(
        80,
        1,
        lambda _t, _p: {"cluster_id": None, "timeout": 30000, "voter_id": -1, "voter_directory_id": NEW_VOTER_DIRECTORY, "listeners": []},
        _cluster(80),
    ),
    "RemoveRaftVoter": Case(81, 0, lambda _t, _p: {"cluster_id": None, "voter_id": -1, "voter_directory_id": NEW_VOTER_DIRECTORY}, _cluster(81)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_mapped_acl_is_exactly_enough(controller: Controller, name: str) -> None:
    case = CASES[name]
    principal_name = f"am-{uuid.uuid4().hex[:10]}"
    principal = Principal("User", principal_name)
    topic = f"am-topic-{uuid.uuid4().hex[:8]}"
    client = EnvelopeClient(controller)
    try:
        if case.needs_topic:
            client.create_topic(topic)
        denied = client.codes(principal, case.api_key, case.version, case.values(topic, principal_name))
        # Kafka names the resource kind that was refused: the topic (CreateTopics asks CLUSTER, then TOPIC), the owner, else the cluster.
        expected = 29 if case.api_key == 19 else DENIED_WITH[case.grant(topic)[0]]
        assert expected in denied, f"{name} without an ACL answered {denied} on {controller.kind}, not {AUTHORIZATION_FAILURES[expected]}"
        client.grant(principal, *case.grant(topic))
        allowed = poll(
            lambda: client.codes(principal, case.api_key, case.version, case.values(topic, principal_name)),
            lambda codes: not codes & AUTHORIZATION_FAILURES.keys(),
            ACL_PROPAGATION,
        )
        assert not allowed & AUTHORIZATION_FAILURES.keys(), f"{name} with {case.grant(topic)} answered {allowed} on {controller.kind}"
    finally:
        client.close()


def test_every_cluster_level_api_is_checked() -> None:
    """A new entry in the action map must come with its case here."""
    forwardable_cluster_apis = {key for key in CLUSTER_OPERATIONS if key not in (29, 48, 50)}  # those three are reads
    assert forwardable_cluster_apis <= {case.api_key for case in CASES.values()}
