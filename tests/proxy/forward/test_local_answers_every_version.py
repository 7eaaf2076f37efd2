"""Every answer the proxy builds itself, at every version it advertises, is one a Kafka 4.3 broker could send.

Inputs are generated: listeners advertised as IPv4, IPv6 and DNS names, node ids, cluster ids and correlation
ids; request bodies of every shape kio can write at that version (null and empty topic lists, duplicate names,
any endpoint type, any flag); and what the read upstream and the edge authorizer answer. Each frame is read
with kio's own strict reader (it refuses a tagged field it does not know) at the version the client asked, and:

- keeps the correlation id, in the header version Kafka uses for that version (ApiVersions: always v0);
- encodes back to the same bytes, and reads the same through the proxy's own bounded decoder;
- answers throttle_time_ms 0 (an upstream's throttle is the proxy's quota, not the client's);
- leaves every tagged field at its default, so none is written (Kafka writes none in these answers);
- is null only where Kafka is: rack, error_message without an error, a DescribeClientQuotas error's entries;
- carries the cluster's id wherever the version has the field, except in the error answers where Kafka's is empty.

librdkafka crashed on one of these (a null ClusterId in Metadata v13, docs/clients.md); the interop twin of
this file, tests/interop/test_local_answers_kafka.py, compares the same answers with a real broker's bytes.
"""

import dataclasses
import datetime
import ipaddress
import typing
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from trio.testing import MockClock

import apiversions
from apiversions import VersionRange
from authz import Operation, RequestContext, ResourceType
from authz.actions import CLUSTER_OPERATIONS, SUPPORTED_OPERATIONS, ResourceAccess, operations_field
from authz.admin_apis import SERVED_ADMIN_APIS, error_response
from envelope import kafka_uuid
from envelope.apis import ApiKey, EndpointType
from envelope.build import build_entity
from envelope.codec import decode_body, decode_response_body, encode_request, encode_response, request_schema, response_schema
from envelope.error_messages import default_message
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import Principal
from envelope.responses import AUTHORIZED_OPERATIONS_OMITTED
from proxy.forward.broker_view import RETRY_AFTER, BrokerSet, BrokerView, ClusterBroker
from proxy.forward.local import describe_cluster_response, metadata_response
from proxy.forward.read_routes import CLUSTER_GATED_READS, READ_ROUTES
from proxy.forward.reads import ReadPath
from proxy.forward.service import own_ranges
from proxy.net.addresses import ControllerAddress
from proxy.net.settings import ListenerConfig
from proxy.upstream.cluster_identity import ClusterIdentity
from tests.proxy.forward.harness import CLUSTER_ID, Proxy

ADVERTISED = own_ranges()
"""What the proxy advertises for the APIs it answers itself (none of them is forwarded, so no intersection)."""
MIN_INT32 = -(2**31)
ZERO_UUID = uuid.UUID(int=0)
BROKER_ID = 1  # the upstream's own broker
UPSTREAM_BROKERS = [
    {"node_id": BROKER_ID, "host": "broker.example.com", "port": 9092, "rack": "r1"},
    {"node_id": 3, "host": "broker-3.example.com", "port": 9092, "rack": None},
]
UPSTREAM_VIEW = BrokerSet(
    (
        ClusterBroker(BROKER_ID, "r1", ControllerAddress("broker.example.com", 9092, BROKER_ID)),
        ClusterBroker(3, None, ControllerAddress("broker-3.example.com", 9092, 3)),
    ),
    BROKER_ID,
    from_upstream=True,
)
"""The brokers every answer through the proxy lists, at the proxy's address, when the upstream lists UPSTREAM_BROKERS."""

# Kafka's flexibleVersions (the *.json message definitions): from these on, a response header is v1 (a tag section).
FIRST_FLEXIBLE: dict[int, int] = {
    ApiKey.METADATA: 9,
    ApiKey.API_VERSIONS: 3,  # its body only: the header stays v0 so that any client can read the answer
    ApiKey.CREATE_TOPICS: 5,
    ApiKey.DELETE_TOPICS: 4,
    ApiKey.DESCRIBE_ACLS: 2,
    ApiKey.CREATE_ACLS: 2,
    ApiKey.DELETE_ACLS: 2,
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.ALTER_CONFIGS: 2,
    ApiKey.CREATE_PARTITIONS: 2,
    ApiKey.ELECT_LEADERS: 2,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: 1,
    ApiKey.ALTER_CLIENT_QUOTAS: 1,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.DESCRIBE_QUORUM: 0,
    ApiKey.UPDATE_FEATURES: 0,
    ApiKey.DESCRIBE_CLUSTER: 0,
    ApiKey.CREATE_DELEGATION_TOKEN: 2,
    ApiKey.RENEW_DELEGATION_TOKEN: 2,
    ApiKey.EXPIRE_DELEGATION_TOKEN: 2,
    ApiKey.UNREGISTER_BROKER: 0,
    ApiKey.ADD_RAFT_VOTER: 0,
    ApiKey.REMOVE_RAFT_VOTER: 0,
}

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def versions(api_key: int) -> list[int]:
    served = ADVERTISED[api_key]
    return list(range(served.min, served.max + 1))


# -- what every answer must be --------------------------------------------------------------------


def read_answer(api_key: int, version: int, frame: bytes, correlation_id: int) -> Any:
    """The body of a whole response frame, read by kio's strict reader; the frame-level checks done."""
    schema = response_schema(api_key, version)
    header_schema = schema.__header_schema__
    expected_header = 1 if api_key != ApiKey.API_VERSIONS and version >= FIRST_FLEXIBLE.get(api_key, 1 << 15) else 0
    assert header_schema.__version__ == expected_header, f"{api_key} v{version}: response header v{header_schema.__version__}"
    header, offset = entity_reader(header_schema)(frame, 0)
    assert header.correlation_id == correlation_id
    assert offset == (5 if expected_header else 4)  # v1: the correlation id, then an empty tag section
    body, size = entity_reader(schema)(frame, offset)
    assert offset + size == len(frame), "bytes after the body"
    assert encode_response(body, correlation_id=correlation_id) == frame
    assert decode_response_body(api_key, version, frame) == (correlation_id, body)
    if hasattr(body, "throttle_time"):
        assert body.throttle_time == datetime.timedelta(0)
    for path, entity in entities(body):
        hints = typing.get_type_hints(type(entity))
        for field in dataclasses.fields(entity):
            value = getattr(entity, field.name)
            if "tag" in field.metadata:
                assert value == field.default, f"tagged field {path}.{field.name} is written"
            if value is None:  # only where the schema says nullable at this version (kio types it `X | None`)
                assert type(None) in typing.get_args(hints[field.name]), f"{path}.{field.name} is null"
    return body


