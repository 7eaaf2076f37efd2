"""KIP-103 listener configuration with Kafka's validation rules."""

import ipaddress
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

from envelope.frames import DEFAULT_MAX_FRAME_SIZE
from envelope.java_types import INT_MAX
from proxy.net.addresses import host_port
from proxy.net.ip_filter import IpFilter, parse_ip_filter
from proxy.net.limits import ConnectionLimits, parse_connection_limits
from proxy.net.proxy_protocol import ProxyProtocol, parse_proxy_protocol
from proxy.net.sasl.mechanisms import ServerMechanism
from proxy.net.sasl.settings import parse_sasl
from proxy.net.tls.settings import ListenerTls, parse_listener_tls
from proxy.properties import ConfigError, Properties, listener_prefix

DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
_ENDPOINT = re.compile(r"^(?P<name>[A-Za-z0-9_\-.]+)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:\[\]]*):(?P<port>-?\d+)$")


@dataclass(frozen=True)
class Endpoint:
    name: str  # upper-cased listener name
    host: str  # "" = all interfaces; IPv6 without brackets
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{host_port(self.host, self.port)}"


def parse_endpoints(key: str, text: str) -> list[Endpoint]:
    endpoints = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if match is None:
            raise ConfigError(key, text, f"{item!r} is not of the form NAME://host:port")
        host = match.group("host")
        if host.startswith("["):
            host = host[1:-1]
            try:
                ipaddress.IPv6Address(host)
            except ValueError:
                raise ConfigError(key, text, f"{host!r} is not an IPv6 address") from None
        port = int(match.group("port"))
        if not 0 <= port <= 65535:
            raise ConfigError(key, text, f"port {port} is out of range 0..65535")
        endpoints.append(Endpoint(match.group("name").upper(), host, port))
    return endpoints


def parse_protocol_map(props: Properties) -> dict[str, str]:
    key = "listener.security.protocol.map"
    text = props.get(key, DEFAULT_PROTOCOL_MAP) or DEFAULT_PROTOCOL_MAP
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or not name:
            raise ConfigError(key, text, f"{item!r} is not of the form LISTENER:PROTOCOL")
        if protocol.upper() not in SECURITY_PROTOCOLS:
            raise ConfigError(key, text, f"unknown security protocol {protocol!r}")
        if name.upper() in mapping:
            raise ConfigError(key, text, f"listener {name.upper()} is mapped twice")
        mapping[name.upper()] = protocol.upper()
    return mapping


def _check_duplicates(key: str, text: str, endpoints: list[Endpoint]) -> None:
    names = [e.name for e in endpoints]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(key, text, f"each listener must have a different name, {name} appears twice")
    by_port: dict[int, list[Endpoint]] = {}
    for endpoint in endpoints:
        if endpoint.port != 0:
            by_port.setdefault(endpoint.port, []).append(endpoint)
    for port, sharing in by_port.items():
        if len(sharing) == 1:
            continue
        families: list[int] = []
        for endpoint in sharing:
            try:
                families.append(ipaddress.ip_address(endpoint.host).version)
            except ValueError:
                families.append(0)
        # Kafka allows exactly one IPv4 and one IPv6 literal on the same port.
        if sorted(families) != [4, 6]:
            raise ConfigError(
                key,
                text,
                f"each listener must have a different port unless exactly one IPv4 and one IPv6 address share it, port {port} is used by {', '.join(e.name for e in sharing)}",
            )


# Kafka's defaults, in its units (socket.request.max.bytes: DEFAULT_MAX_FRAME_SIZE)
DEFAULT_SASL_MAX_RECEIVE_BYTES = 524288  # sasl.server.max.receive.size
DEFAULT_FAILED_AUTH_DELAY_MS = 100  # connection.failed.authentication.delay.ms
DEFAULT_PREAUTH_IDLE_MS = 10000  # connections.preauth.idle.ms


@dataclass(frozen=True)
class TransportSettings:
    """Frame caps and connection timings every listener of a process shares."""

    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    sasl_max_receive_size: int = DEFAULT_SASL_MAX_RECEIVE_BYTES
    failed_auth_delay: float = DEFAULT_FAILED_AUTH_DELAY_MS / 1000
    # Before a login completes (and for a connection's first request), a frame must arrive whole within this.
    preauth_idle_timeout: float = DEFAULT_PREAUTH_IDLE_MS / 1000
    reuse_port: bool = False
    """SO_REUSEPORT on every listener: several proxy processes share its ports (see proxy/net/binding.py)."""

    def effective(self) -> dict[str, int | bool]:
        return {
            "socket.request.max.bytes": self.max_frame_size,
            "sasl.server.max.receive.size": self.sasl_max_receive_size,
            "connection.failed.authentication.delay.ms": int(self.failed_auth_delay * 1000),
            "connections.preauth.idle.ms": int(self.preauth_idle_timeout * 1000),
            "socket.reuse.port": self.reuse_port,
        }


def parse_transport(props: Properties) -> TransportSettings:
    reuse_port = props.bool("socket.reuse.port", False)
    if reuse_port and not hasattr(socket, "SO_REUSEPORT"):
        raise ConfigError("socket.reuse.port", "true", "this platform has no SO_REUSEPORT")
    return TransportSettings(
        max_frame_size=props.int("socket.request.max.bytes", DEFAULT_MAX_FRAME_SIZE, minimum=1, maximum=INT_MAX),
        sasl_max_receive_size=props.int("sasl.server.max.receive.size", DEFAULT_SASL_MAX_RECEIVE_BYTES, minimum=1),
        failed_auth_delay=props.int("connection.failed.authentication.delay.ms", DEFAULT_FAILED_AUTH_DELAY_MS, minimum=0) / 1000,
        preauth_idle_timeout=props.int("connections.preauth.idle.ms", DEFAULT_PREAUTH_IDLE_MS, minimum=1) / 1000,
        reuse_port=reuse_port,
    )


