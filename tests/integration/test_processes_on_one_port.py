"""Two real proxy processes on one port (`socket.reuse.port=true`) in front of the embedded controller (issue 48,
part 5): an ACL change forwarded through one process counts in the other at its very next decision, a token change
within the token generation's watch, and their audit records tell the two processes apart by `source`.

Both refresh periods are set to ten minutes, so only the shared generation (`edge.generation.dir`) can explain what
the other process sees. A connection is known to have landed on a process by the `connected` record that process
wrote for the connection's client port."""

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from authz import Operation, PatternType, PermissionType, ResourceType
from devkit import wire
from devkit.processes import free_port, start_server, stop_process, wait_for_port, write_properties
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties
from proxy.net.sasl.credentials import add_user
from tests.audit_records import assert_valid, records_under

TEN_MINUTES_MS = "600000"
SHA256 = "SCRAM-SHA-256"
DEADLINE = 90.0  # the whole module; every socket waits at most 10 s

GRANT = {
    "resource_type": int(ResourceType.CLUSTER),
    "resource_name": "kafka-cluster",
    "resource_pattern_type": int(PatternType.LITERAL),
    "principal": "User:alice",
    "host": "*",
    "operation": int(Operation.DESCRIBE),
    "permission_type": int(PermissionType.ALLOW),
}
GRANT_FILTER = {
    "resource_type_filter": GRANT["resource_type"],
    "resource_name_filter": GRANT["resource_name"],
    "pattern_type_filter": GRANT["resource_pattern_type"],
    "principal_filter": GRANT["principal"],
    "host_filter": GRANT["host"],
    "operation": GRANT["operation"],
    "permission_type": GRANT["permission_type"],
}
DESCRIBE_ALL_ACLS = {
    "resource_type_filter": int(ResourceType.ANY),
    "resource_name_filter": None,
    "pattern_type_filter": int(PatternType.ANY),
    "principal_filter": None,
    "host_filter": None,
    "operation": int(Operation.ANY),
    "permission_type": int(PermissionType.ANY),
}


class Proxies:
    """The two processes: their audit folders, and connections pinned to each by the records it wrote."""

    def __init__(self, tmp_path: Path, audit_dirs: list[Path], deadline: float) -> None:
        self.tmp_path = tmp_path
        self.audit_dirs = audit_dirs
        self.deadline = deadline
        self._ids = iter(range(10, 1_000_000))

    def correlation(self) -> int:
        return next(self._ids)

    def process_of(self, sock: socket.socket) -> int:
        """Which process wrote the `connected` record of this connection (by its client port)."""
        port = sock.getsockname()[1]
        end = min(self.deadline, time.monotonic() + 10)
        while time.monotonic() < end:
            for index, directory in enumerate(self.audit_dirs):
                for record in records_under(directory):
                    metadata = record["data"]["requestMetadata"]
                    if record["data"]["stage"] == "connected" and metadata["clientPort"] == port:
                        return index
            time.sleep(0.02)
        raise AssertionError(f"no process recorded the connection from port {port}")

    def connect_to(self, index: int, address: str, stack: ExitStack) -> socket.socket:
        """A connection that landed on process `index` (the kernel spreads them by a hash of the addresses)."""
        for _ in range(64):  # all 64 landing on the other one: about 1 in 10^19
            sock = wire.connect(address, timeout=10)
            if self.process_of(sock) == index:
                return stack.enter_context(sock)
            sock.close()
        raise AssertionError(f"64 connections to {address} and none landed on process {index}")

    def sources(self) -> list[set[str]]:
        return [{record["source"] for record in records_under(directory)} for directory in self.audit_dirs]


def _wait_for_log(log: Path, text: str, count: int, process: "subprocess.Popen[Any]", deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"exited early with {process.returncode}:\n{log.read_text()}")
        if log.exists() and log.read_text().count(text) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{log.name}: {text!r} not seen {count} times in time:\n{log.read_text()}")


@pytest.fixture(scope="module")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proxies, str, str]]:
    """One controller and two proxies for the module's tests (starting them is most of the time)."""
    tmp_path = tmp_path_factory.mktemp("one-port")
    deadline = time.monotonic() + DEADLINE
    controller_port, client_port, tokens_port = free_port(), free_port(), free_port()
    controller_file = write_properties(
        tmp_path / "controller.properties",
        {**controller_properties(port=controller_port), "delegation.token.secret.key": "one-port-secret"},
    )
    credentials = tmp_path / "scram.json"
    add_user(credentials, "someone", "someone-secret", [SHA256])
    generation = tmp_path / "generation"
    generation.mkdir()
    audit_dirs = [tmp_path / "audit-1", tmp_path / "audit-2"]
    processes = [start_server(["controller", "--config", str(controller_file)], tmp_path / "controller.log")]
    try:
        wait_for_port(controller_port, processes[0])
        for index, audit_dir in enumerate(audit_dirs, start=1):
            props = proxy_properties(controller_port, audit_dir)
            props.update(
                {
                    "listeners": f"CLIENT://127.0.0.1:{client_port},TOKENS://127.0.0.1:{tokens_port}",
                    "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,TOKENS:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
                    "listener.name.tokens.sasl.enabled.mechanisms": SHA256,
                    "listener.name.tokens.sasl.scram.credentials.file": str(credentials),
                    "socket.reuse.port": "true",
                    "edge.generation.dir": str(generation),
                    "edge.acl.refresh.ms": TEN_MINUTES_MS,
                    "edge.token.refresh.ms": TEN_MINUTES_MS,
                }
            )
            config = write_properties(tmp_path / f"proxy-{index}.properties", props)
            processes.append(start_server(["run", "--config", str(config)], tmp_path / f"proxy-{index}.log"))
        for index, process in enumerate(processes[1:], start=1):
            _wait_for_log(tmp_path / f"proxy-{index}.log", "listening on", 2, process, deadline)
        yield Proxies(tmp_path, audit_dirs, deadline), f"127.0.0.1:{client_port}", f"127.0.0.1:{tokens_port}"
    finally:
        for process in reversed(processes):
            stop_process(process)
    assert [process.returncode for process in processes] == [0, 0, 0]
    assert_valid(records_under(tmp_path))  # the new `source` too
    lowest = min(client_port, tokens_port)  # the files are named after the lowest client listener port
    assert sorted(path.name for path in generation.iterdir()) == [f"port-{lowest}.acls", f"port-{lowest}.tokens"]


