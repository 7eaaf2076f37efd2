"""TLS settings of one listener or of the proxy's controller connection, read as Kafka reads them.

Every ``ssl.*`` key is looked up as ``listener.name.<lower-case listener>.<key>`` first and
falls back to ``<key>`` (KIP-103), one key at a time.  Two Kafka rules on top:

* KIP-684: on a SASL_SSL listener only ``listener.name.<l>.ssl.client.auth`` turns client
  certificates on; the global ``ssl.client.auth`` applies to SSL listeners alone.
* The proxy's connection to the controller reads the controller listener's keys
  (``listener.name.<controller>.ssl.*`` falling back to ``ssl.*``), like a broker does.

Stores are opened while the configuration is read, so a wrong password or a missing
file is a configuration error naming the key that was set.
"""

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from proxy.net.tls.context import ReloadingServerContext, client_context
from proxy.net.tls.options import CLIENT_AUTH, TlsSettings, parse_tls_settings
from proxy.net.tls.principal import PrincipalMapper, parse_mapping_rules
from proxy.net.tls.stores import load_keystore
from proxy.net.tls.subject import distinguished_name
from proxy.properties import ConfigError, Properties, listener_prefix

PRINCIPAL_MAPPING_RULES = "ssl.principal.mapping.rules"
HANDSHAKE_TIMEOUT = "ssl.handshake.timeout.ms"  # not a Kafka key: how long an accepted TLS handshake may take
DEFAULT_HANDSHAKE_TIMEOUT_MS = 10000


@dataclass(frozen=True)
class ClientTls:
    """The proxy's own TLS client side towards the controller listener."""

    settings: TlsSettings
    context: ReloadingServerContext = field(repr=False, compare=False)
    certificate_dn: str | None = None  # subject of the client certificate, None without a keystore


@dataclass(frozen=True)
class ListenerTls:
    """What an SSL or SASL_SSL listener needs at accept time."""

    settings: TlsSettings
    context: ReloadingServerContext = field(repr=False, compare=False)
    mapper: PrincipalMapper = field(repr=False, compare=False)  # used on SSL listeners; SASL_SSL takes the SASL login
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_MS / 1000

    def effective(self) -> dict[str, object]:
        """For check-config: the ssl.* values in force on this listener, passwords masked."""
        prefix = self.settings.key_prefix
        shown: dict[str, object] = {key.removeprefix(prefix): value for key, value in self.settings.masked().items()}
        shown[PRINCIPAL_MAPPING_RULES] = [str(rule) for rule in self.mapper.rules]
        shown[HANDSHAKE_TIMEOUT] = int(self.handshake_timeout * 1000)
        return shown


def _prefix(props: Properties, listener: str) -> str:
    """Errors name `listener.name.<l>.ssl.*` keys when the listener has any of its own, else the global ones."""
    prefix = listener_prefix(listener)
    return prefix if any(key.startswith(prefix + "ssl.") for key in props.raw) else ""


@contextmanager
def _named_keys(props: Properties, prefix: str) -> Iterator[None]:
    """Re-raise a ConfigError under the key actually set when the value came from the global fallback."""
    try:
        yield
    except ConfigError as exc:
        base = exc.key.removeprefix(prefix) if prefix else exc.key
        if prefix and exc.key.startswith(prefix) and exc.key not in props.raw and base in props.raw:
            raise ConfigError(base, exc.value, exc.reason) from None
        raise


def _getter(props: Properties, listener: str, *, sasl_ssl: bool = False) -> Callable[[str], str | None]:
    def get(key: str) -> str | None:
        if sasl_ssl and key == CLIENT_AUTH:
            return props.get(f"{listener_prefix(listener)}{key}")  # KIP-684
        return props.listener_value(listener, key)

    return get


def parse_listener_tls(props: Properties, listener: str, protocol: str) -> ListenerTls | None:
    """The TLS side of an SSL or SASL_SSL listener (None for the others); loads the stores now."""
    if protocol not in ("SSL", "SASL_SSL"):
        return None
    prefix = _prefix(props, listener)
    with _named_keys(props, prefix):
        settings = parse_tls_settings(_getter(props, listener, sasl_ssl=protocol == "SASL_SSL"), key_prefix=prefix, for_server=True)
        context = ReloadingServerContext(settings)
    mapper = parse_mapping_rules(props.listener_key(listener, PRINCIPAL_MAPPING_RULES), props.listener_value(listener, PRINCIPAL_MAPPING_RULES))
    timeout_ms = props.int(props.listener_key(listener, HANDSHAKE_TIMEOUT), DEFAULT_HANDSHAKE_TIMEOUT_MS, minimum=1)
    return ListenerTls(settings, context, mapper, timeout_ms / 1000)


def parse_client_tls(props: Properties, listener: str, protocol: str) -> ClientTls | None:
    """The proxy's own TLS client settings for the controller listener `listener` (None unless SSL/SASL_SSL).

    The context is a `ReloadingServerContext` built with `client_context`: every (re)connect
    takes `current()`, so rotated client certificates and truststores are picked up too.
    """
    if protocol not in ("SSL", "SASL_SSL"):
        return None
    prefix = _prefix(props, listener)
    with _named_keys(props, prefix):
        settings = parse_tls_settings(_getter(props, listener), key_prefix=prefix, for_server=False)
        context = ReloadingServerContext(settings, build=client_context)
        material = load_keystore(settings)
    return ClientTls(settings, context, distinguished_name(material.chain[0]) if material else None)


class _HasTls(Protocol):  # ListenerConfig, which imports this module
    @property
    def tls(self) -> ListenerTls | None: ...


def listener_contexts(listeners: Iterable[_HasTls]) -> list[ReloadingServerContext]:
    """The server contexts a SIGHUP reloads: one per SSL/SASL_SSL listener."""
    return [listener.tls.context for listener in listeners if listener.tls is not None]
