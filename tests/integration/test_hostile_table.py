"""Hostile inputs, one table, over loopback to a running proxy process in front of the embedded controller.

For every case: the answer Kafka would give (an error code, or the connection
closed), the proxy process still alive and answering another connection (within 1 s while a
case is in flight), and the audit record the case left (matched by the attacking socket's port).
"""

import itertools
import re
import resource
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from devkit import wire
from devkit.processes import free_port, wait_for_port, write_properties
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from envelope.frames import FrameReader, encode_frame
from envelope.header import peek_request_header
from envelope.varints import write_uvarint
from envelope_proxy.embedded import controller_properties, proxy_properties
from tests.audit_records import records_under

# Long enough for a loaded machine to accept the idle crowd and answer beside it before the crowd's connections time
# out together (a thousand closes at once are another case), short enough for the slowloris case's 8 s.
PREAUTH_IDLE_MS = 4000
IDLE_CROWD = 1000
# The crowd of idle connections needs file descriptors, here and in the proxy (which inherits the limit).
_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if _soft < 3 * IDLE_CROWD and _hard > _soft:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(_hard, 8 * IDLE_CROWD), _hard))
ANSWER_BOUND = 1.0
# On a loaded machine every answer is slow: the bound is also this many times the same answer's time measured just
# before, with nothing hostile in flight. A proxy held up by the case waits for the case itself, far longer.
BASELINE_FACTOR = 5.0
# After a case, the proxy may still be working off what the case left (a thousand closes and their audit
# records): the check there is that it lives and answers someone else, well before any client timeout.
ALIVE_BOUND = 10.0
_ids = itertools.count(1)


@dataclass
class Stack:
    proxy: "subprocess.Popen[bytes]"
    plain: str
    sasl: str
    audit_dir: Path
    metrics: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("hostile")
    controller_port, sasl_port, plain_port, metrics_port = free_port(), free_port(), free_port(), free_port()
    controller_file = write_properties(work / "controller.properties", controller_properties(port=controller_port))
    props = proxy_properties(controller_port, work / "audit")
    props.update(
        {
            "listeners": f"CLIENT://127.0.0.1:{sasl_port},PLAIN://127.0.0.1:{plain_port}",
            "audit.durability": "flush",
            "connections.preauth.idle.ms": str(PREAUTH_IDLE_MS),
            "audit.file.rotate.ms": "0",
            "metrics.listen": f"127.0.0.1:{metrics_port}",
        }
    )
    proxy_file = write_properties(work / "proxy.properties", props)
    logs = [(work / "controller.log").open("wb"), (work / "proxy.log").open("wb")]
    command = [sys.executable, "-m", "envelope_proxy.cli"]
    controller = subprocess.Popen([*command, "controller", "--config", str(controller_file)], stdout=logs[0], stderr=subprocess.STDOUT)
    proxy = subprocess.Popen([*command, "run", "--config", str(proxy_file)], stdout=logs[1], stderr=subprocess.STDOUT)
    try:
        wait_for_port(controller_port, controller)
        wait_for_port(sasl_port, proxy)
        wait_for_port(plain_port, proxy)
        wait_for_port(metrics_port, proxy)
        yield Stack(proxy, f"127.0.0.1:{plain_port}", f"127.0.0.1:{sasl_port}", work / "audit", f"http://127.0.0.1:{metrics_port}/metrics")
    finally:
        for server in (proxy, controller):
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
        for log in logs:
            log.close()


# -- talking to it ------------------------------------------------------------------------


@dataclass
class Seen:
    """What one case's connection saw: decoded answers (or raw frames) and whether the proxy closed it."""

    answers: list[Any]
    closed: bool


def _closed(sock: socket.socket, timeout: float = 5.0) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _read(sock: socket.socket, timeout: float = 10.0) -> bytes | None:
    """The next answer frame, or None when the proxy closed the connection instead."""
    sock.settimeout(timeout)
    reader = FrameReader()
    try:
        while (frame := reader.next_frame()) is None:
            data = sock.recv(65536)
            if not data:
                return None
            reader.feed(data)
    except (ConnectionResetError, BrokenPipeError):
        return None
    return frame


