"""The differential harness: the same raw requests through two proxies, one in front of the embedded
controller and one in front of a real Kafka controller, answers normalised and compared.

Requests are encoded with kio from plain values, so inputs a client library
would refuse (duplicates, both name and id, unknown codes) still reach the
server. A user logs in to a proxy with SASL/PLAIN, optionally from another
loopback address (host rules). An answer is the decoded response, normalised
(`normalise`) only where the two must differ: topic ids, throttle times, the
order of entries Kafka leaves to its hash maps, and the text of a cluster
denial, which Kafka fills with its connection's internals. A closed
connection is an answer too (`CLOSED`); a request one side answers and the
other does not is a difference.

A call may also go around the proxy: `via="envelope"` sends it in an Envelope
to the controller listener, logged in as the proxy, as any principal (one that
logged in with a delegation token too), and `via="read"` straight to where a
client reads (the node's broker listener, or the embedded controller).
Delegation tokens a call creates are kept under a label (`keep`), so later
calls renew them by their HMAC (`n.hmac(label)`); answers name them by label,
and their times relative to the issue time or to when the call was sent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import DELEGATION_TOKEN_SECRET
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from envelope.frames import FrameReader, encode_frame
from envelope.principal import Principal
from envelope.wrap import unwrap, wrap
from envelope_proxy.embedded import DEFAULT_USERS, PROXY_PASSWORD, PROXY_USER, controller_properties
from tests.interop.upstreams import Target, embedded_target, kafka_target

CLOSED = "<connection closed>"
ZERO_UUID = uuid.UUID(int=0)
SOCKET_TIMEOUT = 30.0
_CLUSTER_DENIAL = re.compile(r"^Request .* needs (\w+) permission\.$", re.DOTALL)
_CLUSTER_ID_TEXT = re.compile(r'cluster id "[A-Za-z0-9_-]{22}"')
_VOTER_SET = re.compile(r"set of voters \[([^\]]*)\]")
_DIRECTORY_ID = re.compile(r"directoryId=[A-Za-z0-9_-]{22}")
# How many attempts fit before the pool's deadline depends on the machine's load and the backoff's jitter, not on the upstream.
_ATTEMPT_COUNTS = re.compile(r"\(\d+ attempts, \d+ lost or not connected;")


@dataclass
class Side:
    """One proxy: where it listens, and one connection per (user, source address), opened when first needed; and the
    upstream behind it: its controller listener (Envelopes) and where clients read without the proxy."""

    kind: str
    address: str
    target: Target
    connections: dict[tuple[str, str, str], socket.socket] = field(default_factory=dict)
    correlation_id: int = 100

    def _connection(self, address: str, user: str, password: str, host: str = "127.0.0.1") -> socket.socket:
        key = (address, user, host)
        if key not in self.connections:
            sock = wire.connect(address, source=None if host == "127.0.0.1" else host, timeout=SOCKET_TIMEOUT)
            code = wire.sasl_plain_login(sock, user, password)
            if code != 0:
                sock.close()
                raise AssertionError(f"{self.kind}: {user} cannot log in at {address} ({code})")
            self.connections[key] = sock
        return self.connections[key]

    def _exchange(self, key: tuple[str, str, str], sock: socket.socket, frame: bytes) -> bytes | None:
        try:
            sock.sendall(encode_frame(frame))
            answer = _read_frame(sock)
        except (ConnectionError, TimeoutError, OSError):
            answer = None
        if answer is None:
            sock.close()
            del self.connections[key]
        return answer

    def _request(self, api_key: int, version: int, values: dict[str, Any]) -> bytes:
        self.correlation_id += 1
        body = build_entity(request_schema(api_key, version), values)
        return encode_request(body, correlation_id=self.correlation_id, client_id="differential")

    def _decoded(self, api_key: int, version: int, answer: bytes) -> Any:
        received, decoded = decode_response_body(api_key, version, answer)
        assert received == self.correlation_id, (self.kind, received, self.correlation_id)
        return decoded

    def send(self, user: str, host: str, api_key: int, version: int, values: dict[str, Any]) -> Any:
        """The decoded answer, or CLOSED when the proxy closed the connection instead of answering."""
        return self._send_to(self.address, user, DEFAULT_USERS[user], host, api_key, version, values)

    def _send_to(self, address: str, user: str, password: str, host: str, api_key: int, version: int, values: dict[str, Any]) -> Any:
        sock = self._connection(address, user, password, host)
        answer = self._exchange((address, user, host), sock, self._request(api_key, version, values))
        return CLOSED if answer is None else self._decoded(api_key, version, answer)

    def read(self, user: str, api_key: int, version: int, values: dict[str, Any]) -> Any:
        """Sent where a client reads without the proxy, logged in as `user`."""
        return self._send_to(self.target.read_address, user, DEFAULT_USERS[user], "127.0.0.1", api_key, version, values)

    def envelope(self, principal: Principal, api_key: int, version: int, values: dict[str, Any]) -> Any:
        """Sent in an Envelope to the controller listener as `principal`, logged in as the proxy; an envelope error is
        answered as `<envelope error N>`."""
        address = self.target.controller_address
        sock = self._connection(address, PROXY_USER, PROXY_PASSWORD)
        inner = self._request(api_key, version, values)
        answer = self._exchange((address, PROXY_USER, "127.0.0.1"), sock, wrap(inner, principal, "127.0.0.1", correlation_id=self.correlation_id, client_id="proxy"))
        if answer is None:
            return CLOSED
        error, data = unwrap(answer)
        if data is None:
            return f"<envelope error {error}>"
        return self._decoded(api_key, version, data)

    def call(self, call: Call, values: dict[str, Any], names: Names) -> Any:
        if call.via == "envelope":
            principal = Principal.parse(names.resource(call.principal or f"User:{call.user}"))
            return self.envelope(Principal(principal.type, principal.name, call.token_login), call.api, call.version, values)
        if call.via == "read":
            return self.read(call.user, call.api, call.version, values)
        return self.send(call.user, call.host, call.api, call.version, values)

    def close(self) -> None:
        for sock in self.connections.values():
            sock.close()
        self.connections.clear()


def _read_frame(sock: socket.socket) -> bytes | None:
    reader = FrameReader()
    while (frame := reader.next_frame()) is None:
        data = sock.recv(65536)
        if not data:
            return None
        reader.feed(data)
    return frame


def normalise(value: Any, *, topic_ids: bool = True) -> Any:
    """A decoded answer as plain JSON-able data, with only what must differ between the two upstreams evened out."""
    if value is CLOSED:
        return CLOSED
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: normalise(getattr(value, f.name), topic_ids=topic_ids) for f in dataclasses.fields(value) if f.name not in ("throttle_time_ms", "throttle_time")
        }
    if isinstance(value, enum.Enum):
        return int(value.value) if isinstance(value.value, int) else str(value.value)
    if isinstance(value, uuid.UUID):
        return "<zero-uuid>" if value == ZERO_UUID else ("<topic-id>" if topic_ids else str(value))
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, str):
        match = _CLUSTER_DENIAL.match(value)
        if match:
            return f"Request <request> needs {match.group(1)} permission."
        # each upstream has its own cluster id and voters' directory ids: Raft names them in its refusals
        value = _CLUSTER_ID_TEXT.sub('cluster id "<cluster-id>"', value)
        value = _ATTEMPT_COUNTS.sub("(<n> attempts, <n> lost or not connected;", value)
        return _VOTER_SET.sub(lambda m: "set of voters [" + _DIRECTORY_ID.sub("directoryId=<directory-id>", m.group(1)) + "]", value)
    if isinstance(value, (tuple, list)):
        items = [normalise(v, topic_ids=topic_ids) for v in value]
        if items and all(isinstance(i, dict) for i in items):
            # Kafka answers many per-resource lists in the order of a hash map (DeleteTopics even shuffles): order is no answer.
            return sorted(items, key=lambda i: json.dumps(i, sort_keys=True, default=str))
        return items
    if isinstance(value, float) or isinstance(value, int) or value is None or isinstance(value, bool):
        return value
    return str(value)


PROXY_OVERRIDES = {"edge.acl.refresh.ms": "0"}  # reads decide with the ACLs as they are now, on both sides
_JAAS = "listener.name.controller.plain.sasl.jaas.config"
# Delegation tokens on with the node's secret, and the users who read from the embedded controller as from the node's broker.
EMBEDDED_CONTROLLER_OVERRIDES = {"delegation.token.secret.key": DELEGATION_TOKEN_SECRET, _JAAS: controller_properties(users=DEFAULT_USERS)[_JAAS]}


@contextlib.contextmanager
def running_sides(node: KafkaNode, workdir: Path) -> Iterator[tuple[Side, Side]]:
    """A proxy in front of the embedded controller and one in front of `node`, in a trio loop on a thread."""
    ready = threading.Event()
    started: list[tuple[Target, Target]] = []
    failure: list[BaseException] = []
    token: list[trio.lowlevel.TrioToken] = []
    stop = trio.Event()

    async def main() -> None:
        try:
            async with trio.open_nursery() as nursery:
                embedded = await embedded_target(nursery, workdir / "audit-embedded", PROXY_OVERRIDES, EMBEDDED_CONTROLLER_OVERRIDES)
                kafka = await kafka_target(nursery, node, workdir / "audit-kafka", PROXY_OVERRIDES)
                started.append((embedded, kafka))
                token.append(trio.lowlevel.current_trio_token())
                ready.set()
                await stop.wait()
                nursery.cancel_scope.cancel()
        except BaseException as exc:  # reported to the test thread
            failure.append(exc)
            ready.set()

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    assert ready.wait(120), "the proxies did not start"
    if failure:
        raise failure[0]
    embedded, kafka = started[0]
    sides = (Side("embedded", embedded.address, embedded), Side("kafka", kafka.address, kafka))
    try:
        yield sides
    finally:
        for side in sides:
            side.close()
        trio.from_thread.run_sync(stop.set, trio_token=token[0])
        thread.join(30)


# --------------------------------------------------------------------------- scenarios as data


class Names:
    """A group's names: `n("orders")` is the topic (or resource) `orders` of this run's group, `n.id("orders")`
    its topic id on the side being asked (ids differ between the two upstreams)."""

    def __init__(self, prefix: str, ids: dict[str, uuid.UUID]) -> None:
        self.prefix = prefix
        self._ids = ids
        self.tokens: dict[str, tuple[str, bytes]] = {}
        """Delegation tokens this side created in the group: label -> (token id, HMAC)."""

    def hmac(self, label: str) -> bytes:
        """The HMAC of the token kept as `label` on this side (64 zero bytes, which names no token, before it is made)."""
        return self.tokens.get(label, ("", bytes(64)))[1]

    def token_label(self, token_id: str) -> str | None:
        return next((label for label, (kept, _) in self.tokens.items() if kept == token_id), None)

    def hmac_label(self, hex_hmac: str) -> str | None:
        return next((label for label, (_, kept) in self.tokens.items() if kept.hex() == hex_hmac), None)

    def __call__(self, name: str) -> str:
        return self.prefix + name

    def id(self, name: str) -> uuid.UUID:
        return self._ids.get(self(name), uuid.UUID("00000000-0000-0000-0000-00000000beef"))

    def resource(self, template: str) -> str:
        """`{p}` in an ACL's text becomes the prefix; `*` and `kafka-cluster` stay what Kafka makes of them."""
        return template.replace("{p}", self.prefix)


