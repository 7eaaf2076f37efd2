"""The ACLs in force: from an ACL file, or asked of the controller (DescribeAcls through the proxy).

The file is the format ``authz check --acls`` and ``--whatif-acls`` read (authz/acl_file.py). The
controller is asked with confluent-kafka's AdminClient, the way ``kafka-acls --list`` asks: one
DescribeAcls matching every binding, sent to the proxy's (or a broker's) bootstrap address with
admin credentials. Either way the job has the list before Spark starts, and a problem stops it
with exit status 2.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

from authz import AclBinding
from authz.acl_file import AclFileError, binding_from_dict, load_acl_file

#: Seconds to wait for the controller's DescribeAcls answer.
DESCRIBE_TIMEOUT_SECONDS = 30.0
#: How often the wait looks at the client's errors, in seconds.
POLL_SECONDS = 0.25
#: Client errors no retry mends: the wait ends with them.
FATAL_ERRORS = frozenset({"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "_SSL", "_INVALID_ARG"})


class AclSourceError(ValueError):
    """The ACLs in force cannot be had; the message says from where and why."""


def from_file(path: str) -> list[AclBinding]:
    """Every binding of the ACL file; AclSourceError naming the file, the line and the problem."""
    try:
        return load_acl_file(path)
    except AclFileError as exc:
        raise AclSourceError(str(exc)) from None


def _binding(found: Any) -> AclBinding:
    """A confluent-kafka AclBinding as the authorizer's: its enum names are Kafka's (BROKER is the cluster)."""
    return binding_from_dict(
        {
            "principal": found.principal,
            "host": found.host,
            "operation": found.operation.name,
            "permission": found.permission_type.name,
            "resourceType": found.restype.name,
            "resourceName": found.name,
            "patternType": found.resource_pattern_type.name,
        }
    )


class _Errors:
    """The client's errors as they come (its error callback): a refused login ends the wait, and any error explains a timeout."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, error: Any) -> None:
        self.seen.append(error)

    def fatal(self) -> Any | None:
        return next((e for e in self.seen if e.name() in FATAL_ERRORS), None)

    def last(self) -> str:
        return f" (last error: {self.seen[-1].name()}: {self.seen[-1].str()})" if self.seen else ""


def from_controller(bootstrap: str, config: Mapping[str, str], timeout: float = DESCRIBE_TIMEOUT_SECONDS) -> list[AclBinding]:
    """Every binding the controller holds, through ``bootstrap`` with the admin client ``config`` (librdkafka keys)."""
    # imported here: only this source needs the client library
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    where = f"DescribeAcls through {bootstrap}"
    errors = _Errors()
    # librdkafka logs each failed connection attempt: the job says what went wrong in one line instead
    quiet = logging.getLogger(__name__ + ".librdkafka")
    quiet.setLevel(logging.CRITICAL)
    try:
        admin = AdminClient({**config, "bootstrap.servers": bootstrap, "error_cb": errors, "logger": quiet})
    except (KafkaException, ValueError, TypeError) as exc:
        raise AclSourceError(f"{where}: the admin client refused its settings: {exc}") from None
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    future = admin.describe_acls(everything, request_timeout=timeout)
    deadline = time.monotonic() + timeout
    found = None
    while found is None:
        try:
            found = future.result(timeout=POLL_SECONDS)
        except KafkaException as exc:
            error = exc.args[0]
            raise AclSourceError(f"{where}: {error.name()}: {error.str()}") from None
        except TimeoutError:
            admin.poll(0)  # the error callback runs only when the client is polled
            fatal = errors.fatal()
            if fatal is not None:
                raise AclSourceError(f"{where}: {fatal.name()}: {fatal.str()}") from None
            if time.monotonic() >= deadline:
                raise AclSourceError(f"{where}: no answer within {timeout:g} s{errors.last()}") from None
    try:
        bindings = [_binding(binding) for binding in found]
    except ValueError as exc:
        raise AclSourceError(f"{where}: the controller answered a binding the job cannot read: {exc}") from None
    if not bindings:
        # librdkafka hands a denied DescribeAcls back as an empty answer: an empty list may be a refusal
        print(
            f"spark_audit: {where}: no ACLs; if the controller holds some, the admin credentials may lack DESCRIBE on the cluster",
            file=sys.stderr,
        )
    return bindings
