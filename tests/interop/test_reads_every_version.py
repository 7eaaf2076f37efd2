"""Every read the proxy serves, at every version it advertises, through the proxy in front of the embedded controller
and in front of Kafka 4.3.1, compared with Kafka's own answer at that version (the node's broker listener, directly).

One scenario is made on both upstreams through their proxies (two topics, a topic config, ACLs, a client quota, a
SCRAM credential, and two real delegation tokens: one admin asked for an owner, one alice asked for another as its
requester), then each read is sent at each version as admin, alice and bob. An answer through the proxy in front of
Kafka must equal Kafka's own but for what docs/clients.md says the proxy answers itself: the brokers and the
controller of Metadata and DescribeCluster, and the node ids that partitions name. One through the proxy in front of
the embedded controller must equal Kafka's too, with what differs between two clusters evened out (topic ids, the
cluster id, each token's id, HMAC and times: its lifetimes compare relative to its issue time).
Everything is named with a per-run prefix and removed afterwards; the node is shared with the rest of the session.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from authz import Operation, PatternType, PermissionType, ResourceType
from devkit.kafka_node import KafkaNode
from envelope.apis import ApiKey
from envelope.principal import Principal
from proxy.forward.service import own_ranges
from tests.audit_records import assert_valid, records_under
from tests.interop.differential import CLOSED, Side, normalise, running_sides

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ADVERTISED = own_ranges()
"""The reads are not forwardable: the proxy advertises its own range for each (Kafka 4.3.1 serves the same ranges)."""
READS = (
    ApiKey.METADATA,
    ApiKey.DESCRIBE_CLUSTER,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.DESCRIBE_ACLS,
    ApiKey.DESCRIBE_CLIENT_QUOTAS,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    ApiKey.DESCRIBE_DELEGATION_TOKEN,
)
PROPAGATION = 15.0
"""Seconds the node's broker may take to learn what its controller committed."""
USERS = ("admin", "alice", "bob")
SCRAM_SHA_256 = 1
TIME_FIELDS = ("issue_timestamp", "expiry_timestamp", "max_timestamp")


@dataclass
class Made:
    """What one side's upstream made of the scenario: its topic ids, and its tokens (label -> (id, HMAC))."""

    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    tokens: dict[str, tuple[str, bytes]] = field(default_factory=dict)


@dataclass
class Scenario:
    prefix: str
    made: dict[str, Made]  # by side kind

    def name(self, suffix: str) -> str:
        return self.prefix + suffix


Values = Callable[[Made], dict[str, Any]]


@dataclass(frozen=True)
class Read:
    label: str
    user: str
    api: int
    version: int
    values: Values


# ------------------------------------------------------------------------------------------- the scenario


def _acl(resource_type: ResourceType, name: str, principal: str, operation: Operation) -> dict[str, Any]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": PatternType.LITERAL,
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": PermissionType.ALLOW,
    }


def _acls(s: Scenario) -> list[dict[str, Any]]:
    return [
        _acl(ResourceType.TOPIC, s.name("orders"), "User:alice", Operation.DESCRIBE),
        _acl(ResourceType.TOPIC, s.name("orders"), "User:bob", Operation.DESCRIBE_CONFIGS),
        _acl(ResourceType.USER, f"User:{s.name('owner')}", "User:alice", Operation.DESCRIBE_TOKENS),
        _acl(ResourceType.USER, f"User:{s.name('owner2')}", "User:alice", Operation.CREATE_TOKENS),
    ]


def _ok(side: Side, what: str, answer: Any, codes: Callable[[Any], list[int]]) -> Any:
    assert answer is not CLOSED and all(code == 0 for code in codes(answer)), (side.kind, what, answer)
    return answer


def _token(owner: str, renewers: list[str]) -> dict[str, Any]:
    return {
        "owner_principal_type": "User",
        "owner_principal_name": owner,
        "renewers": [{"principal_type": "User", "principal_name": r} for r in renewers],
        "max_lifetime": -1,
    }