def _call(sock: socket.socket, api_key: int, version: int, frame: bytes) -> Any:
    sock.sendall(encode_frame(frame))
    answer = _read(sock)
    return None if answer is None else decode_response_body(api_key, version, answer)[1]


def _login(sock: socket.socket, user: str = "admin", password: str = "admin-secret") -> None:
    assert wire.sasl_plain_login(sock, user, password) == 0


def _api_versions(name: str = "hostile-test", version: str = "1") -> bytes:
    return wire.request(ApiKey.API_VERSIONS, 3, {"client_software_name": name, "client_software_version": version}, correlation_id=next(_ids))


def _create_topics(name: str, version: int = 7, configs: list[dict[str, Any]] | None = None) -> bytes:
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": configs or []}
    return wire.request(ApiKey.CREATE_TOPICS, version, {"topics": [topic], "timeout": 30000, "validate_only": False}, correlation_id=next(_ids))


def _delete_topics(name: str) -> bytes:
    return wire.request(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": None}], "timeout": 30000}, correlation_id=next(_ids))


def _create_acls(topic: str) -> bytes:
    creation = {
        "resource_type": 2,
        "resource_name": topic,
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    return wire.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}, correlation_id=next(_ids))


def _delete_acls() -> bytes:
    acl_filter = {
        "resource_type_filter": 2,
        "resource_name_filter": "nothing-here",
        "pattern_type_filter": 3,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    return wire.request(ApiKey.DELETE_ACLS, 3, {"filters": [acl_filter]}, correlation_id=next(_ids))


def _alter_configs() -> bytes:
    resource = {"resource_type": 2, "resource_name": "t", "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1"}]}
    return wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": False}, correlation_id=next(_ids))


