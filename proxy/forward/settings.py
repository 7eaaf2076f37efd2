"""What the request path needs of the configuration, and nothing more (proxy/config.py builds it)."""

from dataclasses import dataclass

from proxy.forward.edge_authz import EdgeSettings
from proxy.net.settings import TransportSettings


@dataclass(frozen=True)
class ServiceSettings:
    node_id: int
    forwarding_principal: str
    """The proxy's own principal on the controller, named in every forwarded request's records."""
    transport: TransportSettings
    edge: EdgeSettings
