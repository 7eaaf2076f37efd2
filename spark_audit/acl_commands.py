"""ACL bindings written out: JSON lines for ``authz check`` and ``--whatif-acls``, and ``kafka-acls`` command lines.

The scripts take the tool, the bootstrap address and the admin client's properties from the
environment (``KAFKA_ACLS``, ``BOOTSTRAP``, ``ADMIN_CONFIG``), so one file serves a test cluster
and production; ``set -eu`` stops at the first command that fails.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from authz import AclBinding, Operation, PermissionType, ResourceType
from authz.acl_file import binding_to_dict

#: The tool as Apache Kafka's distribution names it (Confluent's packages call it ``kafka-acls``).
DEFAULT_TOOL = "kafka-acls.sh"

#: kafka-acls's option naming a resource of each type; the cluster takes no name.
RESOURCE_OPTIONS: dict[ResourceType, str] = {
    ResourceType.TOPIC: "--topic",
    ResourceType.GROUP: "--group",
    ResourceType.CLUSTER: "--cluster",
    ResourceType.TRANSACTIONAL_ID: "--transactional-id",
    ResourceType.DELEGATION_TOKEN: "--delegation-token",
    ResourceType.USER: "--user-principal",
}


def json_lines(bindings: Sequence[AclBinding], header: Sequence[str] = ()) -> str:
    """One binding per line in the ACL file format (authz/acl_file.py), after ``#`` comment lines."""
    comments = [f"# {line}" for line in header]
    return "\n".join([*comments, *(json.dumps(binding_to_dict(b), sort_keys=True) for b in bindings)]) + "\n"


def operation_word(operation: Operation) -> str:
    """``DESCRIBE_CONFIGS`` as kafka-acls spells it in its help: ``DescribeConfigs``."""
    return "".join(part.capitalize() for part in operation.name.split("_"))


def command(binding: AclBinding, *, remove: bool) -> str:
    """The kafka-acls line that adds (or removes, without asking) exactly this binding."""
    permission = "allow" if binding.permission is PermissionType.ALLOW else "deny"
    words = [
        "--remove" if remove else "--add",
        *(["--force"] if remove else []),
        f"--{permission}-principal",
        shlex.quote(binding.principal),
        f"--{permission}-host",
        shlex.quote(binding.host),
        "--operation",
        operation_word(binding.operation),
        RESOURCE_OPTIONS[binding.resource_type],
    ]
    if binding.resource_type is not ResourceType.CLUSTER:
        words.append(shlex.quote(binding.resource_name))
    words += ["--resource-pattern-type", binding.pattern_type.name.lower()]
    return '"$KAFKA_ACLS" --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" ' + " ".join(words)


def script(bindings: Sequence[AclBinding], *, remove: bool, header: Sequence[str]) -> str:
    """A POSIX shell script of kafka-acls lines, one per binding, that refuses to run without its settings."""
    lines = [
        "#!/bin/sh",
        *(f"# {line}" for line in header),
        "# Needs BOOTSTRAP (host:port of the proxy or a broker) and ADMIN_CONFIG (client properties with admin credentials);",
        f"# KAFKA_ACLS names the tool (default {DEFAULT_TOOL}).",
        "set -eu",
        ': "${BOOTSTRAP:?set BOOTSTRAP to host:port}"',
        ': "${ADMIN_CONFIG:?set ADMIN_CONFIG to the admin client properties file}"',
        f'KAFKA_ACLS="${{KAFKA_ACLS:-{DEFAULT_TOOL}}}"',
        *(command(binding, remove=remove) for binding in bindings),
    ]
    return "\n".join(lines) + "\n"
