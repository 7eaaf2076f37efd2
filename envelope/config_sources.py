"""Kafka's DescribeConfigsResponse codes for where a config's value comes from (ConfigSource) and its type
(ConfigType's UNKNOWN): one table for the embedded controller, which answers with them, and the proxy's
DescribeConfigs read, which fills them into an older upstream's answer."""

UNKNOWN_CONFIG = 0
TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
DYNAMIC_BROKER_LOGGER_CONFIG = 6
CLIENT_METRICS_CONFIG = 7
GROUP_CONFIG = 8

UNKNOWN_CONFIG_TYPE = 0