def _login(sock: socket.socket, user: str) -> socket.socket:
    assert wire.sasl_plain_login(sock, user, DEFAULT_USERS[user]) == 0
    return sock


def _describe_acls(p: Proxies, sock: socket.socket) -> int:
    return int(wire.call(sock, ApiKey.DESCRIBE_ACLS, 1, DESCRIBE_ALL_ACLS, p.correlation()).error_code)


def test_an_acl_change_through_one_process_counts_in_the_other_at_its_next_decision(proxies: tuple[Proxies, str, str]) -> None:
    p, client, _ = proxies
    denied = ErrorCode.cluster_authorization_failed
    with ExitStack() as stack:
        admin = [_login(p.connect_to(index, client, stack), "admin") for index in (0, 1)]
        alice = [_login(p.connect_to(index, client, stack), "alice") for index in (0, 1)]
        # Both mirrors loaded without the grant; with a ten-minute refresh, only the generation moves them now.
        assert [_describe_acls(p, sock) for sock in alice] == [denied, denied]

        for through, other in ((0, 1), (1, 0)):
            created = wire.call(admin[through], ApiKey.CREATE_ACLS, 1, {"creations": [GRANT]}, p.correlation())
            assert [int(result.error_code) for result in created.results] == [ErrorCode.none]
            assert _describe_acls(p, alice[other]) == ErrorCode.none  # the grant, at once in the other process

            deleted = wire.call(admin[through], ApiKey.DELETE_ACLS, 1, {"filters": [GRANT_FILTER]}, p.correlation())
            assert [len(result.matching_acls) for result in deleted.filter_results] == [1]
            assert _describe_acls(p, alice[other]) == denied  # the revocation, at once in the other process
            assert _describe_acls(p, alice[through]) == denied

    # The records tell the processes apart: one source each, both of node 100, not the same.
    first, second = p.sources()
    assert len(first) == len(second) == 1 and first != second
    assert all(source.startswith("envelope-proxy/100/") for source in first | second)



def _logins_until(p: Proxies, tokens: str, index: int, token_id: str, hmac: bytes, wanted: int) -> tuple[int, float]:
    """Token logins on process `index`, each on a new connection, until one answers `wanted`: (logins, seconds)."""
    start = time.monotonic()
    for attempt in range(1, 50):
        with ExitStack() as stack:
            code = wire.scram_token_login(p.connect_to(index, tokens, stack), token_id, hmac)
        if code == wanted:
            return attempt, time.monotonic() - start
        assert time.monotonic() < p.deadline
    raise AssertionError(f"no login answered {wanted} on process {index}")


def test_a_token_change_through_one_process_reaches_the_other_by_the_generation(proxies: tuple[Proxies, str, str]) -> None:
    """A token login decides on a snapshot the token mirror keeps; every login first checks the token generation (one
    stat) and refreshes the snapshot when another process moved it, so the very next login on the other process sees
    the change, not one after edge.token.refresh.ms (ten minutes here)."""
    p, client, tokens = proxies
    with ExitStack() as stack:
        alice = _login(p.connect_to(0, client, stack), "alice")
        made = wire.call(
            alice,
            ApiKey.CREATE_DELEGATION_TOKEN,
            3,
            {"owner_principal_type": None, "owner_principal_name": None, "renewers": [], "max_lifetime": -1},
            p.correlation(),
        )
        assert made.error_code == ErrorCode.none
        token_id, hmac = str(made.token_id), bytes(made.hmac)
        logins, _ = _logins_until(p, tokens, 1, token_id, hmac, ErrorCode.none)  # made through 0, logs in on 1
        assert logins == 1

        expired = wire.call(alice, ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": hmac, "expiry_time_period": -1}, p.correlation())
        assert expired.error_code == ErrorCode.none
    logins, _ = _logins_until(p, tokens, 1, token_id, hmac, ErrorCode.sasl_authentication_failed)
    assert logins == 1  # refused by the very next login
