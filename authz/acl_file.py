"""ACL files: bindings as JSON, one per line or as a document (`authz check --acls`, the Spark what-if replay).

Each binding is an object with the keys of the embedded controller's
``metadata.json``::

    {"principal": "User:alice", "operation": "CREATE", "permission": "ALLOW",
     "resourceType": "TOPIC", "resourceName": "orders", "patternType": "LITERAL", "host": "*"}

``permission`` defaults to ALLOW, ``patternType`` to LITERAL and ``host`` to
``*``. Names are case-insensitive and may be written as Kafka's tools write
them (``AlterConfigs``, ``TransactionalId``, ``Prefixed``); ``BROKER`` is
accepted for the cluster (confluent-kafka's name). A file is either JSON
lines (blank lines and lines starting with ``#`` are skipped), a JSON array of
bindings, or a JSON object with an ``acls`` array, so the embedded
controller's ``metadata.json`` can be replayed as it is.
"""

from __future__ import annotations

import enum
import json
import re
from pathlib import Path
from typing import Any, TypeVar

from authz.model import AclBinding, Operation, PatternType, PermissionType, ResourceType

E = TypeVar("E", bound=enum.Enum)

REQUIRED_KEYS = ("principal", "operation", "resourceType", "resourceName")
KNOWN_KEYS = frozenset({*REQUIRED_KEYS, "permission", "patternType", "host"})
_ALIASES = {"BROKER": "CLUSTER"}


class AclFileError(ValueError):
    """The ACL file cannot be used; the message names the file, the entry and the problem."""


def _enum_name(text: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text.strip())
    name = re.sub(r"[\s-]+", "_", spaced).upper()
    return _ALIASES.get(name, name)


def _member(kind: type[E], value: Any, key: str) -> E:
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, not {value!r}")
    try:
        return kind[_enum_name(value)]
    except KeyError:
        choices = ", ".join(m.name for m in kind)
        raise ValueError(f"{key} {value!r} is not one of {choices}") from None


def binding_from_dict(entry: Any) -> AclBinding:
    """One binding from its JSON object; ValueError saying what is wrong."""
    if not isinstance(entry, dict):
        raise ValueError(f"expected a JSON object, got {type(entry).__name__}")
    missing = [key for key in REQUIRED_KEYS if key not in entry]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    unknown = sorted(set(entry) - KNOWN_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_KEYS))})")
    for key in ("principal", "resourceName", "host"):
        if key in entry and not isinstance(entry[key], str):
            raise ValueError(f"{key} must be a string, not {entry[key]!r}")
    binding = AclBinding(
        resource_type=_member(ResourceType, entry["resourceType"], "resourceType"),
        resource_name=entry["resourceName"],
        pattern_type=_member(PatternType, entry.get("patternType", "LITERAL"), "patternType"),
        principal=entry["principal"],
        host=entry.get("host", "*"),
        operation=_member(Operation, entry["operation"], "operation"),
        permission=_member(PermissionType, entry.get("permission", "ALLOW"), "permission"),
    )
    problem = binding.validate()
    if problem is not None:
        raise ValueError(problem)
    return binding


def binding_to_dict(binding: AclBinding) -> dict[str, str]:
    return {
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission": binding.permission.name,
        "resourceType": binding.resource_type.name,
        "resourceName": binding.resource_name,
        "patternType": binding.pattern_type.name,
    }


def _entries(path: Path, text: str) -> list[tuple[str, Any]]:
    """(where, JSON value) per binding, ``where`` being ``line N`` or ``entry N``."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            document = json.loads(stripped)
        except json.JSONDecodeError:
            document = None  # several objects: JSON lines, parsed below
        if isinstance(document, list):
            return [(f"entry {i}", item) for i, item in enumerate(document, 1)]
        if isinstance(document, dict) and "acls" in document:
            acls = document["acls"]
            if not isinstance(acls, list):
                raise AclFileError(f"{path}: 'acls' must be an array")
            return [(f"acls entry {i}", item) for i, item in enumerate(acls, 1)]
    entries: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entries.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise AclFileError(f"{path}: line {number}: not JSON: {exc.msg}") from None
    return entries


def load_acl_file(path: str | Path) -> list[AclBinding]:
    """Every binding in the file, in order; AclFileError for the first bad one."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise AclFileError(f"{file}: cannot read: {exc.strerror or exc}") from None
    bindings = []
    for where, entry in _entries(file, text):
        try:
            bindings.append(binding_from_dict(entry))
        except ValueError as exc:
            raise AclFileError(f"{file}: {where}: {exc}") from None
    return bindings


def parse_acls(text: str, source: str = "<acls>") -> list[AclBinding]:
    """Like `load_acl_file`, for text already read; `source` names it in errors."""
    bindings = []
    for where, entry in _entries(Path(source), text):
        try:
            bindings.append(binding_from_dict(entry))
        except ValueError as exc:
            raise AclFileError(f"{source}: {where}: {exc}") from None
    return bindings


load_acls = load_acl_file
binding_to_json = binding_to_dict
