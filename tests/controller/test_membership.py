"""UnregisterBroker, AddRaftVoter and RemoveRaftVoter in the embedded controller: Kafka 4.3's refusals, in its
order and words (checked against a node in the differential suite), and UNSUPPORTED_VERSION for a change the
embedded controller cannot make."""

from __future__ import annotations

import base64
import ipaddress
import uuid
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from authz import AclAuthorizer, RequestContext
from controller.config import parse_controller_config
from controller.handlers import Handlers
from controller.image import MetadataImage
from controller.leadership import Leadership
from controller.membership import directory_id
from controller.server import EmbeddedController
from devkit import wire
from devkit.processes import free_port
from envelope import kafka_uuid
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_response, request_schema, response_schema
from envelope.principal import Principal
from envelope.wrap import unwrap, wrap
from envelope_proxy.embedded import controller_properties
from proxy.net.addresses import ControllerAddress

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
DIRECTORY = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
DIRECTORY_TEXT = kafka_uuid.to_text(DIRECTORY)
ADMIN = RequestContext(principal=Principal("User", "admin"), client_address=ipaddress.ip_address("127.0.0.1"), listener="CONTROLLER", security_protocol="SASL_PLAINTEXT")
ALICE = RequestContext(principal=Principal("User", "alice"), client_address=ipaddress.ip_address("127.0.0.1"), listener="CONTROLLER", security_protocol="SASL_PLAINTEXT")


def handlers(*, voters: tuple[int, ...] = (), active: int = 1, kraft_version: int = 1, brokers: int = 3) -> Handlers:
    addresses = tuple(ControllerAddress("127.0.0.1", 9000 + n, n) for n in voters)
    leadership = Leadership(1, addresses, active, cluster_id=CLUSTER_ID)
    image = MetadataImage(finalized_features={"metadata.version": 30, "kraft.version": kraft_version})
    return Handlers(image, AclAuthorizer(["User:admin"]), leadership=leadership, default_partitions=1, default_replication_factor=1, broker_count=brokers)


def call(h: Handlers, api: ApiKey, values: dict[str, Any], context: RequestContext = ADMIN) -> tuple[int, str | None]:
    version = 1 if api == ApiKey.ADD_RAFT_VOTER else 0
    answer = h.by_key[api](build_entity(request_schema(api, version), values), context)
    encode_response(build_entity(response_schema(api, version), answer), correlation_id=1)
    return int(answer["error_code"]), answer["error_message"]


def add(voter_id: int = 2, directory: uuid.UUID | None = DIRECTORY, cluster_id: str | None = None, listeners: list[tuple[str, str, int]] | None = None) -> dict[str, Any]:
    endpoints = [("CONTROLLER", "10.0.0.2", 9093)] if listeners is None else listeners
    return {
        "cluster_id": cluster_id,
        "timeout": 30_000,
        "voter_id": voter_id,
        "voter_directory_id": directory,
        "listeners": [{"name": n, "host": h, "port": p} for n, h, p in endpoints],
        "ack_when_committed": True,
    }


def remove(voter_id: int = 2, directory: uuid.UUID | None = DIRECTORY, cluster_id: str | None = None) -> dict[str, Any]:
    return {"cluster_id": cluster_id, "voter_id": voter_id, "voter_directory_id": directory}


def test_unregister_broker_needs_alter_and_a_registered_id() -> None:
    h = handlers()
    code, message = call(h, ApiKey.UNREGISTER_BROKER, {"broker_id": 3}, ALICE)
    assert code == ErrorCode.cluster_authorization_failed and message is not None and message.endswith("needs ALTER permission.")
    assert call(h, ApiKey.UNREGISTER_BROKER, {"broker_id": 4}) == (ErrorCode.broker_id_not_registered, "Broker ID 4 is not currently registered")
    assert call(h, ApiKey.UNREGISTER_BROKER, {"broker_id": -1}) == (ErrorCode.broker_id_not_registered, "Broker ID -1 is not currently registered")
    code, message = call(h, ApiKey.UNREGISTER_BROKER, {"broker_id": 2})
    assert code == ErrorCode.unsupported_version and message is not None and "embedded.broker.count" in message


