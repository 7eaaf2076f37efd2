"""Topic configs checked as Kafka's LogConfig.validate checks them, from the generated definitions.

The names, types and validators are Kafka 4.3's (controller/kafka_configs.json);
the defaults a topic inherits come from the controller's broker configs.
Tiered storage is off on the embedded controller (remote.log.storage.system.enable
is false), so a topic asking for it is refused as Kafka refuses it then.
"""

from collections.abc import Mapping

from controller.config_defs import kafka_configs
from controller.config_state import ConfigState
from controller.config_validators import ConfigValueError
from controller.image import MetadataImage
from controller.java_order import string_map_order

MIN_COMPACTION_LAG = "min.compaction.lag.ms"
MAX_COMPACTION_LAG = "max.compaction.lag.ms"
REMOTE_STORAGE = "remote.storage.enable"


def topic_configs_problem(configs: Mapping[str, str], state: ConfigState | None = None) -> str | None:
    """Why Kafka would refuse a topic with these configs (all of them, after any change), in its words, or None.

    LogConfig.validate: unknown names first (in the map's order), then every value parsed over
    the broker's defaults (ConfigDef.parse, in definition order), then the checks across values."""
    defs = kafka_configs().topic
    for name in string_map_order(configs):
        if name not in defs:
            return f"Unknown topic config name: {name}"
    state = state or ConfigState(MetadataImage(), {}, 0)
    inherited = state.topic_defaults()
    combined: dict[str, str | None] = {
        name: value for name, value in inherited.items() if (key := defs.get(name)) is not None and key.from_broker and value is not None
    }
    combined.update(configs)
    try:
        values = defs.parse_all(combined)
    except ConfigValueError as exc:
        return str(exc)
    low, high = values[MIN_COMPACTION_LAG], values[MAX_COMPACTION_LAG]
    if low > high:
        return f"conflict topic config setting {MIN_COMPACTION_LAG} ({low}) > {MAX_COMPACTION_LAG} ({high})"
    if values[REMOTE_STORAGE]:
        return "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
    return None


def config_problem(name: str, value: str | None) -> str | None:
    """Why Kafka would refuse this one topic config (over the default broker configs), or None."""
    if value is None:
        return f"Null value not supported for topic configs: {name}"
    return topic_configs_problem({name: value})
