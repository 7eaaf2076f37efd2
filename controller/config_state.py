"""The values a config has on the embedded controller, and where each comes from, as Kafka's controller sees them.

A Kafka node holds four maps for its broker configs (DynamicBrokerConfig):
the dynamic per-broker configs of its own node id, the dynamic cluster-wide
defaults (broker resource ""), its static server.properties, and the
ConfigDef defaults. A config's synonyms are its entries in those maps, in
that order, under each of its broker synonym names; its value is the first
one. Topic and group defaults come from the broker's values through the
broker synonym (KafkaConfig.extractLogConfigMap, extractGroupConfigMap).

The embedded controller's static config is its controller.properties.
Dynamic configs come from the metadata image, filtered as Kafka filters what
it applies (DynamicBrokerConfig.fromPersistentProps): values of the wrong
type, configs that are not dynamic, SSL stores without a listener prefix, and
per-broker configs set at the cluster default are stored but not applied.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from controller.config_defs import LISTENER_CONFIG, ConfigKey, KafkaConfigs, kafka_configs, normalized, parse
from controller.config_validators import ConfigValueError
from controller.image import MetadataImage
from envelope.config_sources import CLIENT_METRICS_CONFIG as CLIENT_METRICS_CONFIG
from envelope.config_sources import DEFAULT_CONFIG as DEFAULT_CONFIG
from envelope.config_sources import DYNAMIC_BROKER_CONFIG as DYNAMIC_BROKER_CONFIG
from envelope.config_sources import DYNAMIC_BROKER_LOGGER_CONFIG as DYNAMIC_BROKER_LOGGER_CONFIG
from envelope.config_sources import DYNAMIC_DEFAULT_BROKER_CONFIG as DYNAMIC_DEFAULT_BROKER_CONFIG
from envelope.config_sources import GROUP_CONFIG as GROUP_CONFIG
from envelope.config_sources import STATIC_BROKER_CONFIG as STATIC_BROKER_CONFIG
from envelope.config_sources import TOPIC_CONFIG as TOPIC_CONFIG

CLUSTER_DEFAULT = ""
"""The broker resource name of the cluster-wide dynamic defaults."""

_UNIT_MS = {".ms": 1, ".minutes": 60_000, ".hours": 3_600_000}
_RETENTION_MS = "log.retention.ms"


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: int

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "value": self.value, "source": self.source}


def with_id_synonyms(static: Mapping[str, str]) -> dict[str, str]:
    """AbstractKafkaConfig.populateSynonyms: broker.id and node.id stand for each other."""
    props = dict(static)
    if "broker.id" not in props and "node.id" in props:
        props["broker.id"] = props["node.id"]
    elif "node.id" not in props and "broker.id" in props:
        props["node.id"] = props["broker.id"]
    return props


class ConfigState:
    """One request's view of the broker config maps; build a new one per request (the image changes)."""

    def __init__(self, image: MetadataImage, static: Mapping[str, str], node_id: int) -> None:
        self.defs: KafkaConfigs = kafka_configs()
        self.node_id = node_id
        self.static = with_id_synonyms(static)
        self.dynamic_default = self.applied(image.broker_configs.get(CLUSTER_DEFAULT, {}), per_broker=False)
        self.dynamic_broker = self.applied(image.broker_configs.get(str(node_id), {}), per_broker=True)
        self.static_defaults = {k.name: k.default for k in self.defs.broker.keys.values() if k.default is not None}
        self.effective = self._effective()

    # ---------------------------------------------------------------- what Kafka applies

    def applied(self, stored: Mapping[str, str], *, per_broker: bool) -> dict[str, str]:
        """DynamicBrokerConfig.fromPersistentProps: the stored dynamic configs a node applies."""
        kept: dict[str, str] = {}
        for name, value in stored.items():
            base = self._listener_base(name)
            dynamic_key = self._dynamic_key(base if base is not None else name)
            if dynamic_key is not None:
                try:
                    parse(dynamic_key, value)
                except ConfigValueError:
                    continue  # "contains invalid values ... these configs will be ignored"
            key = self.defs.broker.get(name)
            if key is not None and not key.dynamic:
                continue  # "Non-dynamic configs will be ignored"
            if name in self.defs.listener_prefix_only:
                continue  # SSL stores may change only per listener
            if not per_broker and ((key is not None and key.per_broker) or (base is not None and base not in self.defs.cluster_level_listener_configs)):
                continue  # "Per-broker configs defined at default cluster level will be ignored"
            kept[name] = value
        return kept

    def _dynamic_key(self, name: str) -> ConfigKey | None:
        key = self.defs.broker.get(name)
        if key is not None and key.dynamic:
            return key
        return self.defs.broker_dynamic_only.get(name)

    @staticmethod
    def _listener_base(name: str) -> str | None:
        """What follows `listener.name.<listener>.` (for a mechanism config, still with the mechanism in front)."""
        match = LISTENER_CONFIG.fullmatch(name)
        return None if match is None else match.group(1)

    def _effective(self) -> dict[str, str]:
        """The node's properties once the dynamic ones are laid over the static ones (overrideProps)."""
        props = dict(self.static)
        for overrides in (self.dynamic_default, self.dynamic_broker):
            for name, value in overrides.items():
                for synonym in self.defs.broker_synonyms(name, match_listener_override=False):
                    props.pop(synonym, None)
                props[name] = value
        return props

    # ---------------------------------------------------------------- values

    def broker_value(self, name: str) -> str | None:
        """A broker config's value as the node's KafkaConfig holds it, as text (None: unset, no default)."""
        key = self.defs.broker.get(name)
        raw = self.effective.get(name)
        if key is None:
            return raw
        if raw is None:
            return key.default
        return normalized(key, raw)

    def broker_number(self, name: str) -> int | None:
        """A numeric broker config's value; None when unset or not a number (a static value Kafka would not start with)."""
        value = self.broker_value(name)
        try:
            return None if value is None else int(value)
        except ValueError:
            return None

    def broker_derived(self, broker_name: str) -> str | None:
        """What KafkaConfig gives a topic for this broker config: the time configs fall back through their synonyms."""
        synonyms = self.defs.broker_synonyms(broker_name, match_listener_override=False)
        if len(synonyms) == 1:
            return self.broker_value(broker_name)
        for synonym in synonyms:
            value = self.broker_number(synonym)
            if value is None:
                continue
            unit = next((factor for suffix, factor in _UNIT_MS.items() if synonym.endswith(suffix)), 1)
            millis = value * unit
            if broker_name == _RETENTION_MS and millis < 0:
                return "-1"
            return str(millis)
        return None

    def topic_defaults(self) -> dict[str, str | None]:
        """A topic's values when it overrides nothing (LogConfig.fromProps(extractLogConfigMap, {}))."""
        values: dict[str, str | None] = {}
        for key in self.defs.topic.keys.values():
            if key.from_broker and key.broker_synonym is not None:
                values[key.name] = normalized(key, self.broker_derived(key.broker_synonym))
            else:
                values[key.name] = key.default
        return values

    def group_defaults(self) -> dict[str, str | None]:
        values: dict[str, str | None] = {}
        for key in self.defs.group.keys.values():
            if key.from_broker and key.broker_synonym is not None:
                values[key.name] = normalized(key, self.broker_value(key.broker_synonym))
            else:
                values[key.name] = key.default
        return values

    # ---------------------------------------------------------------- synonyms

    def synonyms(self, name: str, names: list[str], sensitive: bool) -> list[Synonym]:
        """ConfigHelper.configSynonyms: every map's entry under every name, then from `name` on."""
        found = [
            Synonym(synonym, None if sensitive else values[synonym], source)
            for values, source in (
                (self.dynamic_broker, DYNAMIC_BROKER_CONFIG),
                (self.dynamic_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                (self.static, STATIC_BROKER_CONFIG),
                (self.static_defaults, DEFAULT_CONFIG),
            )
            for synonym in names
            if synonym in values
        ]
        while found and found[0].name != name:
            found.pop(0)
        return found

    def broker_synonym_list(self, broker_name: str, sensitive: bool) -> list[Synonym]:
        return self.synonyms(broker_name, self.defs.broker_synonyms(broker_name), sensitive)