def _metadata(names: list[str]) -> bytes:
    values = {"topics": [{"name": n, "topic_id": None} for n in names], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return wire.request(ApiKey.METADATA, 12, values, correlation_id=next(_ids))


def _first_count(frame: bytes, count: bytes) -> bytes:
    """The frame with the body's first count (a one-byte compact count here) replaced."""
    offset = peek_request_header(frame).header_size
    return frame[:offset] + count + frame[offset + 1 :]


def _first_int32(frame: bytes, count: int) -> bytes:
    """The frame with the body's first (non-flexible, int32) count replaced."""
    offset = peek_request_header(frame).header_size
    return frame[:offset] + struct.pack(">i", count) + frame[offset + 4 :]


def _name_length(frame: bytes, length: int) -> bytes:
    """A flexible request whose first entry's name claims `length` bytes."""
    offset = peek_request_header(frame).header_size + 1
    return frame[:offset] + write_uvarint(length + 1) + frame[offset + 1 :]


def _tag_before(frame: bytes, from_end: int) -> bytes:
    """An unknown tagged field (tag 9, one byte) in the empty tag section that ends `from_end` bytes before the end."""
    at = len(frame) - from_end - 1
    assert frame[at] == 0
    return frame[:at] + bytes([1, 9, 1, 0x2A]) + frame[at + 1 :]


# -- the cases ----------------------------------------------------------------------------

Exchange = Callable[[socket.socket], Seen]


@dataclass(frozen=True)
class Case:
    id: str
    listener: str  # "plain" (PLAINTEXT, no login) or "sasl" (SASL_PLAINTEXT, PLAIN)
    exchange: Exchange
    closed: bool
    audit: Callable[[list[dict[str, Any]]], bool]
    """Holds for the records of this case's connection once the audit caught up."""


def _raw(payload: bytes, *, after: Callable[[socket.socket], None] | None = None) -> Exchange:
    def run(sock: socket.socket) -> Seen:
        sock.sendall(payload)
        if after is not None:
            after(sock)
        return Seen([], _closed(sock))

    return run


def _frames(*frames: bytes, login: bool = False, api_key: int = 19, version: int = 7) -> Exchange:
    def run(sock: socket.socket) -> Seen:
        if login:
            _login(sock)
        answers = []
        for frame in frames:
            answer = _call(sock, api_key, version, frame)
            if answer is None:
                return Seen(answers, True)
            answers.append(answer)
        return Seen(answers, _closed(sock, 0.5))

    return run


def _stages(records: list[dict[str, Any]]) -> list[str]:
    return [r["data"]["stage"] for r in records]


def _protocol_refusal(records: list[dict[str, Any]]) -> bool:
    refused = [r for r in records if r["type"].endswith(".connection") and r["data"]["stage"] == "refused"]
    disconnected = [r for r in records if r["data"]["stage"] == "disconnected"]
    return (
        any(r["data"]["authorizationInfo"]["reason"] == "protocol-error" for r in refused)
        and bool(disconnected)
        and disconnected[-1]["data"]["connection"]["cause"] == "protocol-error"
    )


def _disconnected(cause: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda records: any(r["data"]["stage"] == "disconnected" and r["data"]["connection"]["cause"] == cause for r in records)


def _request_refused(fragment: str, api_key: int | None = None) -> Callable[[list[dict[str, Any]]], bool]:
    def check(records: list[dict[str, Any]]) -> bool:
        refused = [r for r in records if r["type"].endswith(".request") and r["data"]["stage"] == "refused"]
        return (
            any(fragment in r["data"]["authorizationInfo"]["reason"] and api_key in (None, r["data"]["apiKey"]) for r in refused)
            and "intent" not in _stages(records)
            and _disconnected("protocol-error")(records)
        )

    return check


def _login_failed(records: list[dict[str, Any]]) -> bool:
    failed = [r for r in records if r["data"]["stage"] == "authentication-failed"]
    return bool(failed) and all(len(r["data"]["authenticationInfo"]["principal"] or "") <= 300 for r in failed)


def _bad_body(name: str, frame: bytes, api_key: int, *, listener: str = "sasl") -> Case:
    return Case(name, listener, _frames(frame, login=listener == "sasl", api_key=api_key), True, _request_refused("cannot be decoded", api_key))


def _frame_with_client_id_length(length: int) -> bytes:
    header = struct.pack(">hhih", 18, 3, 1, length) + b"abcd"
    return encode_frame(header + bytes(20 - len(header)))


def _slowloris(sock: socket.socket) -> Seen:
    sock.sendall(struct.pack(">i", 64))
    started = time.monotonic()
    sock.settimeout(0.4)
    for _ in range(30):  # at most 12 s of trickling
        try:
            sock.sendall(b"\x00")
            if sock.recv(1) == b"":
                break
        except TimeoutError:
            continue
        except OSError:
            break
    assert time.monotonic() - started < 8, "the proxy let a trickling peer hold the connection"
    return Seen([], True)


def _two_api_versions(sock: socket.socket) -> Seen:
    first = _call(sock, ApiKey.API_VERSIONS, 3, _api_versions())
    assert first is not None and int(first.error_code) == 0
    return Seen([first], _call(sock, ApiKey.API_VERSIONS, 3, _api_versions()) is None)


def _bad_software_name(sock: socket.socket) -> Seen:
    bad = _call(sock, ApiKey.API_VERSIONS, 3, _api_versions("bad name!\n<script>"))
    assert bad is not None and int(bad.error_code) == ErrorCode.invalid_request and not bad.api_keys
    good = _call(sock, ApiKey.API_VERSIONS, 3, _api_versions())
    assert good is not None and int(good.error_code) == 0 and good.api_keys
    _login(sock)
    return Seen([bad, good], False)


def _long_software_name(sock: socket.socket) -> Seen:
    answer = _call(sock, ApiKey.API_VERSIONS, 3, _api_versions("a" * 30000))
    assert answer is not None and int(answer.error_code) == 0
    _login(sock)
    cluster = _call(sock, ApiKey.DESCRIBE_CLUSTER, 0, wire.request(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}, correlation_id=next(_ids)))
    assert cluster is not None and int(cluster.error_code) == 0
    return Seen([answer, cluster], False)


def _plain_token(token: bytes) -> Exchange:
    def run(sock: socket.socket) -> Seen:
        handshake = _call(sock, ApiKey.SASL_HANDSHAKE, 1, wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, correlation_id=next(_ids)))
        assert handshake is not None and int(handshake.error_code) == 0
        answer = _call(sock, ApiKey.SASL_AUTHENTICATE, 2, wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}, correlation_id=next(_ids)))
        assert answer is not None and int(answer.error_code) == ErrorCode.sasl_authentication_failed, answer
        return Seen([answer], _closed(sock))

    return run