@dataclass(frozen=True)
class Acl:
    """An ACL installed as admin before a group runs; `{p}` in names and principals is the group's prefix."""

    principal: str
    operation: str
    resource_type: str = "TOPIC"
    name: str = "{p}"
    pattern: str = "PREFIXED"
    permission: str = "ALLOW"
    host: str = "*"

    def creation(self, names: Names) -> dict[str, Any]:
        from authz import Operation, PatternType, PermissionType, ResourceType

        return {
            "resource_type": ResourceType[self.resource_type],
            "resource_name": names.resource(self.name),
            "resource_pattern_type": PatternType[self.pattern],
            "principal": names.resource(self.principal),
            "host": self.host,
            "operation": Operation[self.operation],
            "permission_type": PermissionType[self.permission],
        }


Values = Callable[[Names], dict[str, Any]]


@dataclass(frozen=True)
class Call:
    """One scenario: `user` (from `host`) sends `api` v`version` with `values(names)`; both answers must agree."""

    name: str
    api: ApiKey
    version: int
    values: Values
    user: str = "alice"
    host: str = "127.0.0.1"
    via: str = "proxy"
    """proxy: through the proxy; envelope: in an Envelope to the controller as `principal`; read: where clients read."""
    principal: str | None = None
    """The Envelope's principal (`{p}` is the group's prefix); default User:<user>."""
    token_login: bool = False
    """The Envelope's principal logged in with a delegation token (DefaultPrincipalData.TokenAuthenticated)."""
    keep: str | None = None
    """A label to keep the delegation token this call creates under."""
    pause: float = 0.0
    """Seconds to wait before sending (a token's lifetime runs out)."""


