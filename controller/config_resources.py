"""What the config APIs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) share about a config resource.

The words Kafka's ControllerApis answers a
denied resource with, and one resource's failure and answer entry as the alter
handlers and the BROKER_LOGGER changes give them.
"""

from typing import Any

from kio.schema.errors import ErrorCode

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
