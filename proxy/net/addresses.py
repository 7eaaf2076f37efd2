"""The quorum's addresses, parsed as Kafka parses `controller.quorum.voters` and
`controller.quorum.bootstrap.servers` (and a broker list such as `read.bootstrap.servers`).

Kafka reads both as comma-separated lists whose entries are trimmed; a voter is `id@host:port`
with a non-negative id, a bootstrap server `host:port`; an IPv6 host is written in brackets.
"""

import re
from dataclasses import dataclass, field

from proxy.properties import ConfigError

VOTERS_KEY = "controller.quorum.voters"
BOOTSTRAP_KEY = "controller.quorum.bootstrap.servers"

# Kafka's Utils.getHost/getPort: everything before the last colon is the host ([v6] brackets stripped).
_HOST_PORT = re.compile(r"^\[?([0-9a-zA-Z\-%._:]+?)\]?:([0-9]+)$")
_MAX_PORT = 65535


def host_port(host: str, port: int) -> str:
    """`host:port` as Kafka writes an address: an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class ControllerAddress:
    """One member of the quorum: its node id when known (voters, or learned by discovery), host and port."""

    host: str
    port: int
    node_id: int | None = None
    address: str = field(init=False, compare=False, repr=False)
    """`host:port` (`[v6]:port`), made once: every forwarded request's records name it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "address", host_port(self.host, self.port))

    def __str__(self) -> str:
        return self.address if self.node_id is None else f"{self.node_id}@{self.address}"


def _entries(key: str, text: str) -> list[str]:
    entries = [entry.strip() for entry in text.split(",")]
    if not any(entries):
        raise ConfigError(key, text, "is empty: name at least one controller")
    if "" in entries:
        raise ConfigError(key, text, "has an empty entry")
    return entries


def _host_port(key: str, text: str, entry: str) -> tuple[str, int]:
    match = _HOST_PORT.match(entry)
    if match is None:
        raise ConfigError(key, text, f"entry {entry!r} is not host:port")
    port = int(match.group(2))
    if not 0 < port <= _MAX_PORT:
        raise ConfigError(key, text, f"entry {entry!r} has port {port} outside 1-{_MAX_PORT}")
    return match.group(1), port


def parse_servers(key: str, text: str) -> list[ControllerAddress]:
    """`host:port,host:port,...`: every entry, in order, duplicates dropped."""
    servers: list[ControllerAddress] = []
    for entry in _entries(key, text):
        server = ControllerAddress(*_host_port(key, text, entry))
        if server not in servers:
            servers.append(server)
    return servers


def parse_voters(text: str) -> list[ControllerAddress]:
    """`id@host:port,...`: every voter with its id; an id may appear once."""
    voters: list[ControllerAddress] = []
    for entry in _entries(VOTERS_KEY, text):
        node, at, address = entry.partition("@")
        if not at:
            raise ConfigError(VOTERS_KEY, text, f"entry {entry!r} is not id@host:port")
        if not node.isdigit():
            raise ConfigError(VOTERS_KEY, text, f"entry {entry!r} has id {node!r}, not a non-negative integer")
        node_id = int(node)
        if any(voter.node_id == node_id for voter in voters):
            raise ConfigError(VOTERS_KEY, text, f"voter id {node_id} appears more than once")
        voters.append(ControllerAddress(*_host_port(VOTERS_KEY, text, address), node_id=node_id))
    return voters


def parse_quorum(voters: str | None, bootstrap: str | None) -> tuple[str, list[ControllerAddress]]:
    """The key in use and the quorum it names; exactly one of the two keys must be set."""
    if voters and bootstrap:
        raise ConfigError(BOOTSTRAP_KEY, bootstrap, f"set either {VOTERS_KEY} or {BOOTSTRAP_KEY}, not both")
    if voters:
        return VOTERS_KEY, parse_voters(voters)
    if bootstrap:
        return BOOTSTRAP_KEY, parse_servers(BOOTSTRAP_KEY, bootstrap)
    raise ConfigError(BOOTSTRAP_KEY, bootstrap, f"is required (or {VOTERS_KEY}): the addresses of the controller quorum")


__all__ = ["BOOTSTRAP_KEY", "VOTERS_KEY", "ControllerAddress", "parse_quorum", "parse_servers", "parse_voters"]


@dataclass(frozen=True)
class ProxiedBy:
    """The load balancer a connection came through (its TCP address), and what its PROXY protocol header said
    besides the client's address: kept for the audit (`requestMetadata.proxiedBy`)."""

    host: str
    port: int
    version: int
    command: str
    """PROXY, or LOCAL: the load balancer's own connection (a health check), served as the load balancer."""
    authority: str | None = None
    tls_version: str | None = None
    tls_common_name: str | None = None
    tls_certificate_verified: bool = False

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"
