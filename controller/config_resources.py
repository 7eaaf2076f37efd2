"""What the config APIs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) share about a config resource.

Kafka's ConfigResource.Type numbers and names, the IncrementalAlterConfigs
operations (AlterConfigOp.OpType), the words Kafka's ControllerApis answers a
denied resource with, and one resource's failure and answer entry as the alter
handlers and the BROKER_LOGGER changes give them.
"""

from typing import Any

from kio.schema.errors import ErrorCode

# ConfigResource.Type
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
CONFIG_RESOURCE_TYPES = frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})
TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER", CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}

# IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

ERROR_MESSAGES: dict[int, str] = {
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
}


class ConfigProblem(Exception):
    """One resource's failure, as ApiError.fromThrowable gives it."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def alter_response(code: int, message: str | None, kind: int, name: str) -> dict[str, Any]:
    """One resource's entry in an AlterConfigs or IncrementalAlterConfigs answer."""
    return {"error_code": code, "error_message": message, "resource_type": kind, "resource_name": name}