def _handshake(mechanism: str, expected: int) -> Exchange:
    def run(sock: socket.socket) -> Seen:
        answer = _call(sock, ApiKey.SASL_HANDSHAKE, 1, wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism}, correlation_id=next(_ids)))
        assert answer is not None and int(answer.error_code) == expected
        return Seen([answer], _closed(sock))

    return run


def _tagged_create(where: str) -> tuple[Exchange, Callable[[list[dict[str, Any]]], bool]]:
    name = f"tagged-{where}-{uuid.uuid4().hex[:6]}"
    if where == "config":
        frame = _create_topics(name, configs=[{"name": "retention.ms", "value": "60000"}])
        at = frame.index(b"60000") + len(b"60000")  # the config entry's empty tag section follows its value
        frame = frame[:at] + bytes([1, 9, 1, 0x2A]) + frame[at + 1 :]
    else:
        # top level: the last byte; the topic entry's section: before timeout (4), validate_only (1) and the top section (1)
        frame = _tag_before(_create_topics(name), 0 if where == "top" else 6)

    def run(sock: socket.socket) -> Seen:
        _login(sock)
        answer = _call(sock, ApiKey.CREATE_TOPICS, 7, frame)
        assert answer is not None
        assert [(str(t.name), int(t.error_code)) for t in answer.topics] == [(name, 0)]
        return Seen([answer], False)

    def audited(records: list[dict[str, Any]]) -> bool:
        stages = {r["data"]["stage"]: r for r in records if r["type"].endswith(".request") and r["data"]["apiKey"] == 19}
        return all(
            stage in stages
            and stages[stage]["subject"] == f"topic:{name}"
            and [x["name"] for x in stages[stage]["data"]["resources"]] == [name]
            for stage in ("intent", "outcome")
        ) and stages["intent"]["data"]["requestId"] == stages["outcome"]["data"]["requestId"]

    return run, audited


def _tagged_delete() -> tuple[Exchange, Callable[[list[dict[str, Any]]], bool]]:
    name = f"tagged-delete-{uuid.uuid4().hex[:6]}"

    def run(sock: socket.socket) -> Seen:
        _login(sock)
        created = _call(sock, ApiKey.CREATE_TOPICS, 7, _create_topics(name))
        assert created is not None and int(created.topics[0].error_code) == 0
        deleted = _call(sock, ApiKey.DELETE_TOPICS, 6, _tag_before(_delete_topics(name), 0))
        assert deleted is not None and [int(r.error_code) for r in deleted.responses] == [0]
        return Seen([created, deleted], False)

    def audited(records: list[dict[str, Any]]) -> bool:
        return any(r["data"]["stage"] == "intent" and r["data"]["apiKey"] == 20 and r["subject"] == f"topic:{name}" for r in records)

    return run, audited


def _tagged_acl() -> tuple[Exchange, Callable[[list[dict[str, Any]]], bool]]:
    topic = f"tagged-acl-{uuid.uuid4().hex[:6]}"

    def run(sock: socket.socket) -> Seen:
        _login(sock)
        answer = _call(sock, ApiKey.CREATE_ACLS, 3, _tag_before(_create_acls(topic), 1))  # the creation's section precedes the top section
        assert answer is not None and [int(r.error_code) for r in answer.results] == [0]
        return Seen([answer], False)

    def audited(records: list[dict[str, Any]]) -> bool:
        return any(r["data"]["stage"] == "intent" and [x["name"] for x in r["data"]["resources"]] == [topic] for r in records)

    return run, audited