@dataclass(frozen=True)
class Group:
    """Scenarios that share ACLs and topics; they run in order (a scenario may change what the next one sees)."""

    name: str
    calls: tuple[Call, ...]
    acls: tuple[Acl, ...] = ()
    topics: tuple[str, ...] = ()  # created (1 partition) as admin first
    scram_users: tuple[str, ...] = ()  # SCRAM users (`{p}` allowed) whose credentials are removed afterwards
    quota_entities: tuple[tuple[tuple[str, str | None], ...], ...] = ()  # quota entities whose keys are removed afterwards


@dataclass
class Difference:
    group: str
    call: str
    embedded: Any
    kafka: Any

    def __str__(self) -> str:
        return f"{self.group} / {self.call}:\n  embedded: {json.dumps(self.embedded, default=str)}\n  kafka:    {json.dumps(self.kafka, default=str)}"


READS = frozenset(
    {
        ApiKey.DESCRIBE_ACLS,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.METADATA,
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
    }
)
TOKEN_APIS = frozenset({ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN})
READ_CATCH_UP = 3.0  # seconds a broker may take to learn a committed change
PROBE_USER = "mallory"
PROBE_TOPIC = "probe"
ADMIN = "admin"
PROPAGATION_TIMEOUT = 15.0
CREATE_ACLS_VERSION, DELETE_ACLS_VERSION, DESCRIBE_ACLS_VERSION = 3, 3, 3
CREATE_TOPICS_VERSION, DELETE_TOPICS_VERSION = 7, 6
SCRAM_MECHANISMS = (1, 2)
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate", "connection_creation_rate")


