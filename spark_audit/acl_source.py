"""The ACLs in force: from an ACL file, or asked of the controller (DescribeAcls through the proxy).

The file is the format ``authz check --acls`` and ``--whatif-acls`` read (authz/acl_file.py). The
controller is asked with confluent-kafka's AdminClient, the way ``kafka-acls --list`` asks: one
DescribeAcls matching every binding, sent to the proxy's (or a broker's) bootstrap address with
admin credentials. Either way the job has the list before Spark starts, and a problem stops it
with exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from authz import AclBinding
from authz.acl_file import AclFileError, binding_from_dict, load_acl_file

#: Seconds to wait for the controller's DescribeAcls answer.
DESCRIBE_TIMEOUT_SECONDS = 30.0


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


def from_controller(bootstrap: str, config: Mapping[str, str], timeout: float = DESCRIBE_TIMEOUT_SECONDS) -> list[AclBinding]:
    """Every binding the controller holds, through ``bootstrap`` with the admin client ``config`` (librdkafka keys)."""
    # imported here: only this source needs the client library
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    where = f"DescribeAcls through {bootstrap}"
    try:
        admin = AdminClient({**config, "bootstrap.servers": bootstrap})
    except (KafkaException, ValueError, TypeError) as exc:
        raise AclSourceError(f"{where}: the admin client refused its settings: {exc}") from None
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    try:
        found = admin.describe_acls(everything, request_timeout=timeout).result(timeout=timeout)
    except KafkaException as exc:
        error = exc.args[0]
        raise AclSourceError(f"{where}: {error.name()}: {error.str()}") from None
    except TimeoutError:
        raise AclSourceError(f"{where}: no answer within {timeout:g} s") from None
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
