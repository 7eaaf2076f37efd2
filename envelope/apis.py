"""The API key table: names from kio's schema index and the forwardable set."""

from enum import IntEnum

from kio.schema.index import api_key_map


class ApiKey(IntEnum):
    """Kafka's API keys (Kafka's ApiKeys; the names are kio's schema index upper-cased)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


# KIP-590 / Kafka's ApiKeys.forwardable: the only APIs an Envelope may carry.
FORWARDABLE: frozenset[int] = frozenset(
    {
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_ACLS,
        ApiKey.DELETE_ACLS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.ELECT_LEADERS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.UPDATE_FEATURES,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.ADD_RAFT_VOTER,
        ApiKey.REMOVE_RAFT_VOTER,
    }
)


class EndpointType(IntEnum):
    """DescribeCluster's EndpointType (KIP-919): which kind of listener the caller means to ask."""

    BROKER = 1
    CONTROLLER = 2


# Names are asked for several times a request (audit records, metric labels, logs): computed once.
_NAMES = {api_key: "".join(part.capitalize() for part in snake.split("_")) for api_key, snake in api_key_map.items()}


def api_name(api_key: int) -> str:
    """Kafka's CamelCase name of an API key, e.g. 19 -> CreateTopics."""
    name = _NAMES.get(api_key)
    return f"Unknown({api_key})" if name is None else name


UNKNOWN_API = "Unknown"


def api_label(api_key: int) -> str:
    """The API's name where a client must not choose the value set: audit `methodName`, metric labels.
    Every key Kafka does not know is `Unknown` (its number stays in the record's apiKey)."""
    return _NAMES.get(api_key, UNKNOWN_API)


def is_forwardable(api_key: int) -> bool:
    return api_key in FORWARDABLE