def _probe_acl() -> Acl:
    return Acl(f"User:{PROBE_USER}", "CREATE", name="{p}" + PROBE_TOPIC, pattern="LITERAL")


def _probe(side: Side, names: Names) -> bool:
    """Whether the controller already decides with the group's ACLs: the probe user may create the probe topic."""
    topic = {"name": names(PROBE_TOPIC), "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    answer = side.send(PROBE_USER, "127.0.0.1", ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, {"topics": [topic], "timeout": 30000, "validate_only": True})
    return answer is not CLOSED and int(answer.topics[0].error_code) == 0


def _wait_for(side: Side, names: Names, installed: bool) -> None:
    deadline = time.monotonic() + PROPAGATION_TIMEOUT
    while _probe(side, names) != installed:
        if time.monotonic() > deadline:
            raise AssertionError(f"{side.kind}: the group's ACLs were not {'applied' if installed else 'removed'} within {PROPAGATION_TIMEOUT}s")
        time.sleep(0.05)


def _set_up(side: Side, group: Group, names: Names, ids: dict[str, uuid.UUID]) -> None:
    if group.topics:
        topics = [{"name": names(t), "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []} for t in group.topics]
        answer = side.send(ADMIN, "127.0.0.1", ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, {"topics": topics, "timeout": 30000, "validate_only": False})
        assert answer is not CLOSED and all(int(t.error_code) == 0 for t in answer.topics), (side.kind, answer)
        ids.update({str(t.name): t.topic_id for t in answer.topics})
    creations = [acl.creation(names) for acl in (*group.acls, _probe_acl())]
    answer = side.send(ADMIN, "127.0.0.1", ApiKey.CREATE_ACLS, CREATE_ACLS_VERSION, {"creations": creations})
    assert answer is not CLOSED and all(int(r.error_code) == 0 for r in answer.results), (side.kind, answer)
    _wait_for(side, names, installed=True)


def _ours(names: Names, binding: Any, resource_name: str) -> bool:
    """An ACL this group made: its resource or principal carries the group's prefix."""
    return names.prefix in resource_name or names.prefix in str(binding.principal)


def _tear_down(side: Side, group: Group, names: Names, installed: list[dict[str, Any]], topic_names: set[str]) -> None:
    from authz import Operation, PatternType, PermissionType, ResourceType

    everything = {
        "resource_type_filter": ResourceType.ANY,
        "resource_name_filter": None,
        "pattern_type_filter": PatternType.ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": Operation.ANY,
        "permission_type": PermissionType.ANY,
    }
    described = side.send(ADMIN, "127.0.0.1", ApiKey.DESCRIBE_ACLS, DESCRIBE_ACLS_VERSION, everything)
    filters = [
        {
            "resource_type_filter": c["resource_type"],
            "resource_name_filter": c["resource_name"],
            "pattern_type_filter": c["resource_pattern_type"],
            "principal_filter": c["principal"],
            "host_filter": c["host"],
            "operation": c["operation"],
            "permission_type": c["permission_type"],
        }
        for c in installed
    ]
    if described is not CLOSED:
        for resource in described.resources:
            for acl in resource.acls:
                if _ours(names, acl, str(resource.resource_name)):
                    filters.append(
                        {
                            "resource_type_filter": int(resource.resource_type),
                            "resource_name_filter": str(resource.resource_name),
                            "pattern_type_filter": int(resource.pattern_type),
                            "principal_filter": str(acl.principal),
                            "host_filter": str(acl.host),
                            "operation": int(acl.operation),
                            "permission_type": int(acl.permission_type),
                        }
                    )
    side.send(ADMIN, "127.0.0.1", ApiKey.DELETE_ACLS, DELETE_ACLS_VERSION, {"filters": filters})
    if topic_names:
        side.send(ADMIN, "127.0.0.1", ApiKey.DELETE_TOPICS, DELETE_TOPICS_VERSION, {"topics": [{"name": t, "topic_id": ZERO_UUID} for t in sorted(topic_names)], "timeout": 30000})
    users = [names.resource(u) for u in group.scram_users]
    if users:
        deletions = [{"name": u, "mechanism": m} for u in users for m in SCRAM_MECHANISMS]
        side.send(ADMIN, "127.0.0.1", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": deletions, "upsertions": []})
    if group.quota_entities:
        entries = [
            {
                "entity": [{"entity_type": kind, "entity_name": None if name is None else names.resource(name)} for kind, name in entity],
                "ops": [{"key": key, "value": 0.0, "remove": True} for key in QUOTA_KEYS if (key == "connection_creation_rate") == (entity[0][0] == "ip")],
            }
            for entity in group.quota_entities
        ]
        side.send(ADMIN, "127.0.0.1", ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": entries, "validate_only": False})
    _wait_for(side, names, installed=False)


def _topic_names(value: Any, prefix: str, found: set[str]) -> None:
    """Every string in a request that names one of the group's topics (to delete them afterwards)."""
    if isinstance(value, str) and value.startswith(prefix) and value != prefix:
        found.add(value)
    elif isinstance(value, dict):
        for item in value.values():
            _topic_names(item, prefix, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _topic_names(item, prefix, found)


def _own(answer: Any, api: int, prefix: str) -> Any:
    """A DescribeAcls answer without the bindings of the shared node's other tenants (neither their resource
    nor their principal carries this group's prefix), a DescribeDelegationToken answer without their tokens (no
    owner, requester or renewer of the group's): state that is not the scenario's must differ."""
    if api == ApiKey.DESCRIBE_DELEGATION_TOKEN and isinstance(answer, dict) and answer.get("tokens"):
        tokens = [
            t
            for t in answer["tokens"]
            if any(prefix in str(name) for name in (t["principal_name"], t.get("token_requester_principal_name", ""), *(r["principal_name"] for r in t["renewers"])))
        ]
        return {**answer, "tokens": tokens}
    if api != ApiKey.DESCRIBE_ACLS or not isinstance(answer, dict) or not answer.get("resources"):
        return answer
    resources = []
    for resource in answer["resources"]:
        acls = [a for a in resource["acls"] if prefix in str(resource["resource_name"]) or prefix in str(a["principal"])]
        if acls:
            resources.append({**resource, "acls": acls})
    return {**answer, "resources": resources}


_WALL_CLOCK = 10**12  # a time in ms above this is a wall-clock time (2001 on), not -1, 0 or a period
# Times compare to 10 s after a change (a round trip is far below half of it), and to a minute in a described token,
# whose expiry was set some calls after it was issued: each side's own pace moves it by seconds, a group's run by less
# than half a minute.
_CHANGE_STEP_MS, _DESCRIBED_STEP_MS = 10_000, 60_000


def _relative(value: Any, base: int, name: str, step: int = _CHANGE_STEP_MS) -> Any:
    if not isinstance(value, int) or value < _WALL_CLOCK:
        return value
    return f"{name}{round((value - base) / step) * step // 1000:+d}s"


def _token_view(token: dict[str, Any], names: Names, step: int = _CHANGE_STEP_MS) -> dict[str, Any]:
    """A token (a CreateDelegationToken answer or a described one) by its label, times relative to its issue time."""
    view = dict(token)
    if view.get("token_id"):
        view["token_id"] = f"<token {names.token_label(view['token_id']) or '?'}>"
    if view.get("hmac"):
        label = names.hmac_label(view["hmac"])
        view["hmac"] = f"<hmac of {label}>" if label else f"<{len(view['hmac']) // 2}-byte hmac>"
    issued = view.get("issue_timestamp")
    if isinstance(issued, int) and issued >= _WALL_CLOCK:
        view["issue_timestamp"] = "<issued>"
        for name in ("expiry_timestamp", "max_timestamp"):
            view[name] = _relative(view[name], issued, "issued", step)
    return view


def _tokens(answer: Any, api: int, names: Names, sent_ms: int) -> Any:
    """A token API's answer as both upstreams can agree on it: ids and HMACs by label, times relative."""
    if api not in TOKEN_APIS or not isinstance(answer, dict):
        return answer
    if api == ApiKey.CREATE_DELEGATION_TOKEN:
        return _token_view(answer, names)
    if api == ApiKey.DESCRIBE_DELEGATION_TOKEN:
        tokens = [_token_view(t, names, _DESCRIBED_STEP_MS) for t in answer.get("tokens", [])]
        return {**answer, "tokens": sorted(tokens, key=lambda t: json.dumps(t, sort_keys=True, default=str))}
    return {**answer, "expiry_timestamp": _relative(answer.get("expiry_timestamp"), sent_ms, "now")}


def _keep(call: Call, answer: Any, names: Names) -> None:
    if call.keep and answer is not CLOSED and not isinstance(answer, str) and getattr(answer, "token_id", ""):
        names.tokens[call.keep] = (str(answer.token_id), bytes(answer.hmac))


def _answer(side: Side, call: Call, names: Names, prefix: str) -> Any:
    """Send `call` on one side: its answer as compared."""
    if call.pause:
        time.sleep(call.pause)
    values = call.values(names)
    sent_ms = int(time.time() * 1000)
    answer = side.call(call, values, names)
    _keep(call, answer, names)
    return _tokens(_own(normalise(answer), call.api, prefix), call.api, names, sent_ms)


def _catching_up(call: Call, embedded: Any, kafka: Any) -> bool:
    """Whether the real node may still be learning what the scenario just did: a read, or a token the controller's
    cache has not seen yet (Kafka answers a renew or expire from the cache its metadata publisher fills after commit)."""
    if call.api in READS:
        return True
    token_change = call.api in (ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN)
    not_found = isinstance(kafka, dict) and kafka.get("error_code") == ErrorCode.delegation_token_not_found
    return token_change and not_found and not (isinstance(embedded, dict) and embedded.get("error_code") == ErrorCode.delegation_token_not_found)


def run_group(sides: tuple[Side, Side], group: Group, prefix: str) -> tuple[int, list[Difference]]:
    """Run one group on both sides; (scenarios run, differences)."""
    ids: dict[str, dict[str, uuid.UUID]] = {side.kind: {} for side in sides}
    names = {side.kind: Names(prefix, ids[side.kind]) for side in sides}
    differences: list[Difference] = []
    topic_names: set[str] = {names[sides[0].kind](t) for t in group.topics}
    try:
        for side in sides:
            _set_up(side, group, names[side.kind], ids[side.kind])
        for call in group.calls:
            answers = {}
            for side in sides:
                _topic_names(call.values(names[side.kind]), prefix, topic_names)
                answers[side.kind] = _answer(side, call, names[side.kind], prefix)
            if answers["embedded"] != answers["kafka"] and _catching_up(call, answers["embedded"], answers["kafka"]):
                # A real cluster's broker answers reads from metadata it learns a moment after the controller
                # commits: a read may be asked again (it changes nothing) until the broker has caught up; so may a
                # token change its controller answered DELEGATION_TOKEN_NOT_FOUND (nothing changed).
                kafka = sides[1]
                deadline = time.monotonic() + READ_CATCH_UP
                while answers["kafka"] != answers["embedded"] and time.monotonic() < deadline:
                    time.sleep(0.1)
                    answers["kafka"] = _answer(kafka, dataclasses.replace(call, pause=0.0), names[kafka.kind], prefix)
            if answers["embedded"] != answers["kafka"]:
                differences.append(Difference(group.name, call.name, answers["embedded"], answers["kafka"]))
    finally:
        installed = [acl.creation(names[sides[0].kind]) for acl in (*group.acls, _probe_acl())]
        for side in sides:
            _tear_down(side, group, names[side.kind], installed, topic_names)
    return len(group.calls), differences