def entities(value: Any, path: str = "body") -> Iterator[tuple[str, Any]]:
    """Every entity in a decoded message, with where it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield path, value
        for field in dataclasses.fields(value):
            yield from entities(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from entities(item, f"{path}[{index}]")


def request_of(api_key: int, version: int, body: Any, correlation_id: int = 7) -> tuple[RequestHeaderInfo, Any]:
    """The header and body the proxy sees for `body` on the wire (what service.py decodes)."""
    frame = encode_request(body, correlation_id=correlation_id, client_id="property")
    header = peek_request_header(frame)
    return header, decode_body(api_key, version, frame, header.header_size, allow_trailing=True)


def check_broker_view(body: Any, brokers: BrokerSet, listener: ListenerConfig, broker_field: str = "node_id") -> None:
    """The one broker view (docs/clients.md): exactly the cluster's brokers, by id, each at the listener's advertised
    address with the rack the cluster gives it, and a controller that is one of them."""
    assert [getattr(b, broker_field) for b in body.brokers] == list(brokers.ids)
    for broker, known in zip(body.brokers, brokers.brokers, strict=True):
        assert (broker.host, broker.port) == (listener.advertised_host, listener.advertised_port)
        if hasattr(broker, "rack"):
            assert broker.rack == known.rack
        if hasattr(broker, "is_fenced"):
            assert broker.is_fenced is False
    if hasattr(body, "controller_id"):
        assert body.controller_id == brokers.controller_id
        assert body.controller_id in brokers.ids


def check_partitions_name_listed_brokers(body: Any) -> None:
    """Every leader a partition names is a listed broker, so no tool prints "Leader: none"."""
    listed = {getattr(b, "node_id", None) for b in body.brokers}
    for topic in getattr(body, "topics", ()):
        for partition in topic.partitions:
            assert partition.leader_id in listed or partition.leader_id < 0


# -- generated inputs ------------------------------------------------------------------------------

hostnames = st.from_regex(r"\A[a-z]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z]([a-z0-9-]{0,20}[a-z0-9])?){0,3}\Z")
hosts = st.one_of(
    st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(str), hostnames, st.sampled_from(["localhost", "kafka.example.com"])
)
node_ids = st.integers(min_value=0, max_value=2**31 - 1)


@st.composite
def broker_sets(draw: st.DrawFn) -> BrokerSet:
    """The proxy alone (no upstream has listed brokers), or a cluster's brokers as an upstream lists them."""
    if draw(st.booleans()):
        return BrokerSet.alone(draw(node_ids))
    ids = sorted(draw(st.sets(node_ids, min_size=1, max_size=5)))
    racks = draw(st.lists(st.one_of(st.none(), st.sampled_from(["r1", "r2"])), min_size=len(ids), max_size=len(ids)))
    brokers = tuple(ClusterBroker(i, rack, ControllerAddress("broker.example.com", 9092, i)) for i, rack in zip(ids, racks, strict=True))
    return BrokerSet(brokers, draw(st.sampled_from(ids)), from_upstream=True)
correlation_ids = st.integers(min_value=-(2**31), max_value=2**31 - 1)
cluster_ids = st.uuids().filter(lambda u: u.int > 1).map(kafka_uuid.to_text).filter(lambda t: not t.startswith("-"))


@st.composite
def listeners(draw: st.DrawFn) -> ListenerConfig:
    host, port = draw(hosts), draw(st.integers(min_value=1, max_value=65535))
    return ListenerConfig("CLIENT", "0.0.0.0", port, "SASL_PLAINTEXT", host, port)