@dataclass(frozen=True)
class ListenerConfig:
    """One bound listener and the security settings that apply to it."""

    name: str
    host: str
    port: int
    security_protocol: str
    advertised_host: str
    advertised_port: int
    sasl_mechanisms: tuple[str, ...] = ()
    sasl_servers: Mapping[str, ServerMechanism] = field(default_factory=dict, repr=False)
    """Each enabled SASL mechanism -> its server side, as this listener's keys configure it (proxy/net/sasl/registry.py)."""
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)
    """Each enabled SASL mechanism -> its connections.max.reauth.ms (KIP-368; 0 or absent: not set)."""
    ip_filter: IpFilter | None = None
    ip_filter_key: str = "security.ip.filter.list"  # where the list came from, for the refusal log line
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    idle_timeout: float = 600.0
    # Principals refused on this listener after they authenticate (KIP-590: the internal path only).
    privileged_principals: frozenset[str] = frozenset()
    # SSL and SASL_SSL: the (reloading) server context, client-auth mode and principal mapping.
    tls: ListenerTls | None = None
    # Behind a load balancer: the PROXY protocol header names the client (proxy/net/proxy_protocol.py); None = off.
    proxy_protocol: ProxyProtocol | None = None

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def effective(self) -> dict[str, object]:
        """For check-config: what applies, secrets masked."""
        return {
            "name": self.name,
            "bind": f"{self.host or '0.0.0.0'}:{self.port}",
            "advertised": f"{self.advertised_host}:{self.advertised_port}",
            "security.protocol": self.security_protocol,
            "sasl.enabled.mechanisms": list(self.sasl_mechanisms),
            **({"connections.max.reauth.ms": dict(self.max_reauth_ms)} if self.uses_sasl else {}),
            **{key: value for server in dict.fromkeys(self.sasl_servers.values()) for key, value in server.effective().items()},
            "security.ip.filter": self.ip_filter.effective() if self.ip_filter else None,
            **self.limits.effective(),
            "connections.max.idle.ms": int(self.idle_timeout * 1000),
            "privileged.principals": sorted(self.privileged_principals),
            "ssl": self.tls.effective() if self.tls else None,
            "proxy.protocol": self.proxy_protocol.effective() if self.proxy_protocol else None,
        }


def parse_listeners(props: Properties, *, only: set[str] | None = None) -> list[ListenerConfig]:
    protocol_map = parse_protocol_map(props)
    text = props.require("listeners")
    listeners = parse_endpoints("listeners", text)
    if not listeners:
        raise ConfigError("listeners", text, "at least one listener is required")
    _check_duplicates("listeners", text, listeners)
    for endpoint in listeners:
        if endpoint.name not in protocol_map:
            raise ConfigError(
                "listener.security.protocol.map",
                props.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP),
                f"no security protocol defined for listener {endpoint.name}",
            )
    if props.get("security.inter.broker.protocol") and props.get("inter.broker.listener.name"):
        raise ConfigError(
            "inter.broker.listener.name",
            props.get("inter.broker.listener.name"),
            "only one of inter.broker.listener.name and security.inter.broker.protocol should be set",
        )
    advertised_text = props.get("advertised.listeners") or text
    advertised = {e.name: e for e in parse_endpoints("advertised.listeners", advertised_text)}
    names = {e.name for e in listeners}
    for name, endpoint in advertised.items():
        if name not in names:
            raise ConfigError("advertised.listeners", advertised_text, f"advertised listener {name} is not among listeners")
        if endpoint.host == "0.0.0.0" or endpoint.host == "::":
            raise ConfigError(
                "advertised.listeners",
                advertised_text,
                f"advertised listener {name} must not advertise the wildcard address {endpoint.host}",
            )
    result = []
    for endpoint in listeners:
        if only is not None and endpoint.name not in only:
            continue
        result.append(_listener(props, endpoint, protocol_map[endpoint.name], advertised.get(endpoint.name)))
    return result


def _listener(props: Properties, endpoint: Endpoint, protocol: str, advertised: Endpoint | None) -> ListenerConfig:
    sasl = parse_sasl(props, endpoint.name) if protocol.startswith("SASL_") else None
    name = endpoint.name
    type_key = props.listener_key(name, "security.ip.filter.rule.type")
    list_key = props.listener_key(name, "security.ip.filter.list")
    ip_filter = parse_ip_filter(type_key, props.get(type_key), list_key, props.get(list_key))
    limits = parse_connection_limits(props.get, listener_prefix(name))
    idle_ms = props.int(props.listener_key(name, "connections.max.idle.ms"), 600000, minimum=1)
    adv = advertised or endpoint
    adv_host = adv.host or "localhost"
    return ListenerConfig(
        name=endpoint.name,
        host=endpoint.host,
        port=endpoint.port,
        security_protocol=protocol,
        advertised_host=adv_host,
        advertised_port=adv.port,
        sasl_mechanisms=sasl.mechanisms if sasl else (),
        sasl_servers=sasl.servers if sasl else {},
        max_reauth_ms=sasl.max_reauth_ms if sasl else {},
        ip_filter=ip_filter,
        ip_filter_key=list_key,
        limits=limits,
        idle_timeout=idle_ms / 1000,
        tls=parse_listener_tls(props, name, protocol),
        proxy_protocol=parse_proxy_protocol(props, name, ip_filter),
    )