def _set_up(side: Side, s: Scenario, made: Made) -> None:
    topics = [
        {
            "name": s.name("orders"),
            "num_partitions": 2,
            "replication_factor": 1,
            "assignments": [],
            "configs": [{"name": "retention.ms", "value": "7200000"}],
        },
        {"name": s.name("secret"), "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []},
    ]
    created = _ok(
        side,
        "topics",
        side.send("admin", "127.0.0.1", ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout": 30000, "validate_only": False}),
        lambda a: [int(t.error_code) for t in a.topics],
    )
    made.topic_ids.update({str(t.name): t.topic_id for t in created.topics})
    _ok(
        side,
        "acls",
        side.send("admin", "127.0.0.1", ApiKey.CREATE_ACLS, 3, {"creations": _acls(s)}),
        lambda a: [int(r.error_code) for r in a.results],
    )
    quota = {
        "entity": [{"entity_type": "user", "entity_name": s.name("user")}],
        "ops": [{"key": "consumer_byte_rate", "value": 4096.0, "remove": False}],
    }
    _ok(
        side,
        "quota",
        side.send("admin", "127.0.0.1", ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [quota], "validate_only": False}),
        lambda a: [int(e.error_code) for e in a.entries],
    )
    upsertion = {
        "name": s.name("user"),
        "mechanism": SCRAM_SHA_256,
        "iterations": 8192,
        "salt": b"\x01" * 16,
        "salted_password": b"\x02" * 32,
    }
    scram = {"deletions": [], "upsertions": [upsertion]}
    _ok(
        side,
        "credential",
        side.send("admin", "127.0.0.1", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, scram),
        lambda a: [int(r.error_code) for r in a.results],
    )
    # admin (a super user) asks a token for the owner, with bob as its renewer
    owned = _ok(
        side,
        "token",
        side.send("admin", "127.0.0.1", ApiKey.CREATE_DELEGATION_TOKEN, 3, _token(s.name("owner"), ["bob"])),
        lambda a: [int(a.error_code)],
    )
    made.tokens["owned"] = (str(owned.token_id), bytes(owned.hmac))
    # alice asks one for owner2 (CREATE_TOKENS on it): she is its requester only (KIP-373)
    asked = _until(
        lambda: side.send("alice", "127.0.0.1", ApiKey.CREATE_DELEGATION_TOKEN, 3, _token(s.name("owner2"), [])),
        lambda a: a is not CLOSED and int(a.error_code) == 0,
    )
    _ok(side, "requested token", asked, lambda a: [int(a.error_code)])
    made.tokens["requested"] = (str(asked.token_id), bytes(asked.hmac))


def _until(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float = PROPAGATION) -> Any:
    deadline = time.monotonic() + timeout
    seen = read()
    while not done(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = read()
    return seen


def _wait_for_the_broker(side: Side, s: Scenario) -> None:
    """Kafka's broker answers from metadata it learns after the controller commits: until it shows the scenario."""
    tokens = {"owners": [{"principal_type": "User", "principal_name": s.name(o)} for o in ("owner", "owner2")]}
    topics = {
        "topics": [{"name": s.name(t), "topic_id": None} for t in ("orders", "secret")],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    quota = {"components": [{"entity_type": "user", "match_type": 0, "match": s.name("user")}], "strict": True}
    ready: dict[str, tuple[Callable[[], Any], Callable[[Any], bool]]] = {
        "topics": (lambda: side.read("admin", ApiKey.METADATA, 12, topics), lambda a: all(len(t.partitions) > 0 for t in a.topics)),
        "tokens": (lambda: side.read("admin", ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, tokens), lambda a: len(a.tokens) == 2),
        "quota": (lambda: side.read("admin", ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, quota), lambda a: bool(a.entries)),
        "credential": (
            lambda: side.read("admin", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": s.name("user")}]}),
            lambda a: int(a.results[0].error_code) == 0,
        ),
        "acls": (
            lambda: side.read("alice", ApiKey.METADATA, 12, topics),
            lambda a: [int(t.error_code) for t in a.topics] == [0, 29],  # alice may DESCRIBE orders, not secret
        ),
    }
    for what, (read, done) in ready.items():
        assert done(_until(read, done)), f"{side.kind}: the broker did not show the scenario's {what} within {PROPAGATION}s"


def _tear_down(side: Side, s: Scenario, made: Made) -> None:
    for label, owner in (("owned", "owner"), ("requested", "owner2")):
        if label in made.tokens:  # expired by its owner (alice, its requester, may not)
            side.envelope(
                Principal("User", s.name(owner)),
                ApiKey.EXPIRE_DELEGATION_TOKEN,
                2,
                {"hmac": made.tokens[label][1], "expiry_time_period": -1},
            )
    filters = [
        {
            "resource_type_filter": a["resource_type"],
            "resource_name_filter": a["resource_name"],
            "pattern_type_filter": a["resource_pattern_type"],
            "principal_filter": a["principal"],
            "host_filter": a["host"],
            "operation": a["operation"],
            "permission_type": a["permission_type"],
        }
        for a in _acls(s)
    ]
    side.send("admin", "127.0.0.1", ApiKey.DELETE_ACLS, 3, {"filters": filters})
    names = [{"name": s.name(t), "topic_id": uuid.UUID(int=0)} for t in ("orders", "secret")]
    side.send("admin", "127.0.0.1", ApiKey.DELETE_TOPICS, 6, {"topics": names, "timeout": 30000})
    quota = {
        "entity": [{"entity_type": "user", "entity_name": s.name("user")}],
        "ops": [{"key": "consumer_byte_rate", "value": 0.0, "remove": True}],
    }
    side.send("admin", "127.0.0.1", ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [quota], "validate_only": False})
    side.send(
        "admin",
        "127.0.0.1",
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        0,
        {"deletions": [{"name": s.name("user"), "mechanism": SCRAM_SHA_256}], "upsertions": []},
    )


@pytest.fixture(scope="module")
def sides(kafka_node: KafkaNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side, Scenario]]:
    workdir = tmp_path_factory.mktemp("reads-every-version")
    scenario = Scenario(f"rv{uuid.uuid4().hex[:6]}-", {"embedded": Made(), "kafka": Made()})
    with running_sides(kafka_node, workdir) as (embedded, kafka):
        try:
            for side in (embedded, kafka):
                _set_up(side, scenario, scenario.made[side.kind])
            _wait_for_the_broker(kafka, scenario)
            yield embedded, kafka, scenario
        finally:
            for side in (embedded, kafka):
                _tear_down(side, scenario, scenario.made[side.kind])
    assert_valid(records_under(workdir))


# ------------------------------------------------------------------------------------------- the reads


def versions(api: int) -> range:
    served = ADVERTISED[api]
    return range(served.min, served.max + 1)


METADATA_FLAGS = {
    "allow_auto_topic_creation": False,
    "include_cluster_authorized_operations": True,
    "include_topic_authorized_operations": True,
}


def _metadata_reads(s: Scenario) -> list[Read]:
    def named(*topics: str) -> Values:
        return lambda _m: {**METADATA_FLAGS, "topics": [{"name": s.name(t), "topic_id": None} for t in topics]}

    def every(version: int) -> Values:
        return lambda _m: {**METADATA_FLAGS, "topics": [] if version == 0 else None}  # v0: an empty list is every topic

    def by_id(made: Made) -> dict[str, Any]:  # KIP-516: each upstream names its topics by its own ids
        return {**METADATA_FLAGS, "topics": [{"name": None, "topic_id": made.topic_ids[s.name(t)]} for t in ("orders", "secret")]}

    reads = []
    for v in versions(ApiKey.METADATA):
        reads += [
            Read("two topics and an unknown one", "admin", ApiKey.METADATA, v, named("orders", "secret", "missing")),
            Read("every topic", "admin", ApiKey.METADATA, v, every(v)),
            Read("one she may describe, one she may not", "alice", ApiKey.METADATA, v, named("orders", "secret")),
            Read("every topic she may describe", "alice", ApiKey.METADATA, v, every(v)),
            Read("none he may describe", "bob", ApiKey.METADATA, v, named("orders")),
        ]
        if v > 0:
            reads.append(Read("no topic", "admin", ApiKey.METADATA, v, named()))
        if v >= 12:
            reads += [
                Read("by topic id", "admin", ApiKey.METADATA, v, by_id),
                Read("by topic id, one denied", "alice", ApiKey.METADATA, v, by_id),
            ]
    return reads


def _reads(s: Scenario) -> dict[int, list[Read]]:
    acl_filter = {
        "resource_type_filter": ResourceType.TOPIC,
        "resource_name_filter": s.name("orders"),
        "pattern_type_filter": PatternType.LITERAL,
        "principal_filter": None,
        "host_filter": None,
        "operation": Operation.ANY,
        "permission_type": PermissionType.ANY,
    }
    token_acls = {**acl_filter, "resource_type_filter": ResourceType.USER, "resource_name_filter": f"User:{s.name('owner')}"}
    quota_filter = {"components": [{"entity_type": "user", "match_type": 0, "match": s.name("user")}], "strict": True}
    scram_users = {"users": [{"name": s.name("user")}, {"name": s.name("nobody")}]}
    owners = {"owners": [{"principal_type": "User", "principal_name": s.name(o)} for o in ("owner", "owner2")]}
    orders = {"resource_type": 2, "resource_name": s.name("orders")}

    def configs(keys: list[str] | None, synonyms: bool, documentation: bool = False) -> Values:
        return lambda _m: {
            "resources": [{**orders, "configuration_keys": keys}],
            "include_synonyms": synonyms,
            "include_documentation": documentation,
        }

    def fixed(values: dict[str, Any]) -> Values:
        return lambda _m: values

    per_api: dict[int, list[Read]] = {ApiKey.METADATA: _metadata_reads(s)}
    for v in versions(ApiKey.DESCRIBE_CLUSTER):
        cluster = fixed({"include_cluster_authorized_operations": True, "endpoint_type": 1, "include_fenced_brokers": False})
        per_api.setdefault(ApiKey.DESCRIBE_CLUSTER, []).extend(Read("the cluster", u, ApiKey.DESCRIBE_CLUSTER, v, cluster) for u in USERS)
    for v in versions(ApiKey.DESCRIBE_CONFIGS):
        per_api.setdefault(ApiKey.DESCRIBE_CONFIGS, []).extend(
            [
                Read(
                    "every config of a topic, with synonyms and documentation",
                    "admin",
                    ApiKey.DESCRIBE_CONFIGS,
                    v,
                    configs(None, True, True),
                ),
                Read("two keys, no synonyms", "admin", ApiKey.DESCRIBE_CONFIGS, v, configs(["retention.ms", "cleanup.policy"], False)),
                Read("a topic she may not describe the configs of", "alice", ApiKey.DESCRIBE_CONFIGS, v, configs(["retention.ms"], True)),
                Read("one he may", "bob", ApiKey.DESCRIBE_CONFIGS, v, configs(["retention.ms"], True)),
            ]
        )
    for v in versions(ApiKey.DESCRIBE_ACLS):
        per_api.setdefault(ApiKey.DESCRIBE_ACLS, []).extend(
            [
                Read("a topic's ACLs", "admin", ApiKey.DESCRIBE_ACLS, v, fixed(acl_filter)),
                Read("a user resource's ACLs", "admin", ApiKey.DESCRIBE_ACLS, v, fixed(token_acls)),
                Read("not allowed", "alice", ApiKey.DESCRIBE_ACLS, v, fixed(acl_filter)),
            ]
        )
    for v in versions(ApiKey.DESCRIBE_CLIENT_QUOTAS):
        per_api.setdefault(ApiKey.DESCRIBE_CLIENT_QUOTAS, []).extend(
            Read("a user's quota", u, ApiKey.DESCRIBE_CLIENT_QUOTAS, v, fixed(quota_filter)) for u in ("admin", "alice")
        )
    for v in versions(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS):
        per_api.setdefault(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, []).extend(
            Read("a user with a credential and one without", u, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, v, fixed(scram_users))
            for u in ("admin", "alice")
        )
    for v in versions(ApiKey.DESCRIBE_DELEGATION_TOKEN):
        per_api.setdefault(ApiKey.DESCRIBE_DELEGATION_TOKEN, []).extend(
            [
                Read("a super user sees both", "admin", ApiKey.DESCRIBE_DELEGATION_TOKEN, v, fixed(owners)),
                Read("every token a super user may see", "admin", ApiKey.DESCRIBE_DELEGATION_TOKEN, v, fixed({"owners": None})),
                # DESCRIBE_TOKENS on owner, and the requester of owner2's: both, at every version (filterToken)
                Read("alice by ACL and as requester", "alice", ApiKey.DESCRIBE_DELEGATION_TOKEN, v, fixed(owners)),
                Read("bob as renewer", "bob", ApiKey.DESCRIBE_DELEGATION_TOKEN, v, fixed(owners)),
                Read("no owner asked", "bob", ApiKey.DESCRIBE_DELEGATION_TOKEN, v, fixed({"owners": []})),
            ]
        )
    return per_api


# ------------------------------------------------------------------------------------------- comparing


def _nodes(partition: dict[str, Any]) -> dict[str, Any]:
    """docs/clients.md: the node ids partitions name are the proxy's to choose (its broker view), not compared."""
    return {**partition, **{k: "<nodes>" for k in ("leader_id", "replica_nodes", "isr_nodes", "offline_replicas") if k in partition}}


def view(api: int, answer: Any, s: Scenario, made: Made, *, other_cluster: bool) -> Any:
    """An answer as compared: `normalise`d (no throttle, entries in one order, a cluster denial's text), the brokers
    and controller of Metadata and DescribeCluster left out, and only the scenario's own topics and tokens; with
    `other_cluster` (the embedded controller's answer against Kafka's) also the ids and times two clusters differ in."""
    seen = normalise(answer, topic_ids=other_cluster)
    if not isinstance(seen, dict):
        return seen
    seen = {k: v for k, v in seen.items() if k not in ("brokers", "controller_id")}
    if other_cluster and seen.get("cluster_id"):
        seen["cluster_id"] = "<cluster-id>"
    if api == ApiKey.METADATA:
        topics = [t for t in seen["topics"] if t["name"] is None or str(t["name"]).startswith(s.prefix)]
        seen["topics"] = [{**t, "partitions": [_nodes(p) for p in t["partitions"]]} for t in topics]
    if api == ApiKey.DESCRIBE_CONFIGS and other_cluster:
        seen["results"] = [{**r, "configs": [_without_static(c) for c in r["configs"]]} for r in seen["results"]]
    if api == ApiKey.DESCRIBE_DELEGATION_TOKEN:
        tokens = [t for t in seen["tokens"] if str(t["principal_name"]).startswith(s.prefix)]
        seen["tokens"] = [_token_view(t, made) if other_cluster else t for t in tokens]
    return seen


STATIC_BROKER_CONFIG = 4
"""ConfigSource of a broker's server.properties: the node's own (it sets min.insync.replicas=1 there, the embedded
controller as the cluster's dynamic default, as a freshly formatted cluster has it), not what a read answers."""


def _without_static(config: dict[str, Any]) -> dict[str, Any]:
    synonyms = config.get("synonyms")
    if not synonyms:
        return config
    return {**config, "synonyms": [s for s in synonyms if s["source"] != STATIC_BROKER_CONFIG]}


def _token_view(token: dict[str, Any], made: Made) -> dict[str, Any]:
    labels = {token_id: label for label, (token_id, _) in made.tokens.items()}
    issued = token["issue_timestamp"]
    view = {**token, "token_id": f"<{labels.get(token['token_id'], '?')}>", "hmac": f"<{len(token['hmac']) // 2}-byte hmac>"}
    view.update({name: f"issued{(token[name] - issued) // 1000:+d}s" for name in TIME_FIELDS})
    return view


@dataclass
class Difference:
    read: Read
    side: str
    proxy: Any
    kafka: Any

    def __str__(self) -> str:
        return f"{ApiKey(self.read.api).name} v{self.read.version} as {self.read.user}, {self.read.label} (through the proxy in front of {self.side}):\n  proxy: {self.proxy}\n  kafka: {self.kafka}"


def _compare(embedded: Side, kafka: Side, s: Scenario, read: Read) -> list[Difference]:
    kafka_made, embedded_made = s.made["kafka"], s.made["embedded"]
    direct = kafka.read(read.user, read.api, read.version, read.values(kafka_made))
    differences = []
    for side, made in ((kafka, kafka_made), (embedded, embedded_made)):
        other = side is embedded
        through = side.send(read.user, "127.0.0.1", read.api, read.version, read.values(made))
        mine, theirs = view(read.api, through, s, made, other_cluster=other), view(read.api, direct, s, kafka_made, other_cluster=other)
        if mine != theirs:
            differences.append(Difference(read, side.kind, mine, theirs))
    return differences


def test_every_read_and_version_is_asked() -> None:
    asked = {(r.api, r.version) for reads in _reads(Scenario("p-", {})).values() for r in reads}
    assert asked == {(api, v) for api in READS for v in versions(api)}


@pytest.mark.parametrize("api", READS, ids=[ApiKey(api).name.lower() for api in READS])
def test_a_read_at_every_version_answers_as_kafka(sides: tuple[Side, Side, Scenario], api: int) -> None:
    embedded, kafka, scenario = sides
    differences = [d for read in _reads(scenario)[api] for d in _compare(embedded, kafka, scenario, read)]
    assert not differences, f"{len(differences)} answers differ from Kafka's:\n" + "\n".join(map(str, differences))
