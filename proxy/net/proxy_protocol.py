"""A listener's PROXY protocol settings (docs/configuration.md, "Behind a load balancer").

Each key is read per listener, `listener.name.<l>.<key>` over `<key>` (proxy.properties.scoped):

* `proxy.protocol.mode`: `off` (default), `v1`, `v2`, `any` (either version) or `optional` (either version, or
  none: direct clients and a load balancer share the port);
* `proxy.protocol.trusted.cidrs`: the load balancers' addresses, required unless the mode is off. A connection from
  anywhere else is closed before a byte is read (with `optional`: it is served as itself, and closed if it starts
  with a header, since only a trusted load balancer may name another address);
* `proxy.protocol.header.timeout.ms`: how long the whole header (or, with `optional`, the first bytes) may take;
* `proxy.protocol.optional.with.ip.filter.allowed`: `optional` together with an IP filter is refused unless this
  is true. A trusted load balancer that stops sending headers would then be served as itself, and the filter
  would judge the load balancer's address in place of every client's behind it.
"""

from dataclasses import dataclass
from typing import Final

from proxy.net.ip_filter import IpFilter, parse_ip_filter
from proxy.properties import ConfigError, Properties

MODE_KEY: Final = "proxy.protocol.mode"
TRUSTED_KEY: Final = "proxy.protocol.trusted.cidrs"
TIMEOUT_KEY: Final = "proxy.protocol.header.timeout.ms"
OPTIONAL_WITH_IP_FILTER_KEY: Final = "proxy.protocol.optional.with.ip.filter.allowed"
KEYS: Final = (MODE_KEY, TRUSTED_KEY, TIMEOUT_KEY, OPTIONAL_WITH_IP_FILTER_KEY)

OFF, V1, V2, ANY, OPTIONAL = "off", "v1", "v2", "any", "optional"
_VERSIONS: Final = {V1: frozenset({1}), V2: frozenset({2}), ANY: frozenset({1, 2}), OPTIONAL: frozenset({1, 2})}
DEFAULT_TIMEOUT_MS: Final = 3000
"""HAProxy's spec: a receiver may wait at least 3 s for the header; a load balancer sends it with its connect."""
MAX_TIMEOUT_MS: Final = 300_000
_WHOLE_SPACE_PREFIX: Final = 0


@dataclass(frozen=True)
class ProxyProtocol:
    """What one listener does with PROXY protocol headers."""

    mode: str
    versions: frozenset[int]
    trusted: IpFilter
    trusted_key: str
    header_timeout: float

    @property
    def optional(self) -> bool:
        return self.mode == OPTIONAL

    def trusts(self, host: str) -> bool:
        """Whether a TCP peer at `host` may name another address in a header."""
        return self.trusted.allows(host)

    def effective(self) -> dict[str, object]:
        return {
            MODE_KEY: self.mode,
            TRUSTED_KEY: [str(network) for network in self.trusted.networks],
            TIMEOUT_KEY: int(self.header_timeout * 1000),
        }


def parse_proxy_protocol(props: Properties, listener: str, ip_filter: IpFilter | None) -> ProxyProtocol | None:
    """The listener's settings, None when the mode is off; ConfigError naming the key the operator set."""
    mode_key = props.listener_key(listener, MODE_KEY)
    mode = (props.get(mode_key) or OFF).strip().lower()
    if mode == OFF:
        return None
    if mode not in _VERSIONS:
        raise ConfigError(mode_key, props.get(mode_key), f"must be one of {OFF}, {V1}, {V2}, {ANY}, {OPTIONAL}")
    trusted_key = props.listener_key(listener, TRUSTED_KEY)
    cidrs = props.get(trusted_key) or ""
    if not cidrs.strip():
        raise ConfigError(
            trusted_key, props.get(trusted_key), f"is required when {mode_key} is {mode} (listener {listener}): list the load balancers' addresses (CIDR ranges)"
        )
    # The allow-list form of the IP filter's parser: the same CIDR rules, errors naming this key.
    trusted = parse_ip_filter(mode_key, "allow", trusted_key, cidrs)
    assert trusted is not None
    for network in trusted.networks:
        if network.prefixlen == _WHOLE_SPACE_PREFIX:
            raise ConfigError(
                trusted_key, cidrs, f"{network} trusts every address: any client could claim to be any other; list the load balancers' own ranges"
            )
    timeout_key = props.listener_key(listener, TIMEOUT_KEY)
    timeout_ms = props.int(timeout_key, DEFAULT_TIMEOUT_MS, minimum=1, maximum=MAX_TIMEOUT_MS)
    allowed_key = props.listener_key(listener, OPTIONAL_WITH_IP_FILTER_KEY)
    if mode == OPTIONAL and ip_filter is not None and not props.bool(allowed_key, False):
        raise ConfigError(
            mode_key,
            props.get(mode_key),
            f"optional headers with an IP filter on listener {listener}: a trusted load balancer that stops sending headers is then judged "
            f"by the filter in place of its clients; use {ANY}, or set {allowed_key}=true",
        )
    return ProxyProtocol(mode, _VERSIONS[mode], trusted, trusted_key, timeout_ms / 1000)
