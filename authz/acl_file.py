"""ACLs as data: one JSON object per binding, the shape the embedded controller persists.

`{"resourceType": "TOPIC", "resourceName": "orders", "patternType": "LITERAL",
"principal": "User:alice", "host": "*", "operation": "READ", "permission": "ALLOW"}`

A file is either JSON lines of such objects, or a JSON document with an
`acls` list (so the embedded controller's `metadata.json` can be used as is).
"""

import json
from pathlib import Path
from typing import Any

from authz.json_lines import json_lines
from authz.model import AclBinding, Operation, PatternType, PermissionType, ResourceType

FIELDS = ("resourceType", "resourceName", "patternType", "principal", "host", "operation", "permission")


class AclFileError(ValueError):
    """The message names the file, the line (or entry) and the problem."""


def binding_from_json(item: Any, where: str) -> AclBinding:
    if not isinstance(item, dict):
        raise AclFileError(f"{where}: expected an object with {', '.join(FIELDS)}")
    missing = [key for key in FIELDS if key not in item]
    if missing:
        raise AclFileError(f"{where}: missing {', '.join(missing)}")
    try:
        binding = AclBinding(
            ResourceType[str(item["resourceType"]).upper()],
            str(item["resourceName"]),
            PatternType[str(item["patternType"]).upper()],
            str(item["principal"]),
            str(item["host"]),
            Operation[str(item["operation"]).upper()],
            PermissionType[str(item["permission"]).upper()],
        )
    except KeyError as exc:
        raise AclFileError(f"{where}: unknown value {exc.args[0]!r}") from None
    problem = binding.validate()
    if problem:
        raise AclFileError(f"{where}: {problem}")
    return binding


def binding_to_json(binding: AclBinding) -> dict[str, str]:
    return {
        "resourceType": binding.resource_type.name,
        "resourceName": binding.resource_name,
        "patternType": binding.pattern_type.name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission": binding.permission.name,
    }


def parse_acls(text: str, source: str = "<acls>") -> list[AclBinding]:
    stripped = text.lstrip()
    if stripped.startswith("{") and '"acls"' in stripped[:4096] and "\n{" not in stripped:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AclFileError(f"{source}: not JSON: {exc}") from None
        entries = document.get("acls") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise AclFileError(f"{source}: expected an 'acls' list")
        return [binding_from_json(item, f"{source} acls[{index}]") for index, item in enumerate(entries)]
    return [binding_from_json(item, where) for where, item in json_lines(text, source, AclFileError)]


def load_acls(path: str | Path) -> list[AclBinding]:
    return parse_acls(Path(path).read_text(encoding="utf-8"), str(path))
