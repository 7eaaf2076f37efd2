"""The configs CreateTopics tells a caller about a new topic (KIP-525), as Kafka's controller computes them.

Every topic config, from the creation request, else the broker configs it
falls back on (this node's, the cluster default, the static ones, in hours or
minutes turned into milliseconds), else the topic default.
"""

from collections.abc import Mapping
from typing import Any

from controller.config_defs import ConfigKey, kafka_configs
from controller.config_state import (
    CLUSTER_DEFAULT,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    TOPIC_CONFIG,
    with_id_synonyms,
)
from controller.image import MetadataImage
from controller.java_values import java_integer, java_trim


def created_topic_configs(
    image: MetadataImage, static_config: Mapping[str, str], node_id: int, creation_configs: Mapping[str, str]
) -> list[dict[str, Any]]:
    """CreateTopics' KIP-525 configs for a new topic, as Kafka's controller computes them
    (ConfigurationControlManager.computeEffectiveTopicConfigs): every topic config by name, from the
    request, else the first broker synonym set on this node, the cluster default or the static config
    (hours and minutes turned into milliseconds), else the topic default. Values are the stored text, not
    parsed; internal configs only when the request sets them."""
    defs = kafka_configs().topic
    maps = (
        (image.broker_configs.get(str(node_id), {}), DYNAMIC_BROKER_CONFIG),
        (image.broker_configs.get(CLUSTER_DEFAULT, {}), DYNAMIC_DEFAULT_BROKER_CONFIG),
        (with_id_synonyms(static_config), STATIC_BROKER_CONFIG),
    )
    configs = []
    for key in defs.keys.values():
        if key.internal and key.name not in creation_configs:
            continue
        value, source = _resolved(key, creation_configs, maps)
        configs.append(
            {"name": key.name, "value": None if key.sensitive else value, "read_only": False, "config_source": source, "is_sensitive": key.sensitive}
        )
    return sorted(configs, key=lambda c: str(c["name"]))


def _resolved(key: ConfigKey, creation: Mapping[str, str], maps: tuple[tuple[Mapping[str, str], int], ...]) -> tuple[str | None, int]:
    if key.name in creation:
        return creation[key.name], TOPIC_CONFIG
    for values, source in maps:
        for synonym, factor in key.broker_synonyms:
            if synonym in values:
                return _converted(values[synonym], factor), source
    return key.default, DEFAULT_CONFIG


def _converted(value: str, factor: int) -> str:
    """ConfigSynonym's converters: hours or minutes (an int, 0 when it is none) to milliseconds."""
    if factor == 1:
        return value
    trimmed = java_trim(value)
    number = java_integer(trimmed)
    return str((number or 0) * factor)
