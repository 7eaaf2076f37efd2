"""Keys of a properties file that nothing reads: one warning each, with a "did you mean" when a known key is close.

A key is known when the parse read it (`proxy.properties.recording_reads` notes every key looked up, listener-
and mechanism-prefixed ones included), when this catalogue lists it for the role (a key read only in some
configurations: `ssl.*` without a TLS listener, `audit.kafka.*` without the Kafka sink), when an authorizer plug-in
declares it (`CONFIG_KEYS`, below), or, for the embedded controller, when it is one of Kafka's broker keys (its
static broker config, answered in DescribeConfigs). A Kafka broker key in a proxy's file is not unknown either: it is
"ignored (a Kafka broker key the proxy does not use)", listed once.

Plug-ins: an authorizer named in `authorizer.class.name` reads its own keys from the properties it is given. It
declares them with `CONFIG_KEYS`, an iterable of key names, on its class (or factory) or on its module; a name
ending in `.` or `*` declares every key with that prefix:

    class MyAuthorizer:
        CONFIG_KEYS = ("my.authorizer.url", "my.authorizer.cache.")
"""

import difflib
import importlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points

from authz.loading import KEY as AUTHORIZER_KEY
from authz.loading import is_standard
from authz.plugin import ENTRY_POINT_GROUP
from controller.config_defs import kafka_configs

#: The attribute an authorizer plug-in (its class, factory or module) declares its own keys in.
PLUGIN_KEYS_ATTRIBUTE = "CONFIG_KEYS"

_SSL = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.handshake.timeout.ms",
    "ssl.endpoint.identification.algorithm",
)

_OAUTHBEARER_VALIDATION = (
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.clock.skew.seconds",
)

#: Keys a listener reads, each also as `listener.name.<l>.<key>` (and the SASL ones as `listener.name.<l>.<mechanism>.<key>`).
LISTENER_KEYS = frozenset(
    {
        *_SSL,
        *_OAUTHBEARER_VALIDATION,
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.server.callback.handler.class",
        "sasl.kerberos.service.name",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.scram.credentials.file",
        "connections.max.idle.ms",
        "connections.max.reauth.ms",
        "security.ip.filter.rule.type",
        "security.ip.filter.list",
        "max.connections",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
        # read only for a listener whose proxy.protocol.mode is not off (proxy/net/proxy_protocol.py)
        "proxy.protocol.mode",
        "proxy.protocol.trusted.cidrs",
        "proxy.protocol.header.timeout.ms",
        "proxy.protocol.optional.with.ip.filter.allowed",
    }
)

#: Read by both servers (docs/configuration.md, "Shared listener keys" and "TLS").
SHARED_KEYS = frozenset(
    {
        *LISTENER_KEYS,
        "node.id",
        "process.roles",
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "controller.listener.names",
        "jaas.config.file",
        "org.apache.kafka.sasl.oauthbearer.allowed.urls",
        "socket.request.max.bytes",
        "sasl.server.max.receive.size",
        "connections.preauth.idle.ms",
        "connection.failed.authentication.delay.ms",
        "socket.reuse.port",
        "security.inter.broker.protocol",
        "inter.broker.listener.name",
        "authorizer.class.name",
        "super.users",
        "allow.everyone.if.no.acl.found",
        "cluster.id",
        "log.format",
    }
)

#: Read by the proxy only (docs/configuration.md, "Proxy" and "Audit").
PROXY_KEYS = frozenset(
    {
        "controller.quorum.bootstrap.servers",
        "controller.quorum.voters",
        "controller.connections",
        "controller.queue.max.requests",
        "controller.forward.timeout.ms",
        "controller.discovery.interval.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "request.timeout.ms",
        "sasl.mechanism.controller.protocol",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.header.urlencode",
        "sasl.login.callback.handler.class",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
        "sasl.login.retry.backoff.ms",
        "sasl.login.retry.backoff.max.ms",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "privileged.principals",
        "read.bootstrap.servers",
        "edge.acl.refresh.ms",
        "edge.generation.dir",
        "edge.token.refresh.ms",
        "metrics.listen",
        "shutdown.timeout.ms",
        "audit.log.dir",
        "audit.sinks",
        "audit.durability",
        "audit.on.failure",
        "audit.file.max.bytes",
        "audit.file.rotate.ms",
        "audit.connection.events",
        "audit.excluded.principals",
        "audit.record.max.string.chars",
        "audit.record.max.resources",
        "audit.record.max.bytes",
        "audit.kafka.bootstrap.servers",
        "audit.kafka.topic",
        "audit.kafka.spool.dir",
        "audit.kafka.delivery.timeout.ms",
        "audit.kafka.spool.retry.backoff.ms",
        "audit.level",
        "audit.chain.signing.key.file",
        "audit.chain.checkpoint.records",
        "audit.chain.checkpoint.ms",
    }
)
#: Families of keys: librdkafka's producer properties of the Kafka audit sink (passed on whole), the audit level per API.
PROXY_PREFIXES = ("audit.kafka.producer.", "audit.level.api.")