def _trailing_bytes(sock: socket.socket) -> Seen:
    name = f"trailing-{uuid.uuid4().hex[:6]}"
    _login(sock)
    answer = _call(sock, ApiKey.CREATE_TOPICS, 7, _create_topics(name) + b"\x00\x01\x02")
    assert answer is not None and [int(t.error_code) for t in answer.topics] == [0]
    return Seen([answer], False)


def _pipelined_flood(sock: socket.socket) -> Seen:
    frames = [wire.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "flood", "client_software_version": "1"}, correlation_id=n) for n in range(2000)]
    sock.sendall(b"".join(encode_frame(f) for f in frames))
    reader, seen = FrameReader(), []
    sock.settimeout(60)
    while len(seen) < len(frames):
        data = sock.recv(65536)
        assert data, "the proxy closed the connection"
        reader.feed(data)
        seen += [struct.unpack_from(">i", answer)[0] for answer in reader.frames()]
    assert seen == list(range(2000)), "answers out of order or missing"
    return Seen(seen, False)


def _huge_metadata(address: str) -> Exchange:
    # Built before the connection opens: the first request must arrive within connections.preauth.idle.ms.
    big = encode_frame(_metadata([f"topic-{i:06d}" for i in range(100_000)]))

    def run(sock: socket.socket) -> Seen:
        sock.sendall(big)
        time.sleep(0.05)  # the proxy is now reading or working on it
        slowest = _slowest_answer(address, 10)
        answer = _read(sock, 120)
        assert answer is not None
        body = decode_response_body(3, 12, answer)[1]
        assert len(body.topics) == 100_000
        bound = _answer_bound(address)  # after: the connection had to send its request first, within the preauth idle
        assert slowest < bound, f"another connection waited {slowest:.3f}s behind the big request"
        return Seen([body], False)

    return run


def _slowest_answer(address: str, rounds: int) -> float:
    slowest = 0.0
    with wire.connect(address) as other:
        for _ in range(rounds):
            began = time.monotonic()
            answer = _call(other, 18, 3, _api_versions())
            assert answer is not None
            slowest = max(slowest, time.monotonic() - began)
    return slowest


def _answer_bound(address: str) -> float:
    return max(ANSWER_BOUND, BASELINE_FACTOR * _slowest_answer(address, 3))


