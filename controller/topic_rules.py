"""The rules Kafka 4.3's controller applies to topics in more than one topic API.

A topic name's validity (Topic.validate), a manual replica assignment's
(ReplicationControlManager.validateManualPartitionAssignment), the words for
replicas that cannot be placed, a request whose deadline has passed, the
brokers replicas are numbered over, and the answers' shared words.
CreateTopics (create_topics.py), DeleteTopics and CreatePartitions
(topics.py) use these, as do the config and partition-admin handlers.
"""

import re
import uuid
from datetime import timedelta

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController: records one request may write (a partition is one)
ZERO_UUID = uuid.UUID(int=0)

DUPLICATE_NAME = "Duplicate topic name."

Outcome = tuple[int, str | None]
"""One topic's error code and message."""


def deadline_passed(timeout: timedelta | int) -> bool:
    """A request's deadline is now + timeout: with none left, Kafka's controller queue times the event out
    (REQUEST_TIMED_OUT for the whole request) before it runs. A positive timeout never runs out here."""
    return (timeout.total_seconds() if isinstance(timeout, timedelta) else timeout) <= 0


def broker_ids_of(broker_count: int) -> list[int]:
    """The embedded controller has no brokers; replicas are numbered 1..broker_count as registered ones would be."""
    return list(range(1, broker_count + 1))


def topic_name_problem(name: str) -> str | None:
    """Kafka's Topic.validate: why `name` cannot be a topic, in its words, or None."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name == ".":
        reason = "'.' is not allowed"
    elif name == "..":
        reason = "'..' is not allowed"
    elif len(name) > MAX_TOPIC_NAME:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME}"
    elif not _LEGAL_TOPIC.match(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"


def manual_assignment_problem(replicas: list[int], broker_ids: list[int], replication_factor: int | None) -> str | None:
    """ReplicationControlManager.validateManualPartitionAssignment (INVALID_REPLICA_ASSIGNMENT), or None."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous: int | None = None
    for broker in sorted(replicas):
        if broker not in broker_ids:
            return f"The manual partition assignment includes broker {broker}, but no such broker is registered."
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        return (
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is not consistent with "
            f"previous partitions, which have {replication_factor} replica(s)."
        )
    return None


def too_few_brokers(replication_factor: int, broker_count: int) -> str:
    """StripedReplicaPlacer's words when the replicas cannot be placed."""
    if replication_factor <= 0:
        return f"Invalid replication factor {replication_factor}: the replication factor must be positive."
    return (
        f"The target replication factor of {replication_factor} cannot be reached because only {broker_count} broker(s) are "
        "registered or some brokers have all their log directories cordoned."
    )
