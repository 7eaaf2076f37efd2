"""Who a request's records name: the client side (`Caller`, made once per session) and the proxy side (`Forwarding`)."""

from dataclasses import dataclass

from proxy.net.addresses import ProxiedBy


@dataclass(frozen=True, slots=True)
class Caller:
    """The client side of a request, as its records name it."""

    principal: str
    mechanism: str | None
    listener: str
    security_protocol: str
    address: str
    port: int
    connection_id: str
    software_name: str | None
    software_version: str | None
    authentication_id: str | None = None
    """The name the credential proved when it is not the principal's (GSSAPI: the Kerberos name); recorded only then."""
    proxied_by: ProxiedBy | None = None
    """The load balancer the client came through (PROXY protocol); `address` and `port` are the client's."""


@dataclass(frozen=True, slots=True)
class Forwarding:
    """The proxy side of a forwarded request."""

    principal: str
    upstream_address: str


__all__ = ["Caller", "Forwarding"]