def _open_connections(metrics_url: str, listener: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=10) as answer:
        text = answer.read().decode()
    found = re.search(rf'^envelope_proxy_connections_active{{listener="{listener}"}} (\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _idle_crowd(address: str, metrics_url: str) -> Exchange:
    def run(sock: socket.socket) -> Seen:
        crowd = []
        bound = _answer_bound(address)
        try:
            for _ in range(IDLE_CROWD):
                crowd.append(wire.connect(address))
            # measured once the proxy holds the whole crowd, each waiting for a first request (on a loaded machine
            # the accepts alone can take longer than a fixed pause), well before the crowd's preauth idle ends
            deadline = time.monotonic() + PREAUTH_IDLE_MS / 2000
            while _open_connections(metrics_url, "PLAIN") < IDLE_CROWD and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _slowest_answer(address, 3) < bound
        finally:
            for idle in crowd:
                idle.close()
        return Seen([], False)

    return run


def _cases(stack: Stack) -> list[Case]:
    create = _create_topics("hostile-create")
    delete = _delete_topics("hostile-delete")
    acls, delete_acls, configs = _create_acls("hostile-acl"), _delete_acls(), _alter_configs()
    tagged = {where: _tagged_create(where) for where in ("top", "entry", "config")}
    tagged_delete, tagged_acl = _tagged_delete(), _tagged_acl()
    six_byte_varint = b"\x82\x80\x80\x80\x80\x00"
    return [
        # frames
        Case("frame-size-minus-1", "plain", _raw(b"\xff\xff\xff\xff"), True, _protocol_refusal),
        Case("frame-size-int-max", "plain", _raw(b"\x7f\xff\xff\xff"), True, _protocol_refusal),
        Case("frame-size-over-socket-request-max-bytes", "plain", _raw(struct.pack(">i", 104857601)), True, _protocol_refusal),
        Case("tls-client-hello-on-plaintext", "plain", _raw(bytes.fromhex("16030100a5010000a10303") + bytes(32)), True, _protocol_refusal),
        Case("http-get-on-plaintext", "plain", _raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), True, _protocol_refusal),
        Case("client-id-length-past-the-frame", "plain", _raw(_frame_with_client_id_length(0x7FFF)), True, _protocol_refusal),
        Case("client-id-length-minus-2", "plain", _raw(_frame_with_client_id_length(-2)), True, _protocol_refusal),
        Case("frame-shorter-than-a-header", "plain", _raw(encode_frame(b"\x00\x12\x00")), True, _protocol_refusal),
        Case("truncated-frame", "plain", _raw(struct.pack(">i", 100) + bytes(10), after=lambda s: s.shutdown(socket.SHUT_WR)), True, _disconnected("client")),
        Case("slowloris-before-login", "sasl", _slowloris, True, _disconnected("idle")),
        Case("unknown-api-key", "plain", _frames(struct.pack(">hhih", 9999, 0, 1, -1)), True, _request_refused("not served")),
        Case("unknown-version", "plain", _frames(struct.pack(">hhih", 19, 99, 1, -1) + bytes(8)), True, _request_refused("version 99")),
        Case("envelope-from-a-client", "plain", _frames(struct.pack(">hhih", 58, 0, 1, -1) + b"\x00" + bytes(8)), True, _request_refused("Envelope is not accepted")),
        # SASL and before login
        Case("sasl-handshake-gssapi", "sasl", _handshake("GSSAPI", 33), True, _login_failed),
        Case("sasl-handshake-length-past-the-frame", "sasl", _raw(encode_frame(wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})[:-7] + b"\x7f\xffPL")), True, _protocol_refusal),
        Case("plain-token-with-two-parts", "sasl", _plain_token(b"\x00alice"), True, _login_failed),
        Case("plain-token-with-four-parts", "sasl", _plain_token(b"\x00alice\x00alice-secret\x00x"), True, _login_failed),
        Case("plain-authzid-mismatch", "sasl", _plain_token(b"bob\x00alice\x00alice-secret"), True, _login_failed),
        Case("plain-100-kb-user-name", "sasl", _plain_token(b"\x00" + b"u" * 100_000 + b"\x00pw"), True, _login_failed),
        Case("plain-invalid-utf8", "sasl", _plain_token(b"\x00\xff\xfe\x00pw"), True, _login_failed),
        Case("plain-wrong-password", "sasl", _plain_token(b"\x00alice\x00wrong"), True, _login_failed),
        Case("create-topics-before-login", "sasl", _frames(create), True, _protocol_refusal),
        Case("sasl-authenticate-before-handshake", "sasl", _frames(wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x00a\x00b"}), api_key=ApiKey.SASL_AUTHENTICATE, version=2), True, _protocol_refusal),
        Case("two-api-versions-before-handshake", "sasl", _two_api_versions, True, _protocol_refusal),
        Case("invalid-software-name", "sasl", _bad_software_name, False, lambda rs: any(r["data"]["stage"] == "refused" and r["data"]["result"]["errorCode"] == ErrorCode.invalid_request for r in rs)),
        Case(
            "long-software-name",
            "sasl",
            _long_software_name,
            False,
            lambda rs: any(r["data"]["stage"] == "local" for r in rs)
            and all(len(r["data"]["requestMetadata"]["clientSoftwareName"] or "") <= 1100 for r in rs),
        ),
        Case("pre-login-frame-over-sasl-max-receive-size", "sasl", _raw(struct.pack(">i", 600_000) + bytes(1000)), True, _protocol_refusal),
        # bodies: array counts, nulls, lengths, varints
        _bad_body("create-topics-count-ff-ff-ff-ff-0f", _first_count(create, bytes.fromhex("ffffffff0f")), 19),
        _bad_body("create-topics-count-int32-max", _first_count(create, bytes.fromhex("ffffffff07")), 19),
        _bad_body("create-topics-count-past-the-frame", _first_count(create, write_uvarint(2**20)), 19),
        _bad_body("create-topics-null-topics", _first_count(create, b"\x00"), 19),
        _bad_body("create-topics-six-byte-varint", _first_count(create, six_byte_varint), 19),
        _bad_body("delete-topics-count-ff-ff-ff-ff-0f", _first_count(delete, bytes.fromhex("ffffffff0f")), 20),
        _bad_body("delete-topics-count-past-the-frame", _first_count(delete, write_uvarint(2**20)), 20),
        _bad_body("delete-topics-null-topics", _first_count(delete, b"\x00"), 20),
        _bad_body("create-acls-count-ff-ff-ff-ff-0f", _first_count(acls, bytes.fromhex("ffffffff0f")), 30),
        _bad_body("create-acls-null-creations", _first_count(acls, b"\x00"), 30),
        _bad_body("delete-acls-count-past-the-frame", _first_count(delete_acls, write_uvarint(2**20)), 31),
        _bad_body("delete-acls-null-filters", _first_count(delete_acls, b"\x00"), 31),
        _bad_body("incremental-alter-configs-count-ff-ff-ff-ff-0f", _first_count(configs, bytes.fromhex("ffffffff0f")), 44),
        _bad_body("incremental-alter-configs-null-resources", _first_count(configs, b"\x00"), 44),
        _bad_body("metadata-count-ff-ff-ff-ff-0f-without-login", _first_count(_metadata(["a"]), bytes.fromhex("ffffffff0f")), 3, listener="plain"),
        _bad_body("create-topics-v4-negative-count", _first_int32(_create_topics("v4", version=4), -2), 19),
        _bad_body("create-topics-name-longer-than-the-frame", _name_length(create, 1000), 19),
        # unknown tagged fields are skipped; the audit still names the resources
        Case("unknown-tag-top-level", "sasl", tagged["top"][0], False, tagged["top"][1]),
        Case("unknown-tag-in-topic-entry", "sasl", tagged["entry"][0], False, tagged["entry"][1]),
        Case("unknown-tag-in-config-entry", "sasl", tagged["config"][0], False, tagged["config"][1]),
        Case("unknown-tag-in-delete-topics", "sasl", tagged_delete[0], False, tagged_delete[1]),
        Case("unknown-tag-in-acl-creation", "sasl", tagged_acl[0], False, tagged_acl[1]),
        Case("trailing-bytes-after-the-body", "sasl", _trailing_bytes, False, lambda rs: "outcome" in _stages(rs)),
        # volume
        Case("pipelined-flood-of-2000", "plain", _pipelined_flood, False, lambda rs: _stages(rs).count("local") == 2000),
        Case("a-thousand-idle-connections", "plain", _idle_crowd(stack.plain, stack.metrics), False, lambda rs: True),
        Case("metadata-naming-100000-topics", "plain", _huge_metadata(stack.plain), False, lambda rs: any(r["data"]["stage"] == "read" for r in rs)),
    ]


_TABLES: dict[int, dict[str, Case]] = {}


def _table(stack: Stack) -> dict[str, Case]:
    """The cases, built once per stack (the 100,000-topic request takes seconds to build)."""
    if id(stack) not in _TABLES:
        _TABLES[id(stack)] = {c.id: c for c in _cases(stack)}
    return _TABLES[id(stack)]


def _records_of(audit_dir: Path, port: int) -> list[dict[str, Any]]:
    return [r for r in records_under(audit_dir) if r["data"]["requestMetadata"]["clientPort"] == port]


CASE_IDS = [
    "frame-size-minus-1", "frame-size-int-max", "frame-size-over-socket-request-max-bytes", "tls-client-hello-on-plaintext",
    "http-get-on-plaintext", "client-id-length-past-the-frame", "client-id-length-minus-2", "frame-shorter-than-a-header",
    "truncated-frame", "slowloris-before-login", "unknown-api-key", "unknown-version", "envelope-from-a-client",
    "sasl-handshake-gssapi", "sasl-handshake-length-past-the-frame", "plain-token-with-two-parts", "plain-token-with-four-parts",
    "plain-authzid-mismatch", "plain-100-kb-user-name", "plain-invalid-utf8", "plain-wrong-password", "create-topics-before-login",
    "sasl-authenticate-before-handshake", "two-api-versions-before-handshake", "invalid-software-name", "long-software-name",
    "pre-login-frame-over-sasl-max-receive-size", "create-topics-count-ff-ff-ff-ff-0f", "create-topics-count-int32-max",
    "create-topics-count-past-the-frame", "create-topics-null-topics", "create-topics-six-byte-varint",
    "delete-topics-count-ff-ff-ff-ff-0f", "delete-topics-count-past-the-frame", "delete-topics-null-topics",
    "create-acls-count-ff-ff-ff-ff-0f", "create-acls-null-creations", "delete-acls-count-past-the-frame", "delete-acls-null-filters",
    "incremental-alter-configs-count-ff-ff-ff-ff-0f", "incremental-alter-configs-null-resources",
    "metadata-count-ff-ff-ff-ff-0f-without-login", "create-topics-v4-negative-count", "create-topics-name-longer-than-the-frame",
    "unknown-tag-top-level", "unknown-tag-in-topic-entry", "unknown-tag-in-config-entry", "unknown-tag-in-delete-topics",
    "unknown-tag-in-acl-creation", "trailing-bytes-after-the-body", "pipelined-flood-of-2000", "a-thousand-idle-connections",
    "metadata-naming-100000-topics",
]


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_hostile_input(stack: Stack, case_id: str) -> None:
    case = _table(stack)[case_id]
    address = stack.plain if case.listener == "plain" else stack.sasl
    with wire.connect(address, timeout=30) as sock:
        port = sock.getsockname()[1]
        seen = case.exchange(sock)
        assert seen.closed == case.closed, f"{case.id}: expected the connection {'closed' if case.closed else 'open'}"
    # the proxy lives and answers someone else
    assert stack.proxy.poll() is None, "the proxy process died"
    assert _slowest_answer(stack.plain, 1) < ALIVE_BOUND
    # and the audit says what happened (written asynchronously: bounded wait)
    deadline = time.monotonic() + 15
    while not case.audit(records := _records_of(stack.audit_dir, port)):
        assert time.monotonic() < deadline, f"{case.id}: audit records {[(r['type'].rsplit('.', 1)[-1], r['data']['stage']) for r in records]}"
        time.sleep(0.1)


def test_the_table_is_the_whole_table(stack: Stack) -> None:
    assert list(_table(stack)) == CASE_IDS
    assert len(CASE_IDS) >= 40


def test_a_big_request_does_not_stop_a_concurrent_client(stack: Stack) -> None:
    """The same as the 100,000-topic case, but with the other client polling while the request is in flight."""
    slowest: list[float] = []

    def poll() -> None:
        slowest.append(_slowest_answer(stack.plain, 30))

    big = encode_frame(_metadata([f"t-{i:06d}" for i in range(100_000)]))
    bound = _answer_bound(stack.plain)
    with wire.connect(stack.plain, timeout=120) as sock:
        sock.sendall(big)
        poller = threading.Thread(target=poll)
        poller.start()
        assert _read(sock, 120) is not None
        poller.join(120)
    assert slowest and slowest[0] < bound
