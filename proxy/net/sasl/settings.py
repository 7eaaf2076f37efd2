"""Server-side SASL settings of one listener: the enabled mechanisms, each with its own settings (proxy/net/sasl/registry.py)."""

from collections.abc import Mapping
from dataclasses import dataclass, field

from proxy.net.sasl.mechanisms import ServerMechanism
from proxy.net.sasl.registry import BY_NAME, MECHANISMS, SUPPORTED_MECHANISMS
from proxy.properties import ConfigError, Properties, scoped

__all__ = ["REAUTH_KEY", "SUPPORTED_MECHANISMS", "SaslSettings", "parse_sasl", "reauth_key"]


REAUTH_KEY = "connections.max.reauth.ms"


@dataclass(frozen=True)
class SaslSettings:
    mechanisms: tuple[str, ...]
    servers: Mapping[str, ServerMechanism] = field(default_factory=dict, repr=False)
    """Each enabled mechanism name -> its server side (the names of one family, SCRAM's two, share one)."""
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)
    """Each enabled mechanism name -> its `connections.max.reauth.ms` (KIP-368); 0: sessions end only with their credential."""


def reauth_key(props: Properties, listener: str, mechanism: str) -> str:
    """The key that sets `connections.max.reauth.ms` for `mechanism` on `listener`, as Kafka looks it up: the listener
    and mechanism prefix (`listener.name.<l>.<mech>.`), then the listener prefix, then the key alone."""
    return scoped(props.raw, REAUTH_KEY, listener=listener, mechanism=mechanism)[0]


def parse_sasl(props: Properties, listener: str) -> SaslSettings:
    mechanisms_key = props.listener_key(listener, "sasl.enabled.mechanisms")
    configured = props.listener_value(listener, "sasl.enabled.mechanisms")
    text = "GSSAPI" if configured is None else configured  # Kafka's default
    mechanisms = tuple(dict.fromkeys(m.strip().upper() for m in text.split(",") if m.strip()))
    if not mechanisms:  # set but empty: not the default, and a SASL listener cannot log anyone in
        raise ConfigError(mechanisms_key, configured, f"no SASL mechanism is enabled, and listener {listener} needs at least one")
    for mechanism in mechanisms:
        if mechanism not in BY_NAME:
            raise ConfigError(
                mechanisms_key,
                configured,
                f"mechanism {mechanism} is not supported (supported: {', '.join(SUPPORTED_MECHANISMS)})",
            )
    servers: dict[str, ServerMechanism] = {}
    for family in MECHANISMS:
        enabled = tuple(m for m in mechanisms if m in family.names)
        if enabled:
            server = family.server(props, listener, enabled)
            servers.update(dict.fromkeys(enabled, server))
    max_reauth_ms = {mechanism: props.int(reauth_key(props, listener, mechanism), 0, minimum=0) for mechanism in mechanisms}
    return SaslSettings(mechanisms, servers, max_reauth_ms)
