"""What the benchmark's synthetic audit traffic is made of: the requests, errors, clients and listeners a deployment
sees, the shape of the traffic (:class:`Traffic`) and what a written directory holds (:class:`Counts`).

API keys and error codes are the project's and kio's tables (``envelope/apis.py``, ``ErrorCode``), so a record's
``methodName`` is the proxy's own label of its key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey, api_label
from envelope.responses import error_name

START = datetime(2026, 11, 21, tzinfo=UTC)
PROXY_IDENTITY = "User:envelope-proxy"
SASL_FAILED = int(ErrorCode.sasl_authentication_failed)
UNSUPPORTED_MECHANISM = int(ErrorCode.unsupported_sasl_mechanism)
UNSUPPORTED_VERSION = int(ErrorCode.unsupported_version)
INVALID_REQUEST = int(ErrorCode.invalid_request)
REQUEST_TIMED_OUT = int(ErrorCode.request_timed_out)
#: a key Kafka does not know, as a refused request's record names it
UNKNOWN_API_KEY = 999


def method(api_key: int) -> str:
    """A record's ``methodName``: the proxy's label of the key (``Unknown`` for a key Kafka does not know)."""
    return f"kafka.{api_label(api_key)}"


def coded(code: ErrorCode) -> tuple[int, str]:
    """An error as a record's result lists it: its code and its name, as the proxy writes them."""
    return int(code), error_name(code)


# (method, api key, operation, resource type, weight, max resources)
FORWARDED = tuple(
    (method(key), int(key), operation, resource_type, weight, most)
    for key, operation, resource_type, weight, most in (
        (ApiKey.CREATE_TOPICS, "CREATE", "TOPIC", 30, 5),
        (ApiKey.DELETE_TOPICS, "DELETE", "TOPIC", 8, 3),
        (ApiKey.CREATE_PARTITIONS, "ALTER", "TOPIC", 5, 2),
        (ApiKey.ALTER_CONFIGS, "ALTER_CONFIGS", "TOPIC", 4, 2),
        (ApiKey.INCREMENTAL_ALTER_CONFIGS, "ALTER_CONFIGS", "TOPIC", 10, 2),
        (ApiKey.CREATE_ACLS, "ALTER", "CLUSTER", 3, 1),
        (ApiKey.DELETE_ACLS, "ALTER", "CLUSTER", 1, 1),
        (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "ALTER", "CLUSTER", 1, 1),
        (ApiKey.ALTER_CLIENT_QUOTAS, "ALTER_CONFIGS", "CLUSTER", 1, 1),
        (ApiKey.DELETE_RECORDS, "DELETE", "TOPIC", 2, 2),
    )
)
READS = tuple(
    (method(key), int(key), operation)
    for key, operation in ((ApiKey.METADATA, "DESCRIBE"), (ApiKey.DESCRIBE_CONFIGS, "DESCRIBE_CONFIGS"), (ApiKey.DESCRIBE_ACLS, "DESCRIBE"))
)
LOCAL = tuple((method(key), int(key)) for key in (ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER))
#: requests the proxy refuses: an Envelope from a client, a data-plane API, a key Kafka does not know
REFUSED = tuple((method(key), int(key)) for key in (ApiKey.ENVELOPE, ApiKey.PRODUCE, UNKNOWN_API_KEY))
# per-resource errors a controller answers besides authorization failures
RESOURCE_ERRORS = tuple(
    map(coded, (ErrorCode.topic_already_exists, ErrorCode.unknown_topic_or_partition, ErrorCode.invalid_partitions, ErrorCode.invalid_config))
)
AUTHZ_ERRORS = {"TOPIC": coded(ErrorCode.topic_authorization_failed), "CLUSTER": coded(ErrorCode.cluster_authorization_failed)}
DISCONNECT_CAUSES = (("client", 90), ("idle", 6), ("versions-changed", 2), ("shutdown", 1), ("error", 1))
REFUSAL_REASONS = ("ip-filter", "max.connections.per.ip", "max.connections", "protocol-error")
CLIENTS = (
    ("adminclient-1", "apache-kafka-java", "4.1.0"),
    ("terraform-provider-kafka", "sarama", "1.43.0"),
    ("rdkafka", "librdkafka", "2.6.1"),
    ("kafka-python-2.0.2", "kafka-python", "2.0.2"),
    ("strimzi-topic-operator", "apache-kafka-java", "3.9.0"),
)


@dataclass(frozen=True)
class Listener:
    name: str
    protocol: str
    mechanism: str | None


LISTENERS = (
    Listener("CLIENT", "SASL_SSL", "SCRAM-SHA-512"),
    Listener("INTERNAL", "SASL_PLAINTEXT", "PLAIN"),
    Listener("MTLS", "SSL", "SSL"),
    Listener("LEGACY", "PLAINTEXT", None),
)


@dataclass(frozen=True)
class Traffic:
    """What the generated audit directory looks like (rates are per written line)."""

    nodes: int = 3
    days: int = 3
    principals: int = 160
    #: exponent of the Zipf law of the principals' volumes
    zipf: float = 1.1
    listeners: tuple[Listener, ...] = LISTENERS
    topics: int = 2000
    addresses: int = 600
    #: share of connections that are brute-force bursts of failed logins
    brute_force: float = 0.002
    #: share of connections refused as a whole
    refused_connections: float = 0.01
    malformed: float = 0.001
    blank: float = 0.0005
    #: a line written twice in the same file / re-published in a later file of the node
    duplicate_in_file: float = 0.001
    duplicate_across_files: float = 0.001
    #: forwarded requests whose intent (resp. outcome) is missing
    lost_intent: float = 0.001
    lost_outcome: float = 0.002
    #: audit.file.rotate.ms
    rotate_seconds: int = 3600
    #: every line sealed into its writer's hash chain (chainseq, chainprev), as the proxy writes every line
    chained: bool = True
    #: days after 2026-11-21 the traffic starts (a later day's files)
    start_day: int = 0


@dataclass(frozen=True)
class Counts:
    """The written lines: good + malformed + blank + duplicates = lines."""

    records: int
    malformed: int
    duplicates: int
    blank: int = 0
    files: int = 0
    extra: dict[str, int] = field(default_factory=dict)
