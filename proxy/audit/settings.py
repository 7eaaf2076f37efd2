"""The `audit.*` keys of the proxy, and the audit pipeline they describe (docs/configuration.md#audit)."""

import difflib
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trio

from authz.admin_apis import SERVED_ADMIN_APIS
from envelope.apis import api_name
from proxy.audit.chain import AuditChain, predecessor_of
from proxy.audit.chain_settings import ChainSettings, parse_chain_settings
from proxy.audit.cloudevents import RecordLimits
from proxy.audit.config_secrets import config_types
from proxy.audit.pipeline import DEFAULT_LEVEL, LEVELS, ON_FAILURE_BLOCK, ON_FAILURE_REJECT, AuditLevels, AuditLog
from proxy.audit.sink_kinds import SinkContext, SinkKind
from proxy.audit.sinks.file import DURABILITY_FLUSH, DURABILITY_MODES, FileSinkSettings
from proxy.audit.sinks.registry import SINKS
from proxy.ops.metrics import ProxyMetrics
from proxy.properties import ConfigError, Properties

ON_FAILURE = (ON_FAILURE_BLOCK, ON_FAILURE_REJECT)
CONNECTION_EVENTS = ("all", "failures", "none")
S = TypeVar("S")


@dataclass(frozen=True)
class AuditSettings:
    sinks: tuple[str, ...] = ("file",)
    durability: str = DURABILITY_FLUSH
    on_failure: str = ON_FAILURE_BLOCK
    connection_events: str = "all"
    excluded_principals: frozenset[str] = frozenset()
    limits: RecordLimits = field(default_factory=RecordLimits)
    levels: AuditLevels = field(default_factory=AuditLevels)
    chain: ChainSettings = field(default_factory=ChainSettings)
    """`audit.chain.*`: checkpoints and their signing key."""
    sink_settings: Mapping[str, Any] = field(default_factory=lambda: {"file": FileSinkSettings()})
    """Each kind's settings by name (proxy/audit/sinks/registry.py); None for a kind not among `sinks`."""

    def of(self, kind: SinkKind[S]) -> S | None:
        """The settings of one kind of sink."""
        settings: S | None = self.sink_settings.get(kind.name)
        return settings

    def effective(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"sinks": list(self.sinks), "durability": self.durability, "on.failure": self.on_failure}
        for name, kind in SINKS.items():
            shown.update(kind.effective(self.sink_settings.get(name)))
        return {
            **shown,
            "connection.events": self.connection_events,
            "excluded.principals": sorted(self.excluded_principals),
            "record.max.string.chars": self.limits.max_string_chars,
            "record.max.resources": self.limits.max_resources,
            "record.max.bytes": self.limits.max_record_bytes,
            **_levels_effective(self.levels),
            **self.chain.effective(),
        }


def _levels_effective(levels: AuditLevels) -> dict[str, Any]:
    """For check-config: the level, and each override by the key that sets it."""
    overrides = {f"listener.name.{name.lower()}.audit.level": level for name, level in sorted(levels.listeners.items())}
    overrides.update({f"audit.level.api.{api}": level for api, level in sorted(levels.apis.items())})
    overrides.update(
        {f"listener.name.{name.lower()}.audit.level.api.{api}": level for (name, api), level in sorted(levels.listener_apis.items())}
    )
    return {"level": levels.default, "level.overrides": overrides}


def _choice(props: Properties, key: str, choices: tuple[str, ...], default: str) -> str:
    text = props.get(key)
    if text is None or text == "":
        return default
    value = text.strip().lower()
    if value not in choices:
        raise ConfigError(key, text, f"expected one of {', '.join(choices)}")
    return value


def _sinks(props: Properties) -> tuple[str, ...]:
    text = props.get("audit.sinks")
    names = [name.lower() for name in props.list("audit.sinks", "file")]
    if not names:
        raise ConfigError("audit.sinks", text, f"needs at least one of {', '.join(SINKS)}")
    for name in names:
        if name not in SINKS:
            raise ConfigError("audit.sinks", text, f"unknown sink {name!r} (expected {', '.join(SINKS)} or {','.join(SINKS)})")
    return tuple(dict.fromkeys(names))


def _excluded_principals(props: Properties) -> frozenset[str]:
    """Comma-separated like Confluent's exclude list; `;`-separated (as super.users) when a DN holds commas."""
    key = "audit.excluded.principals"
    text = props.get(key) or ""
    separator = ";" if ";" in text else ","
    principals = [item.strip() for item in text.split(separator) if item.strip()]
    for principal in principals:
        kind, sep, name = principal.partition(":")
        if not sep or not kind.strip() or not name.strip():
            raise ConfigError(
                key, text, f"{principal!r} is not of the form Type:name (e.g. User:monitor); separate principals whose name holds ',' with ';'"
            )
    return frozenset(principals)


