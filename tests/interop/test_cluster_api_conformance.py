"""Validation of the cluster-level admin APIs: the embedded controller answers what a real Kafka controller answers.

Each case is sent in an Envelope as User:admin (a super user on both), so
only validation speaks; the expected codes are written once and hold for both
upstreams. Codes are the set of every error code in the answer (top level and
per resource), 0 included when some part succeeded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey
from tests.interop.envelope_client import BROKER_ID, Controller, EnvelopeClient, unique_topic


@dataclass(frozen=True)
class Case:
    api_key: int
    version: int
    values: Callable[[str], dict[str, Any]]  # an existing one-partition topic -> request
    codes: set[int]


def _quota(entity: list[tuple[str, str | None]], key: str, value: float, validate_only: bool = True) -> dict[str, Any]:
    return {
        "entries": [
            {
                "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
                "ops": [{"key": key, "value": value, "remove": False}],
            }
        ],
        "validate_only": validate_only,
    }


def _upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> dict[str, Any]:
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": os.urandom(16), "salted_password": os.urandom(32)}


def _reassign(topic: str, partition: int, replicas: list[int] | None) -> dict[str, Any]:
    return {"timeout": 30000, "topics": [{"name": topic, "partitions": [{"partition_index": partition, "replicas": replicas}]}]}


def _elect(topic: str, partition: int) -> dict[str, Any]:
    return {"election_type": 0, "topic_partitions": [{"topic": topic, "partitions": [partition]}], "timeout": 30000}


CASES: dict[str, Case] = {
    "quota: a valid user quota, validate only": Case(ApiKey.ALTER_CLIENT_QUOTAS, 1, lambda _t: _quota([("user", "cc-alice")], "producer_byte_rate", 1024.0), {ErrorCode.none}),
    "quota: the default client-id": Case(ApiKey.ALTER_CLIENT_QUOTAS, 1, lambda _t: _quota([("client-id", None)], "request_percentage", 50.0), {ErrorCode.none}),
    "quota: an unknown key": Case(ApiKey.ALTER_CLIENT_QUOTAS, 1, lambda _t: _quota([("user", "cc-alice")], "no_such_quota", 1.0), {ErrorCode.none, ErrorCode.invalid_request}),
    "quota: ip combined with user": Case(
        49, 1, lambda _t: _quota([("user", "cc-alice"), ("ip", "127.0.0.1")], "producer_byte_rate", 1.0), {ErrorCode.none, ErrorCode.invalid_request}
    ),
    "quota: an unknown entity type": Case(ApiKey.ALTER_CLIENT_QUOTAS, 1, lambda _t: _quota([("group", "g")], "producer_byte_rate", 1.0), {ErrorCode.none, ErrorCode.invalid_request}),
    "quota: a user key on an ip": Case(ApiKey.ALTER_CLIENT_QUOTAS, 1, lambda _t: _quota([("ip", "127.0.0.1")], "producer_byte_rate", 1.0), {ErrorCode.none, ErrorCode.invalid_request}),
    "quota: a connection rate on an ip": Case(ApiKey.ALTER_CLIENT_QUOTAS, 1, lambda _t: _quota([("ip", "127.0.0.1")], "connection_creation_rate", 10.0), {ErrorCode.none}),
    "scram: too few iterations": Case(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda _t: {"deletions": [], "upsertions": [_upsert("cc-u1", iterations=1000)]}, {ErrorCode.none, ErrorCode.unacceptable_credential}),
    "scram: too many iterations": Case(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda _t: {"deletions": [], "upsertions": [_upsert("cc-u2", iterations=20000)]}, {ErrorCode.none, ErrorCode.unacceptable_credential}),
    "scram: an unknown mechanism": Case(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda _t: {"deletions": [], "upsertions": [_upsert("cc-u3", mechanism=9)]}, {ErrorCode.none, ErrorCode.unsupported_sasl_mechanism}),
    "scram: deleting what does not exist": Case(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda _t: {"deletions": [{"name": "cc-nobody", "mechanism": 1}], "upsertions": []}, {ErrorCode.none, ErrorCode.resource_not_found}),
    "scram: one user upserted twice": Case(
        51, 0, lambda _t: {"deletions": [], "upsertions": [_upsert("cc-twice"), _upsert("cc-twice", mechanism=2)]}, {ErrorCode.none, ErrorCode.duplicate_resource}
    ),
    "scram: deleting what does not exist wins over twice": Case(
        51, 0, lambda _t: {"deletions": [{"name": "cc-twice2", "mechanism": 2}], "upsertions": [_upsert("cc-twice2")]}, {ErrorCode.none, ErrorCode.resource_not_found}
    ),
    "scram: an empty user name": Case(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda _t: {"deletions": [], "upsertions": [_upsert("")]}, {ErrorCode.none, ErrorCode.unacceptable_credential}),
    "elect: an unknown topic": Case(ApiKey.ELECT_LEADERS, 2, lambda _t: _elect(unique_topic("cc-missing"), 0), {ErrorCode.none, ErrorCode.unknown_topic_or_partition}),
    "elect: the preferred leader already leads": Case(ApiKey.ELECT_LEADERS, 2, lambda t: _elect(t, 0), {ErrorCode.none, ErrorCode.election_not_needed}),
    "reassign: an unregistered broker": Case(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, lambda t: _reassign(t, 0, [BROKER_ID, 99]), {ErrorCode.none, ErrorCode.invalid_replica_assignment}),
    "reassign: a broker twice": Case(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, lambda t: _reassign(t, 0, [BROKER_ID, BROKER_ID]), {ErrorCode.none, ErrorCode.invalid_replica_assignment}),
    "reassign: an empty replica list": Case(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, lambda t: _reassign(t, 0, []), {ErrorCode.none, ErrorCode.invalid_replica_assignment}),
    "reassign: cancel with nothing ongoing": Case(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, lambda t: _reassign(t, 0, None), {ErrorCode.none, ErrorCode.no_reassignment_in_progress}),
    "reassign: an unknown partition": Case(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, lambda t: _reassign(t, 7, [BROKER_ID]), {ErrorCode.none, ErrorCode.unknown_topic_or_partition}),
    "reassign: to the current replicas": Case(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, lambda t: _reassign(t, 0, [BROKER_ID]), {ErrorCode.none}),
    "list reassignments": Case(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, lambda _t: {"timeout": 30000, "topics": None}, {ErrorCode.none}),
    "features: an unknown feature": Case(
        57,
        1,
        lambda _t: {"timeout": 30000, "feature_updates": [{"feature": "no.such.feature", "max_version_level": 1, "upgrade_type": 1}], "validate_only": True},
        {ErrorCode.invalid_update_version},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_validation_matches_kafka(controller: Controller, name: str) -> None:
    case = CASES[name]
    client = EnvelopeClient(controller)
    try:
        topic = unique_topic("cc-topic")
        client.create_topic(topic)
        codes = client.admin_codes(case.api_key, case.version, case.values(topic))
    finally:
        client.close()
    assert codes == case.codes, f"{name} on {controller.kind}"