#: Read by the embedded controller only (docs/configuration.md, "Embedded controller").
CONTROLLER_KEYS = frozenset(
    {
        "controller.quorum.voters",
        "num.partitions",
        "default.replication.factor",
        "embedded.controller.active.id",
        "embedded.broker.count",
        "metadata.log.dir",
        "delegation.token.secret.key",
        "delegation.token.max.lifetime.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.expiry.check.interval.ms",
    }
)

MECHANISMS = ("plain", "scram-sha-256", "scram-sha-512", "oauthbearer", "gssapi")
_LISTENER_PREFIX = "listener.name."
_CLOSE = 0.8  # difflib ratio: audit.log.dirr -> audit.log.dir (0.96); unrelated keys of one family stay below
_CLOSE_LISTENER = 0.75  # listener names: clinet -> client (0.83), but not internal -> client


@dataclass(frozen=True)
class KeyReport:
    """What `check_keys` found: one line per unknown key, and the Kafka broker keys the proxy ignores."""

    unknown: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """The warnings, one line each (the ignored broker keys together in one)."""
        lines = list(self.unknown)
        if self.ignored:
            lines.append(f"ignored (a Kafka broker key the proxy does not use): {', '.join(self.ignored)}")
        return lines


def _role_keys(role: str) -> frozenset[str]:
    return SHARED_KEYS | (CONTROLLER_KEYS if role == "controller" else PROXY_KEYS)


def _other_role(role: str) -> tuple[str, frozenset[str]]:
    if role == "controller":
        return "proxy", PROXY_KEYS - SHARED_KEYS - CONTROLLER_KEYS
    return "embedded controller", CONTROLLER_KEYS - SHARED_KEYS - PROXY_KEYS


def _broker_keys() -> frozenset[str]:
    return frozenset(kafka_configs().broker.keys)


#: Broker keys of Kafka before 4.0 (ZooKeeper mode), still in many a copied server.properties.
_OLD_BROKER_PREFIXES = ("zookeeper.",)


def _is_broker_key(key: str, broker: Collection[str]) -> bool:
    return key in broker or key.startswith(_OLD_BROKER_PREFIXES)


def _listener_names(raw: Mapping[str, str]) -> list[str]:
    """The listeners a `listener.name.<l>.` key may name: those of `listeners` and `controller.listener.names`."""
    names: list[str] = []
    for item in raw.get("listeners", "").split(","):
        name, sep, _ = item.strip().partition("://")
        if sep and name.strip():
            names.append(name.strip().lower())
    names += [name.strip().lower() for name in raw.get("controller.listener.names", "").split(",") if name.strip()]
    return list(dict.fromkeys(names))


def _split_listener_key(key: str) -> tuple[str, str] | None:
    """`listener.name.<l>.<rest>` -> (l, rest)."""
    if not key.startswith(_LISTENER_PREFIX):
        return None
    listener, sep, rest = key[len(_LISTENER_PREFIX) :].partition(".")
    return (listener, rest) if sep and listener and rest else None


def _without_mechanism(rest: str) -> str:
    for mechanism in MECHANISMS:
        if rest.startswith(mechanism + "."):
            return rest[len(mechanism) + 1 :]
    return rest


def _declared(key: str, declared: Collection[str]) -> bool:
    for entry in declared:
        if entry.endswith(("*", ".")):
            if key.startswith(entry.rstrip("*")):
                return True
        elif key == entry:
            return True
    return False


