"""How the proxy reaches the quorum: addresses, its own login, and the pool's limits and deadlines."""

from dataclasses import dataclass, field

from proxy.net.addresses import ControllerAddress
from proxy.net.sasl.mechanisms import ClientLogin
from proxy.net.tls.context import ReloadingServerContext
from proxy.net.tls.options import TlsSettings


@dataclass(frozen=True)
class UpstreamSettings:
    servers: tuple[ControllerAddress, ...]
    """Every configured address, in order (voters carry their node ids)."""
    security_protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    servers_key: str = "controller.quorum.bootstrap.servers"
    """The key the addresses came from, for messages."""
    listener_name: str = "CONTROLLER"
    """The controller listener's name: DescribeQuorum v2 names endpoints by listener."""
    login: ClientLogin | None = field(default=None, repr=False)
    """SASL_*: the proxy's own login, with a mechanism of proxy/net/sasl/registry.py (proxy/upstream/login.py reads it)."""
    # SSL and SASL_SSL: the client context (truststore, optional client certificate), re-read when its files change.
    tls: TlsSettings | None = None
    tls_context: ReloadingServerContext | None = field(default=None, repr=False, compare=False)
    certificate_dn: str | None = None  # the client certificate's subject (RFC 2253), if one is configured
    discover: bool = True
    """Find the active controller (DescribeCluster, DescribeQuorum); False for a list of brokers, used in turn."""
    connections: int = 4
    """`controller.connections`: each carries one request at a time, as the controller mutes a connection while it works."""
    max_queued: int = 1000
    """`controller.queue.max.requests`: requests waiting for a connection; beyond, a retriable error at once."""
    forward_timeout: float = 60.0
    """`controller.forward.timeout.ms`: the total time a request is re-sent over failovers (Kafka: 60 s)."""
    request_timeout: float = 30.0
    """`request.timeout.ms`: one attempt."""
    discovery_interval: float = 30.0
    """`controller.discovery.interval.ms`: how often the active controller is looked up again when all is well."""
    connect_timeout: float = 10.0
    backoff_initial: float = 0.05
    """`reconnect.backoff.ms`: the wait after a first failure, before the next connection to that node or the next
    attempt of a request whose connection was lost; doubled (with +/-20% jitter) for each further one in a row."""
    backoff_max: float = 1.0
    """`reconnect.backoff.max.ms`: the longest of those waits."""

    @property
    def sasl_mechanism(self) -> str | None:
        return self.login.mechanism if self.login is not None else None

    @property
    def username(self) -> str | None:
        """The user the controller sees the proxy as, when its login names one."""
        return self.login.user if self.login is not None else None

    @property
    def principal(self) -> str | None:
        """The proxy's principal on the controller: its SASL user, else (SSL) its certificate's DN as Kafka's DEFAULT
        rule names it, else User:ANONYMOUS; None while a login that learns its user (OAUTHBEARER: the token's
        subject) has not logged in yet."""
        if self.login is not None:
            return None if self.login.user is None else f"User:{self.login.user}"
        if self.security_protocol == "SSL" and self.certificate_dn:
            return f"User:{self.certificate_dn}"
        return "User:ANONYMOUS"

    @property
    def address(self) -> str:
        """The configured addresses as written in the key."""
        return ",".join(str(server) for server in self.servers)


__all__ = ["UpstreamSettings"]
