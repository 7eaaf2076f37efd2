"""Kafka's codes for the type of a config resource (ConfigResource.Type) and for an IncrementalAlterConfigs operation
(AlterConfigOp.OpType): one table for the authorizer's action map, the audit's change parameters, the proxy's
DescribeConfigs read and the embedded controller."""

# ConfigResource.Type
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS, CONFIG_GROUP = 2, 4, 8, 16, 32
CONFIG_RESOURCE_TYPE_NAMES = {
    CONFIG_TOPIC: "TOPIC",
    CONFIG_BROKER: "BROKER",
    CONFIG_BROKER_LOGGER: "BROKER_LOGGER",
    CONFIG_CLIENT_METRICS: "CLIENT_METRICS",
    CONFIG_GROUP: "GROUP",
}
CONFIG_RESOURCE_TYPES = frozenset(CONFIG_RESOURCE_TYPE_NAMES)
"""Every type Kafka knows: a request naming another fails whole (INVALID_REQUEST)."""

# AlterConfigOp.OpType
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
OP_NAMES = {OP_SET: "SET", OP_DELETE: "DELETE", OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}
