"""Which config values an audit record hides: Kafka's own rule for its request log, and a few names besides.

Kafka logs an AlterConfigs or IncrementalAlterConfigs request with the value of every config that may be
sensitive replaced (RequestChannel.loggableRequest, KafkaConfig.loggableValue): a config whose type is PASSWORD,
or whose type it cannot tell (a name its ConfigDef does not know), for BROKER, TOPIC and GROUP resources; never
for BROKER_LOGGER and CLIENT_METRICS; always for a resource type it does not know. A broker config's type is
that of its name, else of its synonym (`listener.name.<l>.<mechanism>.sasl.jaas.config` is a `sasl.jaas.config`).
On top of Kafka's rule, a name that ends in `.password`, `.secret`, `.passphrase` or `sasl.jaas.config` is
hidden whatever its resource type, so that a plug-in's own secret keys are hidden too.

The types are Kafka's ConfigDef as data: `controller/kafka_configs.json` (made by tools/kafka_configs/generate.py
from Kafka's own classes). The proxy may not import the controller package (pyproject.toml's import contracts), so
the file is located with `importlib.util.find_spec`, which finds the package without running it, and read as
JSON once, when the audit log opens (proxy/audit/settings.py `open_audit_log`), not on a request's path. Without
the file every BROKER, TOPIC and GROUP value is hidden, as Kafka hides a config whose type it cannot tell.
"""

import importlib.util
import json
import logging
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from envelope.config_resources import CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS, CONFIG_GROUP, CONFIG_TOPIC

log = logging.getLogger(__name__)

PASSWORD = "PASSWORD"
_LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")
_SECRET_NAME = re.compile(r"(?:^|\.)(?:password|secret|passphrase)$|sasl\.jaas\.config$", re.IGNORECASE)
_DATA_FILE = "kafka_configs.json"


@dataclass(frozen=True)
class ConfigTypes:
    """Each kind's config names and their ConfigDef type names."""

    broker: dict[str, str]
    listener_mechanism_configs: tuple[str, ...]
    topic: dict[str, str]
    group: dict[str, str]

    def broker_type(self, name: str) -> str | None:
        """KafkaConfig.configType: the exact name (dynamic-only ones included), else its synonym's (listener overrides)."""
        found = self.broker.get(name)
        if found is not None:
            return found
        match = _LISTENER_CONFIG.fullmatch(name)
        if match is None:
            return None
        base = match.group(1)
        mechanism = next((m for m in self.listener_mechanism_configs if base.endswith(m)), None)
        return self.broker.get(mechanism or base)


def _types_of(section: dict[str, Any], *lists: str) -> dict[str, str]:
    return {str(item["name"]): str(item["type"]) for name in lists for item in section.get(name, ())}


def data_file() -> Path | None:
    """Where `controller/kafka_configs.json` is installed, found without importing the controller package."""
    try:
        spec = importlib.util.find_spec("controller")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or ()) if spec is not None else ():
        path = Path(location) / _DATA_FILE
        if path.is_file():
            return path
    return None


@cache
def config_types() -> ConfigTypes | None:
    """Kafka's config types, read once; None (every typed value hidden) when the data file cannot be read."""
    path = data_file()
    try:
        if path is None:
            raise FileNotFoundError(f"no {_DATA_FILE} beside an installed controller package")
        raw = json.loads(path.read_text(encoding="utf-8"))
        broker = raw["broker"]
        return ConfigTypes(
            broker=_types_of(broker, "configs", "dynamic_only"),
            listener_mechanism_configs=tuple(sorted(broker["listener_mechanism_configs"])),
            topic=_types_of(raw["topic"], "configs"),
            group=_types_of(raw["group"], "configs"),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("Kafka's config types are not known (%s): the audit hides every broker, topic and group config value", exc)
        return None


_CACHED_NAME_CHARS = 256
"""Names up to this long are remembered (4096 of them): a client's long names cannot make the cache large."""


def sensitive(resource_type: int, name: str) -> bool:
    """Whether the value of config `name` of a resource of `resource_type` (ConfigResource.Type) is hidden."""
    return _sensitive(resource_type, name) if len(name) > _CACHED_NAME_CHARS else _remembered(resource_type, name)


def _sensitive(resource_type: int, name: str) -> bool:
    if _SECRET_NAME.search(name):
        return True
    if resource_type in (CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS):
        return False
    types = config_types()
    if types is None:
        return True
    if resource_type == CONFIG_BROKER:
        kind = types.broker_type(name)
    elif resource_type == CONFIG_TOPIC:
        kind = types.topic.get(name)
    elif resource_type == CONFIG_GROUP:
        kind = types.group.get(name)
    else:
        return True  # a resource type Kafka does not know: maybeSensitive
    return kind is None or kind == PASSWORD


_remembered = lru_cache(maxsize=4096)(_sensitive)


__all__ = ["ConfigTypes", "config_types", "data_file", "sensitive"]