def _candidates(reads: Iterable[str], role: str, listeners: list[str], declared: Collection[str]) -> list[str]:
    """Every key the operator may have meant: what was read, the role's keys, and the listener-prefixed forms."""
    keys = set(reads) | _role_keys(role) | {entry for entry in declared if not entry.endswith(("*", "."))}
    for listener in listeners:
        prefix = f"{_LISTENER_PREFIX}{listener}."
        keys |= {prefix + key for key in LISTENER_KEYS}
        keys |= {
            f"{prefix}{mechanism}.{key}" for mechanism in MECHANISMS for key in LISTENER_KEYS if key.startswith(("sasl.", "connections."))
        }
    return sorted(keys)


def _suggestion(key: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=_CLOSE)
    return f"; did you mean {close[0]}?" if close else ""


def check_keys(raw: Mapping[str, str], reads: Iterable[str], *, role: str, declared: Collection[str] = ()) -> KeyReport:
    """The keys of `raw` that the parse did not read and that no catalogue knows, for `role` ("proxy" or "controller").

    `reads` are the keys the parse looked up (`recording_reads`); `declared` the keys and prefixes plug-ins declared."""
    read = set(reads)
    role_keys = _role_keys(role)
    broker = _broker_keys()
    listeners = _listener_names(raw)
    other_name, other_keys = _other_role(role)
    server = "embedded controller" if role == "controller" else "proxy"
    candidates: list[str] | None = None
    unknown: list[str] = []
    ignored: list[str] = []

    def hint(key: str) -> str:
        nonlocal candidates
        if candidates is None:
            candidates = _candidates(read, role, listeners, declared)
        return _suggestion(key, candidates)

    for raw_key in raw:
        key = raw_key.strip()
        if key in read or key in role_keys or _declared(key, declared) or (role == "proxy" and key.startswith(PROXY_PREFIXES)):
            continue
        scoped = _split_listener_key(key)
        if scoped is not None:
            listener, rest = scoped
            base = _without_mechanism(rest)
            if listener not in listeners:
                near = difflib.get_close_matches(listener, listeners, n=1, cutoff=_CLOSE_LISTENER)
                if near:  # a misspelt listener name: listener.name.clinet.ssl.keystore.location
                    known = ", ".join(name.upper() for name in listeners)
                    unknown.append(
                        f"{key} names listener {listener.upper()}, which is not in listeners or controller.listener.names ({known}): "
                        f"the {server} does not read it; did you mean {_LISTENER_PREFIX}{near[0]}.{rest}?"
                    )
                    continue
            elif base in role_keys:
                continue  # a listener's own form of a key it may read
        else:
            base = key
        if _is_broker_key(base, broker):
            if role == "proxy":
                ignored.append(key)
            continue  # the controller: its static broker config, which DescribeConfigs answers with
        if key in other_keys:
            unknown.append(f"{key} is a key of the {other_name}: the {server} does not read it")
            continue
        unknown.append(f"unknown key {key}: the {server} does not read it{hint(key)}")
    return KeyReport(tuple(unknown), tuple(ignored))


def plugin_keys(raw: Mapping[str, str]) -> tuple[str, ...]:
    """The keys (and prefixes) the configured authorizer plug-in declares in `CONFIG_KEYS`, on its class or factory or
    its module; none for the built-in authorizer, or a plug-in that declares none."""
    name = (raw.get(AUTHORIZER_KEY) or "").strip()
    if not name or is_standard(name):
        return ()
    factory: object = None
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            factory = entry.load()
            break
    else:
        module_name, sep, attribute = name.partition(":")
        if not sep:
            module_name, _, attribute = name.rpartition(".")
        factory = getattr(importlib.import_module(module_name), attribute)
    module = importlib.import_module(getattr(factory, "__module__", "") or "builtins")
    declared: list[str] = []
    for holder in (factory, module):
        value = getattr(holder, PLUGIN_KEYS_ATTRIBUTE, None)
        if isinstance(value, str):
            declared.append(value)
        elif isinstance(value, Iterable):
            declared += [str(item) for item in value]
    return tuple(dict.fromkeys(declared))