LEVEL_KEY = "audit.level"
API_LEVEL_PREFIX = "audit.level.api."
_LISTENER_LEVEL = re.compile(r"listener\.name\.([^.]+)\.audit\.level(?:\.api\.(.*))?")
_FORWARDED = tuple(sorted(api_name(key) for key in SERVED_ADMIN_APIS))
"""The APIs a level may be set for: those the proxy forwards (only their intents carry parameters)."""


def _api(key: str, text: str | None, name: str) -> str:
    """The forwarded API a level key names (its case does not matter), or ConfigError naming the key."""
    found = next((forwarded for forwarded in _FORWARDED if forwarded.lower() == name.lower()), None)
    if found is None:
        close = difflib.get_close_matches(name, _FORWARDED, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(key, text, f"{name!r} is not an API the proxy forwards{hint}; a level is set for one of {', '.join(_FORWARDED)}")
    return found


def _listener_names(props: Properties) -> frozenset[str]:
    """The names `listeners` gives (upper case), to check a listener-prefixed level against; empty when unset."""
    return frozenset(item.partition("://")[0].strip().upper() for item in props.list("listeners") if "://" in item)


def _levels(props: Properties) -> AuditLevels:
    """`audit.level`, `audit.level.api.<ApiName>` and their `listener.name.<l>.` forms; errors name key, value and reason."""
    default = _choice(props, LEVEL_KEY, LEVELS, DEFAULT_LEVEL)
    listeners: dict[str, str] = {}
    apis: dict[str, str] = {}
    listener_apis: dict[tuple[str, str], str] = {}
    named: frozenset[str] | None = None
    for key in sorted(props.raw):  # iterating reads no key: each level key is read below, by its name
        if key.startswith(API_LEVEL_PREFIX):
            api = _api(key, props.get(key), key[len(API_LEVEL_PREFIX) :])
            apis[api] = _choice(props, key, LEVELS, default)
            continue
        match = _LISTENER_LEVEL.fullmatch(key)
        if match is None:
            continue
        listener = match.group(1).upper()
        named = _listener_names(props) if named is None else named
        if named and listener not in named:
            raise ConfigError(key, props.get(key), f"no listener {listener} in listeners ({', '.join(sorted(named))})")
        if match.group(2) is None:
            listeners[listener] = _choice(props, key, LEVELS, default)
        else:
            listener_apis[(listener, _api(key, props.get(key), match.group(2)))] = _choice(props, key, LEVELS, default)
    return AuditLevels(default, listeners, apis, listener_apis)


def parse_audit_settings(props: Properties, log_dir: Path) -> AuditSettings:
    sinks = _sinks(props)
    durability = _choice(props, "audit.durability", DURABILITY_MODES, DURABILITY_FLUSH)
    on_failure = _choice(props, "audit.on.failure", ON_FAILURE, ON_FAILURE_BLOCK)
    sink_settings = {name: kind.parse(props, log_dir, enabled=name in sinks) for name, kind in SINKS.items()}
    return AuditSettings(
        sinks=sinks,
        durability=durability,
        on_failure=on_failure,
        sink_settings=sink_settings,
        connection_events=_choice(props, "audit.connection.events", CONNECTION_EVENTS, "all"),
        excluded_principals=_excluded_principals(props),
        levels=_levels(props),
        chain=parse_chain_settings(props),
        limits=RecordLimits(
            max_string_chars=props.int("audit.record.max.string.chars", 1024, minimum=64),
            max_resources=props.int("audit.record.max.resources", 1000, minimum=1),
            max_record_bytes=props.int("audit.record.max.bytes", 1_048_576, minimum=4096),
        ),
    )


def open_audit_log(settings: AuditSettings, log_dir: Path, node_id: int, metrics: ProxyMetrics | None = None) -> AuditLog:
    """The pipeline with its sinks, in the order `audit.sinks` names them; files a crash left in staging are published here."""
    config_types()  # Kafka's config types, read now rather than on the first config change audited
    context = SinkContext(log_dir, node_id, settings.durability, metrics)
    sinks = [kind.open(settings.sink_settings[name], context) for name, kind in SINKS.items() if name in settings.sinks]
    # The chain continues the last record the sinks committed before this process (a crash's included: opening
    # the file sink published what it left in staging).
    chain = AuditChain(node_id, predecessor=predecessor_of(sinks), settings=settings.chain)
    return AuditLog(
        sinks,
        on_failure=settings.on_failure,
        connection_events=settings.connection_events,
        excluded_principals=settings.excluded_principals,
        metrics=metrics,
        limits=settings.limits,
        levels=settings.levels,
        chain=chain,
    )


@asynccontextmanager
async def audit_running(audit: AuditLog, shutdown_timeout: float) -> AsyncIterator[AuditLog]:
    """The writer runs for the body; on the way out (even when cancelled) queued records are committed
    for at most `shutdown_timeout` seconds and the sinks are closed (files published)."""
    async with trio.open_nursery() as nursery:
        await nursery.start(audit.run)
        try:
            yield audit
        finally:
            await audit.aclose(shutdown_timeout)
