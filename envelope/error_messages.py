"""Kafka's default message for an error code (the second argument of each `Errors` entry in Kafka 4.3).

Kafka answers `new ApiError(error)` with this text, and `ApiError.fromThrowable(e)` with
no text (null) when the exception's message *is* this text: `api_error` does both, so a
handler says which of the two Kafka does and gets Kafka's message, or None.
"""

from kio.schema.errors import ErrorCode

DEFAULT_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.unknown_server_error: "The server experienced an unexpected error when processing the request.",
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.invalid_topic_exception: "The request attempted to perform an operation on an invalid topic.",
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.unsupported_sasl_mechanism: "The broker does not support the requested SASL mechanism.",
    ErrorCode.unsupported_version: "The version of API is not supported.",
    ErrorCode.topic_already_exists: "Topic with this name already exists.",
    ErrorCode.invalid_partitions: "Number of partitions is below 1.",
    ErrorCode.invalid_replication_factor: "Replication factor is below 1 or larger than the number of available brokers.",
    ErrorCode.invalid_replica_assignment: "Replica assignment is invalid.",
    ErrorCode.invalid_config: "Configuration is invalid.",
    ErrorCode.invalid_request: (
        "This most likely occurs because of a request being malformed by the client library or the message was sent to an "
        "incompatible broker. See the broker logs for more details."
    ),
    ErrorCode.policy_violation: "Request parameters do not satisfy the configured policy.",
    ErrorCode.security_disabled: "Security features are disabled.",
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.no_reassignment_in_progress: "No partition reassignment is in progress.",
    ErrorCode.resource_not_found: "A request illegally referred to a resource that does not exist.",
    ErrorCode.duplicate_resource: "A request illegally referred to the same resource twice.",
    ErrorCode.unacceptable_credential: "Requested credential would not meet criteria for acceptability.",
    ErrorCode.unknown_topic_id: "This server does not host this topic ID.",
}


def default_message(code: ErrorCode) -> str:
    """`new ApiError(code)`'s message: Kafka's text for the code."""
    return DEFAULT_MESSAGES[code]


def thrown_message(code: ErrorCode, message: str | None) -> str | None:
    """`ApiError.fromThrowable(new XxxException(message))`'s message: None when it is the default text
    (or none was given), and for UNKNOWN_SERVER_ERROR, which never carries one."""
    if code == ErrorCode.unknown_server_error or message is None or message == DEFAULT_MESSAGES.get(code):
        return None
    return message
