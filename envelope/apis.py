"""The API key table: names from kio's schema index and the forwardable set."""

from kio.schema.index import api_key_map

# KIP-590 / Kafka's ApiKeys.forwardable: the only APIs an Envelope may carry.
FORWARDABLE: frozenset[int] = frozenset({19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51, 55, 57, 64, 67, 80, 81})

ENVELOPE = 58
API_VERSIONS = 18
METADATA = 3
DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31
DESCRIBE_CONFIGS = 32
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
DESCRIBE_CLUSTER = 60
ELECT_LEADERS = 43
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46
DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51
DESCRIBE_QUORUM = 55
UPDATE_FEATURES = 57


def api_name(api_key: int) -> str:
    """Kafka's CamelCase name of an API key, e.g. 19 -> CreateTopics."""
    snake = api_key_map.get(api_key)
    if snake is None:
        return f"Unknown({api_key})"
    return "".join(part.capitalize() for part in snake.split("_"))


def is_forwardable(api_key: int) -> bool:
    return api_key in FORWARDABLE
