"""The proxy's configuration, read from a Kafka-style .properties file."""

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from authz.loading import is_standard
from envelope import kafka_uuid
from envelope.java_types import INT_MAX
from proxy.audit.settings import AuditSettings, parse_audit_settings
from proxy.forward.edge_authz import GENERATION_DIR_KEY, EdgeSettings, default_generation_dir, generation_dir_problem
from proxy.forward.settings import ServiceSettings
from proxy.net.addresses import parse_quorum, parse_servers
from proxy.net.settings import ListenerConfig, TransportSettings, parse_listeners, parse_protocol_map, parse_transport
from proxy.net.tls.settings import parse_client_tls
from proxy.ops.http import parse_listen
from proxy.properties import ConfigError, Properties, allow_everyone_if_no_acl_found, load_authorizer, load_properties, super_users
from proxy.upstream.cluster_identity import CLUSTER_ID_KEY
from proxy.upstream.login import parse_upstream_login
from proxy.upstream.settings import UpstreamSettings


@dataclass(frozen=True)
class ProxyConfig:
    node_id: int
    listeners: list[ListenerConfig]
    upstream: UpstreamSettings
    controller_listener: str
    audit_log_dir: Path
    cluster_id: str | None
    transport: TransportSettings
    metrics_listen: tuple[str, int] | None = None
    """`metrics.listen`: host and port of /metrics, /healthz and /readyz; None = off."""
    shutdown_timeout: float = 30.0
    """`shutdown.timeout.ms`: how long requests in flight may take to finish on SIGTERM."""
    read_upstream: UpstreamSettings | None = None
    """Where reads go (`read.bootstrap.servers`); None = the controller connection."""
    edge: EdgeSettings = field(default_factory=EdgeSettings)
    privileged_principals: frozenset[str] = frozenset()
    """Refused on every client listener once authenticated (KIP-590: they act through the internal path only)."""
    audit: AuditSettings = field(default_factory=AuditSettings)
    """The other `audit.*` keys: sinks, durability, failure policy, filters (proxy/audit/settings.py)."""

    @property
    def forwarding_principal(self) -> str:
        """The proxy's principal on the controller as far as it is known at start (proxy/upstream/settings.py); a login
        that learns its user (OAUTHBEARER) is named by the request path once it logged in."""
        return self.upstream.principal or "User:ANONYMOUS"

    def service(self) -> ServiceSettings:
        """What the request path needs of this configuration."""
        return ServiceSettings(self.node_id, self.forwarding_principal, self.transport, self.edge)

    def effective(self) -> dict[str, Any]:
        return {
            "node.id": self.node_id,
            "listeners": [listener.effective() for listener in self.listeners],
            "controller": {
                "address": self.upstream.address,
                "addresses.key": self.upstream.servers_key,
                "listener": self.controller_listener,
                "security.protocol": self.upstream.security_protocol,
                "sasl.mechanism": self.upstream.sasl_mechanism,
                **(self.upstream.login.effective() if self.upstream.login else {"username": None, "password": None}),
                "request.timeout.ms": int(self.upstream.request_timeout * 1000),
                "controller.connections": self.upstream.connections,
                "controller.queue.max.requests": self.upstream.max_queued,
                "controller.forward.timeout.ms": int(self.upstream.forward_timeout * 1000),
                "controller.discovery.interval.ms": int(self.upstream.discovery_interval * 1000),
                "reconnect.backoff.ms": round(self.upstream.backoff_initial * 1000),
                "reconnect.backoff.max.ms": round(self.upstream.backoff_max * 1000),
                "ssl": _client_tls_effective(self.upstream),
            },
            "read.bootstrap.servers": self.read_upstream.address if self.read_upstream else None,
            "metrics.listen": f"{self.metrics_listen[0]}:{self.metrics_listen[1]}" if self.metrics_listen else None,
            "shutdown.timeout.ms": int(self.shutdown_timeout * 1000),
            "edge": self.edge.effective(),
            "privileged.principals": sorted(self.privileged_principals),
            "audit.log.dir": str(self.audit_log_dir),
            "audit": self.audit.effective(),
            "cluster.id": self.cluster_id,
            **self.transport.effective(),
        }


def _client_tls_effective(upstream: UpstreamSettings) -> dict[str, object] | None:
    if upstream.tls is None:
        return None
    prefix = upstream.tls.key_prefix
    shown: dict[str, object] = {key.removeprefix(prefix): value for key, value in upstream.tls.masked().items()}
    shown.pop("ssl.client.auth", None)  # a server-side key
    shown["certificate.dn"] = upstream.certificate_dn
    return shown


def _upstream(props: Properties) -> tuple[str, UpstreamSettings]:
    names = props.list("controller.listener.names")
    if not names:
        raise ConfigError(
            "controller.listener.names",
            props.get("controller.listener.names"),
            "is required: the name of the controller's listener the proxy connects to",
        )
    name = names[0].upper()
    protocol_map = parse_protocol_map(props)
    protocol = protocol_map.get(name)
    if protocol is None:
        raise ConfigError(
            "listener.security.protocol.map",
            props.get("listener.security.protocol.map"),
            f"no security protocol defined for controller listener {name}",
        )
    # Every security protocol is served (the map only holds those four); SSL and SASL_SSL read the
    # controller listener's ssl.* keys: listener.name.<controller>.ssl.* falling back to ssl.*.
    servers_key, servers = parse_quorum(props.get("controller.quorum.voters"), props.get("controller.quorum.bootstrap.servers"))
    login = parse_upstream_login(props, name, protocol)
    tls = parse_client_tls(props, name, protocol)
    settings = UpstreamSettings(
        servers=tuple(servers),
        servers_key=servers_key,
        listener_name=name,
        security_protocol=protocol,
        login=login,
        request_timeout=props.int("request.timeout.ms", 30000, minimum=1) / 1000,
        connections=props.int("controller.connections", 4, minimum=1),
        max_queued=props.int("controller.queue.max.requests", 1000, minimum=0),
        forward_timeout=props.int("controller.forward.timeout.ms", 60000, minimum=1) / 1000,
        discovery_interval=props.int("controller.discovery.interval.ms", 30000, minimum=1) / 1000,
        backoff_initial=_reconnect_backoff(props),
        backoff_max=props.int("reconnect.backoff.max.ms", 1000, minimum=0) / 1000,
        tls=tls.settings if tls else None,
        tls_context=tls.context if tls else None,
        certificate_dn=tls.certificate_dn if tls else None,
    )
    return name, settings