def test_voter_changes_need_alter_and_answer_with_kafkas_default_message() -> None:
    h = handlers()
    assert call(h, ApiKey.ADD_RAFT_VOTER, add(), ALICE) == (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    assert call(h, ApiKey.REMOVE_RAFT_VOTER, remove(), ALICE) == (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")


@pytest.mark.parametrize("api", [ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER])
def test_the_raft_checks_in_kafkas_order(api: ApiKey) -> None:
    h = handlers()
    values = add if api == ApiKey.ADD_RAFT_VOTER else remove
    change = "Add" if api == ApiKey.ADD_RAFT_VOTER else "Remove"
    assert call(h, api, values(cluster_id="other", voter_id=-1)) == (ErrorCode.inconsistent_cluster_id, f'The given id "other" doesn\'t match the cluster id "{CLUSTER_ID}"')
    assert call(h, api, values(voter_id=-1)) == (ErrorCode.invalid_request, f"{change} voter request didn't include a valid voter")
    assert call(h, api, values(directory=uuid.UUID(int=0))) == (ErrorCode.invalid_request, f"{change} voter request didn't include a valid voter")
    follower = handlers(voters=(1, 2, 3), active=2)
    assert call(follower, api, values(cluster_id=CLUSTER_ID, voter_id=-1)) == (ErrorCode.not_leader_or_follower, None)


def test_a_new_voter_needs_an_endpoint_on_the_controller_listener() -> None:
    h = handlers()
    assert call(h, ApiKey.ADD_RAFT_VOTER, add(listeners=[])) == (
        ErrorCode.invalid_request,
        "Add voter request didn't include the endpoint (Endpoints(endpoints={})) for the default listener ListenerName(CONTROLLER)",
    )
    code, message = call(h, ApiKey.ADD_RAFT_VOTER, add(listeners=[("broker", "h", 1), ("X", "h", 2)]))
    assert (code, message) == (
        ErrorCode.invalid_request,
        "Add voter request didn't include the endpoint (Endpoints(endpoints={ListenerName(X)=h/<unresolved>:2, ListenerName(BROKER)=h/<unresolved>:1}))"
        " for the default listener ListenerName(CONTROLLER)",
    )
    # the name is normalised to upper case, as Kafka's ListenerName.normalised
    assert call(h, ApiKey.ADD_RAFT_VOTER, add(voter_id=1, listeners=[("controller", "h", 1)]))[0] == ErrorCode.duplicate_voter


def test_a_static_quorum_cannot_change_its_voters() -> None:
    h = handlers(voters=(1, 2, 3), kraft_version=0)
    assert call(h, ApiKey.ADD_RAFT_VOTER, add(voter_id=4)) == (ErrorCode.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0")
    assert call(h, ApiKey.REMOVE_RAFT_VOTER, remove(voter_id=2)) == (
        ErrorCode.unsupported_version,
        "Cluster doesn't support removing voter because the kraft.version feature is 0",
    )


def test_a_lone_dynamic_controller_refuses_duplicates_and_never_loses_its_last_voter() -> None:
    h = handlers()
    own = f"[ReplicaKey(id=1, directoryId={directory_id(CLUSTER_ID, 1)})]"
    asked = f"ReplicaKey(id=1, directoryId={DIRECTORY_TEXT})"
    assert call(h, ApiKey.ADD_RAFT_VOTER, add(voter_id=1)) == (ErrorCode.duplicate_voter, f"The voter id for {asked} is already part of the set of voters {own}.")
    assert call(h, ApiKey.REMOVE_RAFT_VOTER, remove(voter_id=1)) == (ErrorCode.voter_not_found, f"Cannot remove voter {asked} from the set of voters {own}")
    exact = uuid.UUID(bytes=base64.urlsafe_b64decode(directory_id(CLUSTER_ID, 1) + "=="))
    assert call(h, ApiKey.REMOVE_RAFT_VOTER, remove(voter_id=1, directory=exact))[0] == ErrorCode.voter_not_found  # the last voter stays
    assert call(h, ApiKey.REMOVE_RAFT_VOTER, remove(voter_id=7, cluster_id=CLUSTER_ID))[0] == ErrorCode.voter_not_found
    code, message = call(h, ApiKey.ADD_RAFT_VOTER, add(voter_id=2))
    assert code == ErrorCode.unsupported_version and message is not None and "runs no Raft" in message


class Follower:
    """Node 1 of a three-voter static quorum led by node 2: what reaches it in an Envelope."""

    def __init__(self) -> None:
        self.port = free_port()
        voters = f"1@127.0.0.1:{self.port},2@127.0.0.1:{free_port()},3@127.0.0.1:{free_port()}"
        props = {**controller_properties(port=self.port), "controller.quorum.voters": voters, "embedded.controller.active.id": "2", "cluster.id": CLUSTER_ID}
        self.controller = EmbeddedController(parse_controller_config(props))

    def envelope(self, api: ApiKey, version: int, values: dict[str, Any]) -> tuple[int, Any]:
        with wire.connect(f"127.0.0.1:{self.port}") as sock:
            assert wire.sasl_plain_login(sock, "proxy", "proxy-secret") == 0
            inner = wire.request(api, version, values, correlation_id=77)
            error, data = unwrap(wire.exchange(sock, wrap(inner, Principal("User", "admin"), "127.0.0.1", correlation_id=5)))
            return error, None if data is None else decode_response_body(api, version, data)[1]


async def test_at_a_follower_unregister_gets_not_controller_and_voter_changes_not_leader_or_follower(nursery: Any) -> None:
    follower = Follower()
    await nursery.start(follower.controller.run)
    error, body = await trio.to_thread.run_sync(follower.envelope, ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 1})
    assert (error, body) == (ErrorCode.not_controller, None)
    error, body = await trio.to_thread.run_sync(follower.envelope, ApiKey.ADD_RAFT_VOTER, 1, add(voter_id=4))
    assert (error, body.error_code, body.error_message) == (ErrorCode.none, ErrorCode.not_leader_or_follower, None)
    error, body = await trio.to_thread.run_sync(follower.envelope, ApiKey.REMOVE_RAFT_VOTER, 0, remove(cluster_id="x"))
    assert (error, body.error_code) == (ErrorCode.none, ErrorCode.inconsistent_cluster_id)  # the cluster id is checked first


def _described_directories(h: Handlers) -> list[uuid.UUID | None]:
    body = build_entity(request_schema(ApiKey.DESCRIBE_QUORUM, 2), {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
    answer = h.by_key[ApiKey.DESCRIBE_QUORUM](body, ADMIN)
    return [v["replica_directory_id"] for v in answer["topics"][0]["partitions"][0]["current_voters"]]


def test_describe_quorum_shows_the_directory_id_the_voter_changes_name() -> None:
    """A --standalone node's voter has a directory id (kafka-metadata-quorum remove-controller needs it); static voters none."""
    (directory,) = _described_directories(handlers())
    assert directory is not None and kafka_uuid.to_text(directory) == directory_id(CLUSTER_ID, 1)
    message = call(handlers(), ApiKey.REMOVE_RAFT_VOTER, remove(voter_id=1, directory=directory))[1]
    assert message == f"Cannot remove voter ReplicaKey(id=1, directoryId={directory_id(CLUSTER_ID, 1)}) from the set of voters [ReplicaKey(id=1, directoryId={directory_id(CLUSTER_ID, 1)})]"
    assert _described_directories(handlers(voters=(1, 2, 3), kraft_version=0)) == [None, None, None]


def _describe_quorum(topics: list[tuple[str, list[int]]], context: RequestContext = ADMIN) -> dict[str, Any]:
    values = {"topics": [{"topic_name": name, "partitions": [{"partition_index": i} for i in indexes]} for name, indexes in topics]}
    answer: dict[str, Any] = handlers().by_key[ApiKey.DESCRIBE_QUORUM](build_entity(request_schema(ApiKey.DESCRIBE_QUORUM, 2), values), context)
    encode_response(build_entity(response_schema(ApiKey.DESCRIBE_QUORUM, 2), answer), correlation_id=1)
    return answer


def test_describe_quorum_answers_in_kafka_4_3_1s_words() -> None:
    """What a real 4.3.1 node answered to the same requests (found by an outside differential check)."""
    described = _describe_quorum([("__cluster_metadata", [0])])
    assert (described["error_message"], described["topics"][0]["partitions"][0]["error_message"]) == ("", "")
    assert (described["topics"][0]["partitions"][0]["leader_id"], described["topics"][0]["partitions"][0]["leader_epoch"]) == (1, 1)
    denied = _describe_quorum([("__cluster_metadata", [0])], ALICE)
    assert (denied["error_code"], denied["error_message"], denied["topics"]) == (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.", [])


@pytest.mark.parametrize(
    "topics",
    [[("orders", [0])], [("__cluster_metadata", [1])], [("__cluster_metadata", [0, 1])], [("__cluster_metadata", [0]), ("orders", [0, 2])]],
)
def test_describe_quorum_naming_more_or_other_than_the_metadata_partition_gets_unknown_on_each(topics: list[tuple[str, list[int]]]) -> None:
    """KafkaRaftClient answers a request that is not exactly __cluster_metadata-0 with UNKNOWN_TOPIC_OR_PARTITION
    on every partition it names, the schema's defaults elsewhere, and no nodes."""
    answer = _describe_quorum(topics)
    assert (answer["error_code"], answer["error_message"], answer["nodes"]) == (ErrorCode.none, "", [])
    got = [
        (t["topic_name"], p["partition_index"], p["error_code"], p["error_message"], p["leader_id"], p["leader_epoch"], p["current_voters"])
        for t in answer["topics"]
        for p in t["partitions"]
    ]
    unknown = "This server does not host this topic-partition."
    assert got == [(name, i, ErrorCode.unknown_topic_or_partition, unknown, 0, 0, []) for name, indexes in topics for i in indexes]