def requests(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """Any request body kio can write at this version."""
    return st.from_type(request_schema(api_key, version))


# -- ApiVersions -----------------------------------------------------------------------------------


@PROPERTY
@given(version=st.sampled_from(versions(ApiKey.API_VERSIONS)), correlation_id=correlation_ids)
def test_api_versions_at_every_version(version: int, correlation_id: int) -> None:
    frame = apiversions.build_response(version, correlation_id, ADVERTISED)
    body = read_answer(ApiKey.API_VERSIONS, version, frame, correlation_id)
    assert body.error_code == ErrorCode.none
    keys = [int(k.api_key) for k in body.api_keys]
    assert keys == sorted(set(keys)), "each API once, in key order"
    assert {int(k.api_key): VersionRange(int(k.min_version), int(k.max_version)) for k in body.api_keys} == ADVERTISED
    if version >= 3:
        # No feature tags unless the controller's are relayed: finalized_features_epoch -1 says "none known".
        assert (body.supported_features, body.finalized_features_epoch, body.finalized_features) == ((), -1, ())


@PROPERTY
@given(version=st.integers(min_value=-(2**15), max_value=2**15 - 1), correlation_id=correlation_ids)
def test_api_versions_of_an_unknown_version_are_v0_with_its_own_range(version: int, correlation_id: int) -> None:
    """KIP-511: an ApiVersions version the broker does not know is answered at v0, UNSUPPORTED_VERSION and
    ApiVersions' own range only, so the client retries with one it names."""
    frame = apiversions.build_response(version, correlation_id, ADVERTISED)
    if version in ADVERTISED[ApiKey.API_VERSIONS]:
        return
    body = read_answer(ApiKey.API_VERSIONS, 0, frame, correlation_id)
    assert body.error_code == ErrorCode.unsupported_version
    (only,) = body.api_keys
    assert (only.api_key, only.min_version, only.max_version) == (ApiKey.API_VERSIONS, 0, ADVERTISED[ApiKey.API_VERSIONS].max)


@PROPERTY
@given(version=st.sampled_from(versions(ApiKey.API_VERSIONS)), correlation_id=correlation_ids)
def test_api_versions_error_answer(version: int, correlation_id: int) -> None:
    """ApiVersionsRequest.getErrorResponse for a client software name Kafka refuses: the code, no ranges."""
    frame = apiversions.build_error_response(version, correlation_id, ErrorCode.invalid_request)
    body = read_answer(ApiKey.API_VERSIONS, version, frame, correlation_id)
    assert (body.error_code, body.api_keys) == (ErrorCode.invalid_request, ())


# -- Metadata and DescribeCluster, answered locally ----------------------------------------------------


@st.composite
def metadata_requests(draw: st.DrawFn) -> tuple[int, Any]:
    version = draw(st.sampled_from(versions(ApiKey.METADATA)))
    body = draw(requests(ApiKey.METADATA, version))
    if draw(st.booleans()):
        # null and empty topic lists, the all-topics and the no-topics requests, often
        body = dataclasses.replace(body, topics=draw(st.sampled_from([(), None] if version > 0 else [()])))
    return version, body


@PROPERTY
@given(request=metadata_requests(), brokers=broker_sets(), listener=listeners(), cluster_id=cluster_ids, correlation_id=correlation_ids)
def test_local_metadata_at_every_version(
    request: tuple[int, Any], brokers: BrokerSet, listener: ListenerConfig, cluster_id: str, correlation_id: int
) -> None:
    version, request_body = request
    header, decoded = request_of(ApiKey.METADATA, version, request_body, correlation_id)
    frame = metadata_response(header, decoded, brokers=brokers, listener=listener, cluster_id=cluster_id)
    body = read_answer(ApiKey.METADATA, version, frame, correlation_id)
    check_broker_view(body, brokers, listener)
    if version >= 2:
        assert body.cluster_id == cluster_id  # librdkafka strdup()s it: never null (docs/clients.md)
    if version in range(8, 11):
        assert body.cluster_authorized_operations == AUTHORIZED_OPERATIONS_OMITTED
    if version >= 13:
        assert body.error_code == ErrorCode.none
    named = list(dict.fromkeys(t.name for t in decoded.topics or () if t.name is not None))
    assert [t.name for t in body.topics] == named, "each named topic once, in the order asked"
    for topic in body.topics:
        assert topic.error_code == ErrorCode.unknown_topic_or_partition
        assert topic.partitions == ()
        if version >= 1:
            assert topic.is_internal is False
        if version >= 8:
            assert topic.topic_authorized_operations == AUTHORIZED_OPERATIONS_OMITTED
        if version >= 10:
            assert topic.topic_id is None  # the zero Uuid, as Kafka answers a topic it does not describe


@PROPERTY
@given(
    version=st.sampled_from(versions(ApiKey.DESCRIBE_CLUSTER)),
    data=st.data(),
    brokers=broker_sets(),
    listener=listeners(),
    cluster_id=cluster_ids,
    operations=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    correlation_id=correlation_ids,
)
def test_describe_cluster_at_every_version(
    version: int, data: st.DataObject, brokers: BrokerSet, listener: ListenerConfig, cluster_id: str, operations: int, correlation_id: int
) -> None:
    request_body = data.draw(requests(ApiKey.DESCRIBE_CLUSTER, version))
    header, decoded = request_of(ApiKey.DESCRIBE_CLUSTER, version, request_body, correlation_id)
    frame = describe_cluster_response(
        header, decoded, brokers=brokers, listener=listener, cluster_id=cluster_id, cluster_authorized_operations=operations
    )
    body = read_answer(ApiKey.DESCRIBE_CLUSTER, version, frame, correlation_id)
    if version >= 1:
        assert body.endpoint_type == EndpointType.BROKER
    endpoint = int(getattr(decoded, "endpoint_type", EndpointType.BROKER))
    if endpoint == EndpointType.BROKER:
        assert (body.error_code, body.error_message) == (ErrorCode.none, None)
        assert body.cluster_id == cluster_id
        check_broker_view(body, brokers, listener, "broker_id")
        assert body.cluster_authorized_operations == operations
        return
    # AuthHelper.computeDescribeClusterResponse: an error with every other field at its default
    expected = ErrorCode.mismatched_endpoint_type if endpoint == EndpointType.CONTROLLER else ErrorCode.unsupported_endpoint_type
    assert body.error_code == expected
    assert body.error_message
    assert (body.cluster_id, body.controller_id, body.brokers) == ("", -1, ())
    assert body.cluster_authorized_operations == AUTHORIZED_OPERATIONS_OMITTED


# -- the read path: a fake read upstream and edge authorizer ------------------------------------------


class FakeEdge:
    """The edge authorizer's surface ReadPath uses: one decision per access, from a fixed set of grants."""

    def __init__(self, grants: frozenset[tuple[ResourceType, str, Operation]]) -> None:
        self.grants = grants
        self.asked: list[ResourceAccess] = []

    async def allowed(self, ctx: RequestContext, accesses: list[ResourceAccess]) -> list[bool]:
        self.asked.extend(accesses)
        return [(a.resource_type, a.name, a.operation) in self.grants for a in accesses]

    def operations(self, resource_type: ResourceType, name: str) -> int:
        return operations_field([op for op in SUPPORTED_OPERATIONS[resource_type] if (resource_type, name, op) in self.grants])


@dataclasses.dataclass
class _Settings:
    address: str = "broker.example.com:9092"
    request_timeout: float = 1.0
    discovery_interval: float = 30.0


class FakeReadUpstream:
    """The ControllerPool surface ReadPath uses: ranges, settings.address and request(); `answer(api_key, version,
    body)` gives the values of the upstream's answer, built at the version the proxy asked."""

    def __init__(self, answer: Callable[[int, int, Any], dict[str, Any]], served: dict[int, VersionRange] | None = None) -> None:
        self.answer = answer
        self.controller_ranges = served if served is not None else dict(ADVERTISED)
        self.settings = _Settings()
        self.asked: list[tuple[int, int, Any]] = []
        self.active = ControllerAddress("broker.example.com", 9092)
        self.active_id = -1

    async def request(self, build: Callable[[int], bytes], *, timeout: float | None = None) -> bytes:
        frame = build(99)
        header = peek_request_header(frame)
        body = decode_body(header.api_key, header.api_version, frame, header.header_size)
        self.asked.append((header.api_key, header.api_version, body))
        values = self.answer(header.api_key, header.api_version, body)
        entity = build_entity(response_schema(header.api_key, header.api_version), values)
        return encode_response(entity, correlation_id=header.correlation_id)


CONTEXT = RequestContext(
    principal=Principal.parse("User:alice"),
    client_address=ipaddress.ip_address("192.0.2.7"),
    listener="CLIENT",
    security_protocol="SASL_PLAINTEXT",
    sasl_mechanism="PLAIN",
)


def read(path: ReadPath, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> bytes:
    async def main() -> bytes:
        return (await READ_ROUTES[header.api_key](path, CONTEXT, listener, header, body)).frame

    return trio.run(main)


def read_path(upstream: FakeReadUpstream, edge: FakeEdge, node_id: int, cluster_id: str) -> ReadPath:
    return ReadPath(upstream, edge, node_id=node_id, identity=ClusterIdentity(cluster_id))  # type: ignore[arg-type]  # the fakes' surfaces


topic_names = st.text(alphabet="abcdefghij._-", min_size=1, max_size=6)
topic_operations = st.sets(st.sampled_from(SUPPORTED_OPERATIONS[ResourceType.TOPIC]))
cluster_operations = st.sets(st.sampled_from(SUPPORTED_OPERATIONS[ResourceType.CLUSTER]))


@st.composite
def topic_worlds(draw: st.DrawFn) -> tuple[dict[str, int], FakeEdge]:
    """(existing topics and their partition counts, what the caller may do on each topic and the cluster)."""
    existing = draw(st.dictionaries(topic_names, st.integers(min_value=1, max_value=3), max_size=6))
    names = set(existing) | draw(st.sets(topic_names, max_size=4))
    grants = {(ResourceType.TOPIC, name, op) for name in names for op in draw(topic_operations)}
    grants |= {(ResourceType.CLUSTER, "kafka-cluster", op) for op in draw(cluster_operations)}
    return existing, FakeEdge(frozenset(grants))


def topic_id_of(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


def kafka_metadata(existing: dict[str, int], cluster_id: str) -> Callable[[int, int, Any], dict[str, Any]]:
    """A broker's Metadata answer over `existing`: named topics in the order asked, unknown ones as UNKNOWN_TOPIC_OR_PARTITION."""

    def topic(name: str) -> dict[str, Any]:
        if name not in existing:
            return {
                "error_code": ErrorCode.unknown_topic_or_partition,
                "name": name,
                "topic_id": None,
                "is_internal": False,
                "partitions": [],
            }
        partitions = [
            {
                "error_code": 0,
                "partition_index": i,
                "leader_id": BROKER_ID,
                "leader_epoch": 0,
                "replica_nodes": [BROKER_ID],
                "isr_nodes": [BROKER_ID],
                "offline_replicas": [],
            }
            for i in range(existing[name])
        ]
        return {"error_code": 0, "name": name, "topic_id": topic_id_of(name), "is_internal": False, "partitions": partitions}

    by_id = {topic_id_of(name): name for name in existing}

    def by_topic_id(topic_id: uuid.UUID) -> dict[str, Any]:
        if topic_id not in by_id:
            return {"error_code": ErrorCode.unknown_topic_id, "name": None, "topic_id": topic_id, "is_internal": False, "partitions": []}
        return topic(by_id[topic_id])

    def answer(api_key: int, version: int, body: Any) -> dict[str, Any]:
        assert api_key == ApiKey.METADATA
        everything = body.topics is None or (version == 0 and not body.topics)
        ids = [t.topic_id for t in body.topics or () if version >= 10 and t.topic_id is not None]
        if ids:  # KafkaApis: the unknown ids first, then the topics found by id; names in the request are ignored
            topics = [by_topic_id(i) for i in ids if i not in by_id] + [by_topic_id(i) for i in ids if i in by_id]
            return {"throttle_time": 0, "brokers": UPSTREAM_BROKERS, "cluster_id": cluster_id, "controller_id": BROKER_ID, "topics": topics, "error_code": 0}
        names = list(existing) if everything else [str(t.name) for t in body.topics]
        return {
            "throttle_time": 250,
            "brokers": UPSTREAM_BROKERS,
            "cluster_id": cluster_id,
            "controller_id": BROKER_ID,
            "topics": [topic(n) for n in names],
            "error_code": 0,
        }

    return answer


@PROPERTY
@given(
    request=metadata_requests(),
    world=topic_worlds(),
    asked=st.lists(topic_names, max_size=6),
    node_id=node_ids,
    listener=listeners(),
    cluster_id=cluster_ids,
)
def test_metadata_read_at_every_version(
    request: tuple[int, Any],
    world: tuple[dict[str, int], FakeEdge],
    asked: list[str],
    node_id: int,
    listener: ListenerConfig,
    cluster_id: str,
) -> None:
    version, request_body = request
    if request_body.topics:  # names from the world, so that some exist and some may be described
        topic_type = type(request_body.topics[0])
        request_body = dataclasses.replace(
            request_body, topics=tuple(build_entity(topic_type, {"name": n, "topic_id": None}) for n in asked)
        )
    existing, edge = world
    header, decoded = request_of(ApiKey.METADATA, version, request_body)
    upstream = FakeReadUpstream(kafka_metadata(existing, cluster_id))
    body = read_answer(ApiKey.METADATA, version, read(read_path(upstream, edge, node_id, cluster_id), listener, header, decoded), 7)

    check_broker_view(body, UPSTREAM_VIEW, listener)
    check_partitions_name_listed_brokers(body)
    if version >= 2:
        assert body.cluster_id == cluster_id
    everything = decoded.topics is None or (version == 0 and not decoded.topics)
    describable = {name for (kind, name, op) in edge.grants if kind == ResourceType.TOPIC and op == Operation.DESCRIBE}
    want_ops = version >= 8 and decoded.include_topic_authorized_operations
    if everything:
        # Kafka leaves out, silently, what the caller may not describe.
        assert [t.name for t in body.topics] == [n for n in existing if n in describable]
    else:
        names = list(dict.fromkeys(t.name for t in decoded.topics if t.name is not None))
        allowed, denied = [n for n in names if n in describable], [n for n in names if n not in describable]
        assert [t.name for t in body.topics] == allowed + denied, "described topics first, each once, then the denied ones"
    for topic in body.topics:
        if topic.name not in describable:
            assert topic.error_code == ErrorCode.topic_authorization_failed
            assert topic.partitions == ()
            if version >= 10:
                assert topic.topic_id is None
        else:
            assert topic.error_code == (ErrorCode.none if topic.name in existing else ErrorCode.unknown_topic_or_partition)
            assert len(topic.partitions) == existing.get(topic.name, 0)
        if version >= 8:
            expected = edge.operations(ResourceType.TOPIC, topic.name) if want_ops and topic.name in describable else MIN_INT32
            assert topic.topic_authorized_operations == expected
    if version in range(8, 11):
        expected_cluster = MIN_INT32
        if decoded.include_cluster_authorized_operations:
            may_describe = (ResourceType.CLUSTER, "kafka-cluster", Operation.DESCRIBE) in edge.grants
            expected_cluster = edge.operations(ResourceType.CLUSTER, "kafka-cluster") if may_describe else 0
        assert body.cluster_authorized_operations == expected_cluster


@PROPERTY
@given(
    version=st.sampled_from([v for v in versions(ApiKey.METADATA) if v >= 12]),
    world=topic_worlds(),
    asked=st.lists(st.one_of(topic_names, st.uuids()), min_size=1, max_size=6),
    named_too=st.lists(topic_names, max_size=2),
    want_ops=st.booleans(),
)
def test_metadata_by_topic_id(
    version: int, world: tuple[dict[str, int], FakeEdge], asked: list[str | uuid.UUID], named_too: list[str], want_ops: bool
) -> None:
    """KIP-516 lookups (Java's describeTopics(TopicCollection.ofTopicIds), kafka-topics --topic-id): answered as Kafka does,
    the unknown ids first (UNKNOWN_TOPIC_ID), then the topics the caller may describe, then those it may not, by id alone."""
    existing, edge = world
    ids = list(dict.fromkeys(topic_id_of(a) if isinstance(a, str) else a for a in asked))
    topics = [{"name": None, "topic_id": i} for i in ids] + [{"name": n, "topic_id": None} for n in named_too]
    values = {"topics": topics, "allow_auto_topic_creation": False, "include_topic_authorized_operations": want_ops}
    header, decoded = request_of(ApiKey.METADATA, version, build_entity(request_schema(ApiKey.METADATA, version), values))
    upstream = FakeReadUpstream(kafka_metadata(existing, "Zm9yd2FyZGluZy11bml0LQ"))
    body = read_answer(
        ApiKey.METADATA, version, read(read_path(upstream, edge, 100, "Zm9yd2FyZGluZy11bml0LQ"), LISTENER, header, decoded), 7
    )

    names = {topic_id_of(n): n for n in existing}
    describable = {name for (kind, name, op) in edge.grants if kind == ResourceType.TOPIC and op == Operation.DESCRIBE}
    unknown = [i for i in ids if i not in names]
    described = [i for i in ids if i in names and names[i] in describable]
    refused = [i for i in ids if i in names and names[i] not in describable]
    assert [t.topic_id for t in body.topics] == unknown + described + refused
    check_broker_view(body, UPSTREAM_VIEW, LISTENER)
    check_partitions_name_listed_brokers(body)
    for topic in body.topics:
        if topic.topic_id in described:
            assert (topic.error_code, topic.name, len(topic.partitions)) == (
                ErrorCode.none,
                names[topic.topic_id],
                existing[names[topic.topic_id]],
            )
            expected = edge.operations(ResourceType.TOPIC, names[topic.topic_id]) if want_ops else MIN_INT32
            assert topic.topic_authorized_operations == expected
        else:
            code = ErrorCode.unknown_topic_id if topic.topic_id in unknown else ErrorCode.topic_authorization_failed
            assert (topic.error_code, topic.name, topic.partitions, topic.topic_authorized_operations) == (code, None, (), MIN_INT32)


@PROPERTY
@given(
    version=st.sampled_from(versions(ApiKey.DESCRIBE_CLUSTER)),
    data=st.data(),
    granted=cluster_operations,
    node_id=node_ids,
    listener=listeners(),
    cluster_id=cluster_ids,
)
def test_describe_cluster_authorized_operations(
    version: int, data: st.DataObject, granted: set[Operation], node_id: int, listener: ListenerConfig, cluster_id: str
) -> None:
    """Kafka computes cluster_authorized_operations only when asked; 0 when the caller may not DESCRIBE the cluster."""
    request_body = data.draw(requests(ApiKey.DESCRIBE_CLUSTER, version))
    header, decoded = request_of(ApiKey.DESCRIBE_CLUSTER, version, request_body)
    edge = FakeEdge(frozenset((ResourceType.CLUSTER, "kafka-cluster", op) for op in granted))
    path = read_path(FakeReadUpstream(kafka_metadata({}, cluster_id)), edge, node_id, cluster_id)

    async def main() -> bytes:
        return await path.describe_cluster(CONTEXT, listener, header, decoded, cluster_id)

    body = read_answer(ApiKey.DESCRIBE_CLUSTER, version, trio.run(main), 7)
    if body.error_code == ErrorCode.none:
        check_broker_view(body, UPSTREAM_VIEW, listener, "broker_id")
    if body.error_code != ErrorCode.none or not decoded.include_cluster_authorized_operations:
        assert body.cluster_authorized_operations == MIN_INT32
        assert edge.asked == []
    elif Operation.DESCRIBE not in granted:
        assert body.cluster_authorized_operations == 0
    else:
        assert body.cluster_authorized_operations == edge.operations(ResourceType.CLUSTER, "kafka-cluster")


CONFIG_TYPES = {2: ResourceType.TOPIC, 4: ResourceType.CLUSTER, 8: ResourceType.CLUSTER, 16: ResourceType.CLUSTER, 32: ResourceType.GROUP}
DENIAL = {
    ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
    ResourceType.CLUSTER: ErrorCode.cluster_authorization_failed,
    ResourceType.GROUP: ErrorCode.group_authorization_failed,
}


def _config_name(kind: int, name: str) -> str:
    return name if CONFIG_TYPES[kind] != ResourceType.CLUSTER else "kafka-cluster"


@PROPERTY
@given(
    version=st.sampled_from(versions(ApiKey.DESCRIBE_CONFIGS)),
    asked=st.lists(st.tuples(st.sampled_from(sorted(CONFIG_TYPES)), st.one_of(topic_names, st.sampled_from([str(BROKER_ID), "7", ""]))), max_size=5),
    granted_names=st.sets(topic_names),
    cluster_ok=st.booleans(),
    flags=st.tuples(st.booleans(), st.booleans()),
    listener=listeners(),
)
def test_describe_configs_at_every_version(
    version: int,
    asked: list[tuple[int, str]],
    granted_names: set[str],
    cluster_ok: bool,
    flags: tuple[bool, bool],
    listener: ListenerConfig,
) -> None:
    # The cluster is one resource for every broker, logger and client-metrics name: one grant decides them all.
    resources = [(kind, name, cluster_ok if CONFIG_TYPES[kind] == ResourceType.CLUSTER else name in granted_names) for kind, name in asked]
    values = {
        "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": None} for kind, name, _ in resources],
        "include_synonyms": flags[0],
        "include_documentation": flags[1],
    }
    header, decoded = request_of(ApiKey.DESCRIBE_CONFIGS, version, build_entity(request_schema(ApiKey.DESCRIBE_CONFIGS, version), values))
    grants = {(CONFIG_TYPES[kind], _config_name(kind, name), Operation.DESCRIBE_CONFIGS) for kind, name, ok in resources if ok}

    def kafka(api_key: int, asked_version: int, body: Any) -> dict[str, Any]:
        if api_key == ApiKey.METADATA:
            return kafka_metadata({}, "Zm9yd2FyZGluZy11bml0LQ")(api_key, asked_version, body)
        config = {"name": "retention.ms", "value": "1", "read_only": False, "config_source": 5, "is_sensitive": False}
        config |= {"synonyms": [], "config_type": 5, "documentation": None}
        results = [
            {"error_code": 0, "error_message": "", "resource_type": r.resource_type, "resource_name": r.resource_name, "configs": [config]}
            for r in body.resources
        ]
        return {"throttle_time": 100, "results": results}

    path = read_path(FakeReadUpstream(kafka), FakeEdge(frozenset(grants)), 100, "Zm9yd2FyZGluZy11bml0LQ")
    body = read_answer(ApiKey.DESCRIBE_CONFIGS, version, read(path, listener, header, decoded), 7)
    # KafkaApis.handleDescribeConfigsRequest: the authorized resources, then the unauthorized ones
    granted = [(kind, name) for kind, name, ok in resources if ok]
    assert [(r.resource_type, r.resource_name) for r in body.results] == granted + [(k, n) for k, n, ok in resources if not ok]
    for result in body.results:
        resource_type = CONFIG_TYPES[int(result.resource_type)]
        if (resource_type, _config_name(result.resource_type, result.resource_name), Operation.DESCRIBE_CONFIGS) in grants:
            assert (result.error_code, result.error_message, len(result.configs)) == (ErrorCode.none, "", 1)
        else:
            code = DENIAL[resource_type]
            # KafkaApis.handleDescribeConfigsRequest: `error.message`, no configs
            assert (result.error_code, result.error_message, result.configs) == (code, default_message(code), ())


@PROPERTY
@given(api_key=st.sampled_from(sorted(CLUSTER_GATED_READS)), data=st.data(), outcome=st.sampled_from(["allowed", "denied", "unavailable"]))
def test_cluster_gated_reads_at_every_version(api_key: int, data: st.DataObject, outcome: str) -> None:
    version = data.draw(st.sampled_from(versions(api_key)))
    header, decoded = request_of(api_key, version, data.draw(requests(api_key, version)))
    upstream_answer = data.draw(st.from_type(response_schema(api_key, version)))
    upstream_values = {f.name: getattr(upstream_answer, f.name) for f in dataclasses.fields(upstream_answer)}
    operation = CLUSTER_OPERATIONS[api_key]
    grants = frozenset() if outcome == "denied" else frozenset({(ResourceType.CLUSTER, "kafka-cluster", operation)})
    served = None if outcome != "unavailable" else {k: v for k, v in ADVERTISED.items() if k != api_key}
    upstream = FakeReadUpstream(lambda *_: upstream_values, served)
    body = read_answer(
        api_key, version, read(read_path(upstream, FakeEdge(grants), 100, "Zm9yd2FyZGluZy11bml0LQ"), LISTENER, header, decoded), 7
    )
    if outcome == "allowed":
        # passed on as the upstream answered, but for the throttle, which is the proxy's own quota there
        assert body == dataclasses.replace(upstream_answer, throttle_time=datetime.timedelta(0))
        return
    code = ErrorCode.cluster_authorization_failed if outcome == "denied" else ErrorCode.unknown_server_error
    assert body.error_code == code
    if outcome == "denied" and api_key != ApiKey.DESCRIBE_ACLS:
        assert body.error_message is None  # Kafka answers these two denials with the bare code
    else:
        assert body.error_message
    # the list the API has: DescribeAcls resources [], DescribeClientQuotas entries null, DescribeUserScramCredentials one
    # result per user asked, each with the error and user "" (DescribeUserScramCredentialsRequest.getErrorResponse)
    if api_key == ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS:
        asked = len(decoded.users or ())
        assert [(r.user, r.error_code, r.credential_infos) for r in body.results] == [("", code, ())] * asked
    else:
        assert getattr(body, "resources" if api_key == ApiKey.DESCRIBE_ACLS else "entries") == (
            None if api_key == ApiKey.DESCRIBE_CLIENT_QUOTAS else ()
        )


LISTENER = ListenerConfig("CLIENT", "0.0.0.0", 9093, "SASL_PLAINTEXT", "proxy.example.com", 9093)


# -- error answers of forwarded APIs (authz/admin_apis.py), as Kafka's getErrorResponse builds them ---------

ERROR_CODES = [
    ErrorCode.unknown_server_error,
    ErrorCode.request_timed_out,
    ErrorCode.cluster_authorization_failed,
    ErrorCode.not_controller,
    ErrorCode.kafka_storage_error,
]


def _java_sorted(names: set[str]) -> list[str]:
    return sorted(names, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


_TOP_LEVEL_ONLY = frozenset(
    {
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ADD_RAFT_VOTER,
        ApiKey.REMOVE_RAFT_VOTER,
    }
)


def kafka_error_entries(api_key: int, request: Any) -> tuple[str, list[Any]]:
    """(the response's list field, what Kafka's getErrorResponse lists in it) for a request, as plain keys."""
    if api_key == ApiKey.CREATE_TOPICS:
        return "topics", [t.name for t in request.topics]
    if api_key == ApiKey.DELETE_TOPICS:
        if hasattr(request, "topic_names"):
            return "responses", list(request.topic_names)
        return "responses", [(t.name, t.topic_id) for t in request.topics]
    if api_key == ApiKey.CREATE_PARTITIONS:
        return "results", [t.name for t in request.topics]
    if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return "responses", [(r.resource_type, r.resource_name) for r in request.resources]
    if api_key == ApiKey.CREATE_ACLS:
        return "results", [None] * len(request.creations)
    if api_key == ApiKey.DELETE_ACLS:
        return "filter_results", [None] * len(request.filters)
    if api_key == ApiKey.ELECT_LEADERS:
        return "replica_election_results", [(t.topic, tuple(t.partitions)) for t in request.topic_partitions or ()]
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return "responses", [(t.name, tuple(p.partition_index for p in t.partitions)) for t in request.topics]
    if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        return "topics", [(t.name, tuple(t.partition_indexes)) for t in request.topics or ()]
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return "entries", [tuple((e.entity_type, e.entity_name) for e in entry.entity) for entry in request.entries]
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return "results", _java_sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
    if api_key == ApiKey.DESCRIBE_QUORUM:
        return "topics", []
    if api_key in _TOP_LEVEL_ONLY:
        return "", []  # one top-level code, no list (the token APIs, UnregisterBroker, Add/RemoveRaftVoter)
    assert api_key == ApiKey.UPDATE_FEATURES
    return "results", []  # UpdateFeaturesResponse.createWithErrors lists no feature for an error


def answered_entries(api_key: int, field: str, body: Any) -> list[Any]:
    items = getattr(body, field)
    if api_key == ApiKey.CREATE_TOPICS or api_key == ApiKey.CREATE_PARTITIONS:
        return [t.name for t in items]
    if api_key == ApiKey.DELETE_TOPICS:
        return [t.name if not hasattr(t, "topic_id") else (t.name, t.topic_id) for t in items]
    if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return [(r.resource_type, r.resource_name) for r in items]
    if api_key in (ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        return [None] * len(items)
    if api_key == ApiKey.ELECT_LEADERS:
        return [(t.topic, tuple(p.partition_id for p in t.partition_result)) for t in items]
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return [(t.name, tuple(p.partition_index for p in t.partitions)) for t in items]
    if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        return [(t.name, tuple(p.partition_index for p in t.partitions)) for t in items]
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return [tuple((e.entity_type, e.entity_name) for e in entry.entity) for entry in items]
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return [r.user for r in items]
    return list(items)


@st.composite
def admin_requests(draw: st.DrawFn) -> tuple[int, int, Any]:
    api_key = draw(st.sampled_from(sorted(SERVED_ADMIN_APIS)))
    version = draw(st.sampled_from(versions(api_key)))
    return api_key, version, draw(requests(api_key, version))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    request=admin_requests(),
    code=st.sampled_from(ERROR_CODES),
    message=st.one_of(st.none(), st.text(max_size=40)),
    correlation_id=correlation_ids,
)
def test_error_answers_of_forwarded_apis(request: tuple[int, int, Any], code: ErrorCode, message: str | None, correlation_id: int) -> None:
    """The proxy's answer when the controller cannot give one: every resource of the request, in Kafka's order and shape."""
    api_key, version, request_body = request
    _, decoded = request_of(api_key, version, request_body, correlation_id)
    frame = encode_response(error_response(api_key, version, decoded, code, message), correlation_id=correlation_id)
    body = read_answer(api_key, version, frame, correlation_id)
    field, expected = kafka_error_entries(api_key, decoded)
    if hasattr(body, field):
        assert answered_entries(api_key, field, body) == expected
    for path, entity in entities(body):
        if hasattr(entity, "error_code") and path != "body":
            assert entity.error_code == code, path
            if hasattr(entity, "error_message"):
                assert entity.error_message == message, path
    if hasattr(body, "error_code"):  # ElectLeaders v1+, the reassignments, DescribeQuorum, UpdateFeatures
        assert body.error_code == code
    if hasattr(body, "error_message"):
        assert body.error_message == message
    if api_key == ApiKey.CREATE_TOPICS:
        for topic in body.topics:
            if version >= 5:  # KIP-525's details, at CreatableTopicResult's defaults: -1, -1, and null configs (not [])
                assert (topic.num_partitions, topic.replication_factor, topic.configs) == (-1, -1, None)
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS and version >= 1:
        assert body.allow_replication_factor_change is True


# -- through the request path ----------------------------------------------------------------------


async def test_describe_cluster_and_metadata_through_the_service(proxy: Proxy, autojump_clock: MockClock) -> None:
    """The service decodes DescribeCluster (it used to answer without reading it) and sends Metadata v8-10 asking for the
    cluster's operations to the edge authorizer; its default policy, deny, allows nothing: Kafka's 0."""
    client = proxy.connect()
    bootstrap_controller = {"include_cluster_authorized_operations": True, "endpoint_type": EndpointType.CONTROLLER}
    mismatched = await client.call(ApiKey.DESCRIBE_CLUSTER, 1, bootstrap_controller, correlation_id=4)
    assert (mismatched.error_code, mismatched.cluster_id, mismatched.brokers) == (ErrorCode.mismatched_endpoint_type, "", ())
    values = {"include_cluster_authorized_operations": True, "endpoint_type": EndpointType.BROKER, "include_fenced_brokers": False}
    described = await client.call(ApiKey.DESCRIBE_CLUSTER, 2, values, correlation_id=5)
    assert (described.error_code, described.cluster_id, described.cluster_authorized_operations) == (ErrorCode.none, CLUSTER_ID, 0)
    no_topics = {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    metadata = await client.call(ApiKey.METADATA, 10, {**no_topics, "include_cluster_authorized_operations": True}, correlation_id=6)
    assert (metadata.cluster_id, metadata.topics, metadata.cluster_authorized_operations) == (CLUSTER_ID, (), 0)
    metadata = await client.call(ApiKey.METADATA, 10, {**no_topics, "include_cluster_authorized_operations": False}, correlation_id=7)
    assert (metadata.cluster_id, metadata.cluster_authorized_operations) == (CLUSTER_ID, MIN_INT32)
    assert proxy.upstream.envelopes == []


# -- one broker view in every answer ---------------------------------------------------------------


@st.composite
def node_naming_requests(draw: st.DrawFn) -> tuple[int, int, Any]:
    """Any request whose answer names nodes: Metadata of every shape at every version, DescribeCluster at every version."""
    if draw(st.booleans()):
        version = draw(st.sampled_from(versions(ApiKey.DESCRIBE_CLUSTER)))
        values = {
            "include_cluster_authorized_operations": draw(st.booleans()),
            "endpoint_type": EndpointType.BROKER,
            "include_fenced_brokers": draw(st.booleans()),
        }
        return ApiKey.DESCRIBE_CLUSTER, version, build_entity(request_schema(ApiKey.DESCRIBE_CLUSTER, version), values)
    version = draw(st.sampled_from(versions(ApiKey.METADATA)))
    shape = draw(st.sampled_from(["none", "all", "named"] if version > 0 else ["all", "named"]))
    topics = {"none": [], "all": None if version > 0 else [], "named": [{"name": n, "topic_id": None} for n in draw(st.lists(topic_names, min_size=1, max_size=3))]}[shape]
    values = {
        "topics": topics,
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": draw(st.booleans()),
        "include_topic_authorized_operations": draw(st.booleans()),
    }
    return ApiKey.METADATA, version, build_entity(request_schema(ApiKey.METADATA, version), values)


@PROPERTY
@given(world=topic_worlds(), asked=st.lists(node_naming_requests(), min_size=2, max_size=6), listener=listeners(), node_id=node_ids)
def test_every_answer_names_the_same_brokers(
    world: tuple[dict[str, int], FakeEdge], asked: list[tuple[int, int, Any]], listener: ListenerConfig, node_id: int
) -> None:
    """docs/clients.md, "one broker view": whatever a client asks, in whatever order, at whatever version, it sees the
    same brokers (the cluster's, at the proxy's address) and the same controller, one of them; every leader is listed."""
    existing, edge = world
    cluster_id = "Zm9yd2FyZGluZy11bml0LQ"
    path = read_path(FakeReadUpstream(kafka_metadata(existing, cluster_id)), edge, node_id, cluster_id)

    async def main() -> list[Any]:
        bodies = []
        for api_key, version, request_body in asked:
            header, decoded = request_of(api_key, version, request_body)
            if api_key == ApiKey.DESCRIBE_CLUSTER:
                frame = await path.describe_cluster(CONTEXT, listener, header, decoded, cluster_id)
            else:
                frame = (await READ_ROUTES[api_key](path, CONTEXT, listener, header, decoded)).frame
            bodies.append(read_answer(api_key, version, frame, 7))
        return bodies

    for (api_key, _, _), body in zip(asked, trio.run(main), strict=True):
        check_broker_view(body, UPSTREAM_VIEW, listener, "broker_id" if api_key == ApiKey.DESCRIBE_CLUSTER else "node_id")
        check_partitions_name_listed_brokers(body)


def test_the_broker_view_outlives_an_upstream_that_went_away(autojump_clock: MockClock) -> None:
    """The set learned last stays while the upstream cannot answer, so a client never sees brokers vanish; the
    controller a client was told stays put while it is a broker, though the upstream names another each time."""

    async def main() -> None:
        view = BrokerView(100, max_age=30.0)
        assert (await view.current(_no_answer)).ids == (100,)  # nothing known yet: the proxy alone
        await trio.sleep(RETRY_AFTER)
        first = _upstream_metadata([3, 1, 2], controller=2)
        assert (await view.current(_answer_with(first))).ids == (1, 2, 3)
        assert view.known.controller_id == 2
        await trio.sleep(31)
        again = await view.current(_answer_with(_upstream_metadata([1, 2, 3, 4], controller=4)))
        assert (again.ids, again.controller_id) == ((1, 2, 3, 4), 2)
        await trio.sleep(31)
        assert (await view.current(_no_answer)).ids == (1, 2, 3, 4)
        gone = await view.current(_answer_with(_upstream_metadata([1, 3], controller=3)))
        assert gone.ids == (1, 2, 3, 4), "an upstream that failed is asked again only after RETRY_AFTER"
        await trio.sleep(RETRY_AFTER)
        later = await view.current(_answer_with(_upstream_metadata([1, 3], controller=3)))
        assert (later.ids, later.controller_id) == ((1, 3), 3)

    trio.run(main, clock=autojump_clock)


async def _no_answer() -> Any | None:
    return None


def _answer_with(response: Any) -> Callable[[], typing.Awaitable[Any | None]]:
    async def ask() -> Any | None:
        return response

    return ask


def _upstream_metadata(ids: list[int], *, controller: int) -> Any:
    brokers = [{"node_id": i, "host": f"b{i}.example.com", "port": 9092, "rack": None} for i in ids]
    values = {"throttle_time": 0, "brokers": brokers, "cluster_id": "c", "controller_id": controller, "topics": [], "error_code": 0}
    return build_entity(response_schema(ApiKey.METADATA, 12), values)