def _reconnect_backoff(props: Properties) -> float:
    """`reconnect.backoff.ms`, Kafka's key and default. Kafka takes 0; here it is refused, because the wait is what
    keeps a controller that drops every connection from being reconnected to thousands of times a second."""
    milliseconds = props.int("reconnect.backoff.ms", 50)
    if milliseconds < 1:
        raise ConfigError(
            "reconnect.backoff.ms",
            props.get("reconnect.backoff.ms"),
            "must be at least 1: with no wait, a controller that drops the connection is reconnected to, and the request re-sent, without pause",
        )
    return milliseconds / 1000


def parse_proxy_config(raw: dict[str, str]) -> ProxyConfig:
    props = Properties(raw)
    node_id = props.required_int("node.id", minimum=0, maximum=INT_MAX)
    controller_listener, upstream = _upstream(props)
    privileged = props.principals("privileged.principals")
    listeners = [
        dataclasses.replace(item, privileged_principals=privileged) for item in parse_listeners(props) if item.name != controller_listener
    ]
    if not listeners:
        raise ConfigError(
            "listeners", props.get("listeners"), "the proxy needs at least one client listener besides the controller listener"
        )
    audit_log_dir = Path(props.get("audit.log.dir") or "audit")
    transport = parse_transport(props)
    return ProxyConfig(
        node_id=node_id,
        listeners=listeners,
        upstream=upstream,
        controller_listener=controller_listener,
        audit_log_dir=audit_log_dir,
        audit=parse_audit_settings(props, audit_log_dir),
        cluster_id=_cluster_id(props),
        transport=transport,
        read_upstream=_read_upstream(props, upstream),
        metrics_listen=_metrics_listen(props),
        shutdown_timeout=props.int("shutdown.timeout.ms", 30000, minimum=0) / 1000,
        edge=_edge(props, listeners, transport),
        privileged_principals=privileged,
    )


def _edge(props: Properties, listeners: list[ListenerConfig], transport: TransportSettings) -> EdgeSettings:
    name = props.get("authorizer.class.name") or ""
    plugin = None
    if not name:
        policy = "deny"
    elif is_standard(name):
        policy = "acl"
    else:
        policy, plugin = "plugin", load_authorizer(name, props.raw)
    return EdgeSettings(
        policy=policy,
        super_users=super_users(props),
        allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found(props),
        refresh_seconds=props.int("edge.acl.refresh.ms", 5000, minimum=0) / 1000,
        token_refresh_seconds=props.int("edge.token.refresh.ms", 5000, minimum=100) / 1000,
        plugin=plugin,
        plugin_name=name if plugin is not None else None,
        **_generation(props, listeners, transport),
    )


def _generation(props: Properties, listeners: list[ListenerConfig], transport: TransportSettings) -> dict[str, Any]:
    """`edge.generation.dir`: where the processes on one port (`socket.reuse.port`) share their ACL and token
    generations; unset, a directory of this user in the temp folder with `socket.reuse.port=true`, else none."""
    text = props.get(GENERATION_DIR_KEY)
    port = min((listener.port for listener in listeners if listener.port), default=0)
    if text:
        path = Path(text)
        problem = generation_dir_problem(path, default=False)
        if problem is not None:
            raise ConfigError(GENERATION_DIR_KEY, text, problem)
        return {"generation_dir": path, "generation_port": port}
    if not transport.reuse_port:
        return {}
    path = default_generation_dir()
    problem = generation_dir_problem(path, default=True)
    if problem is not None:
        raise ConfigError(GENERATION_DIR_KEY, str(path), f"(the default with socket.reuse.port=true) {problem}")
    return {"generation_dir": path, "generation_dir_default": True, "generation_port": port}


def _metrics_listen(props: Properties) -> tuple[str, int] | None:
    text = props.get("metrics.listen")
    if not text:
        return None
    try:
        return parse_listen(text)
    except ValueError as exc:
        raise ConfigError("metrics.listen", text, str(exc)) from None


def _cluster_id(props: Properties) -> str | None:
    """`cluster.id`: the id every controller must report; unset, the first one a controller reports."""
    text = props.get(CLUSTER_ID_KEY)
    if text is None:
        return None
    problem = kafka_uuid.parse_problem(text)
    if problem is not None:
        raise ConfigError(CLUSTER_ID_KEY, text, problem)
    return text


def _read_upstream(props: Properties, controller: UpstreamSettings) -> UpstreamSettings | None:
    """A broker listener for reads, logged in to like the controller connection."""
    text = props.get("read.bootstrap.servers")
    if not text:
        return None
    brokers = parse_servers("read.bootstrap.servers", text)
    return dataclasses.replace(controller, servers=tuple(brokers), servers_key="read.bootstrap.servers", discover=False)


def load_proxy_config(path: str | Path) -> ProxyConfig:
    return parse_proxy_config(load_properties(path))
