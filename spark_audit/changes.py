"""What a sensitive change changed, in words: an intent's ``data.request`` (JSON text) as lines of text.

Pure Python on the driver, for the few rows the page and the text report show. The shapes are those of
docs/audit-schema.md, "What a change changes" (``proxy/audit/record.schema.json`` ``$defs/parameters``):

- CreateAcls: ``ALLOW User:bob ALL on topic:* (LITERAL) from host *``, one line per binding;
  DeleteAcls: ``delete ACLs matching ANY principal ... on topic:orders (MATCH) ...`` (a null field matches any);
- AlterConfigs, IncrementalAlterConfigs: ``topic:orders: SET retention.ms = 86400000``; a value the proxy hid
  (``sensitive``, ``[hidden]``) reads :data:`REDACTED`, never a value; a DELETE has none;
- AlterUserScramCredentials: ``set SCRAM-SHA-256 credential of alice (8192 iterations)``, ``delete ...``;
- AlterClientQuotas: ``user=alice: SET producer_byte_rate = 1024``, ``... REMOVE ...``;
- ``validateOnly: true`` adds ``validate only: nothing was changed``; ``{"unreadable": why}`` says so.

Anything else (another API, a field this module does not know) is shown as ``key=value`` pairs rather than
dropped. A record without parameters shows its resources instead (``topic:orders ALTER``), saying so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

#: What a hidden value is shown as.
REDACTED = "(redacted)"
#: The value the proxy writes in place of a sensitive config's (Kafka's Password.HIDDEN).
HIDDEN_VALUES = frozenset({"[hidden]", "[redacted]"})
#: At most this many lines per change; the rest is counted.
MAX_LINES = 12
#: Longest value shown; longer ones are cut.
MAX_VALUE = 120

NO_PARAMETERS = "the records name the resources, not what changed"
VALIDATE_ONLY = "validate only: nothing was changed"


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _any(value: Any, what: str) -> str:
    return f"any {what}" if value is None else str(value)


def _resource(kind: Any, name: Any, *, matching: bool = False) -> str:
    kind_text = "any" if kind is None or (matching and kind == "ANY") else str(kind).lower()
    name_text = ("any" if matching else "?") if name is None else str(name)
    return f"{kind_text}:{name_text}"


def acl_line(acl: Mapping[str, Any], *, filter_: bool = False) -> str:
    """``ALLOW User:bob ALL on topic:* (LITERAL) from host *``: permission, principal, operation, resource pattern, host.

    A DeleteAcls filter (``filter_``) says ``delete ACLs matching`` and reads a null field as "any"."""
    permission, pattern = acl.get("permissionType"), acl.get("patternType")
    parts = [
        "delete ACLs matching" if filter_ else "",
        str(permission) if permission is not None else "",
        _any(acl.get("principal"), "principal") if filter_ else str(acl.get("principal")),
        str(acl.get("operation")),
        "on " + _resource(acl.get("resourceType"), acl.get("resourceName"), matching=filter_),
        f"({pattern})" if pattern is not None else "",
        "from host " + (_any(acl.get("host"), "host") if filter_ else str(acl.get("host"))),
    ]
    return " ".join(p for p in parts if p)


def _hidden(config: Mapping[str, Any]) -> bool:
    value = config.get("value")
    return config.get("sensitive") is True or (isinstance(value, str) and value.strip().lower() in HIDDEN_VALUES)


def config_line(config: Mapping[str, Any], resource: str | None = None) -> str:
    """``topic:orders: SET retention.ms = 86400000``; a hidden value as :data:`REDACTED`; a DELETE without a value."""
    operation = str(config.get("operation") or "SET")
    head = f"{resource}: " if resource else ""
    line = f"{head}{operation} {config.get('name')}"
    if operation == "DELETE":
        return line
    if _hidden(config) and config.get("value") is not None:
        return f"{line} = {REDACTED}"
    value = config.get("value")
    return f"{line} = {'null' if value is None else _text(value)}"


def _configs(request: Mapping[str, Any]) -> Iterator[str]:
    for entry in request.get("resources") or ():
        if not isinstance(entry, Mapping):
            continue
        resource = _resource(entry.get("resourceType"), entry.get("resourceName"))
        configs = entry.get("configs") or []
        if not configs:
            yield f"{resource}: (no configs)"
        for config in configs:
            yield config_line(config, resource) if isinstance(config, Mapping) else f"{resource}: {_text(config)}"


def _scram(request: Mapping[str, Any]) -> Iterator[str]:
    for entry in request.get("upsertions") or ():
        iterations = entry.get("iterations")
        tail = f" ({iterations} iterations)" if iterations is not None else ""
        yield f"set {entry.get('mechanism')} credential of {entry.get('name')}{tail}"
    for entry in request.get("deletions") or ():
        yield f"delete {entry.get('mechanism')} credential of {entry.get('name')}"


def _entity(entity: Any) -> str:
    if not isinstance(entity, list) or not entity:
        return "?"
    parts = []
    for part in entity:
        name = part.get("entityName") if isinstance(part, Mapping) else None
        kind = part.get("entityType") if isinstance(part, Mapping) else None
        parts.append(f"{kind}={'(default)' if name is None else name}")
    return ",".join(parts)


def _quotas(request: Mapping[str, Any]) -> Iterator[str]:
    for entry in request.get("entries") or ():
        who = _entity(entry.get("entity"))
        for op in entry.get("ops") or ():
            if op.get("remove"):
                yield f"{who}: REMOVE {op.get('key')}"
            else:
                yield f"{who}: SET {op.get('key')} = {_text(op.get('value'))}"


def _pairs(value: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(value, Mapping):
        for key in value:
            yield from _pairs(value[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for item in value:
            yield ", ".join(_pairs(item, prefix))
    else:
        yield f"{prefix}={_text(value)}" if prefix else _text(value)


def _generic(request: Mapping[str, Any]) -> Iterator[str]:
    """Anything this module has no words for: each top-level list entry on a line of its own, the rest as pairs."""
    scalars = {k: v for k, v in request.items() if not isinstance(v, list) and k != "validateOnly"}
    if scalars:
        yield ", ".join(_pairs(scalars))
    for key, value in request.items():
        if isinstance(value, list):
            if not value:
                yield f"{key}: (none)"
            for item in value:
                yield f"{key}: " + (", ".join(_pairs(item)) if isinstance(item, Mapping) else _text(item))


def lines(method: str | None, request: Any) -> list[str]:
    """One line per binding, config, credential or quota of ``request`` (the parsed ``data.request``)."""
    if not isinstance(request, Mapping):
        return [_text(request)]
    if isinstance(request.get("unreadable"), str):
        return [f"the proxy could not read the parameters: {request['unreadable']}"]
    name = (method or "").removeprefix("kafka.")
    if name == "CreateAcls" and isinstance(request.get("creations"), list):
        found = [acl_line(acl) for acl in request["creations"] if isinstance(acl, Mapping)]
    elif name == "DeleteAcls" and isinstance(request.get("filters"), list):
        found = [acl_line(acl, filter_=True) for acl in request["filters"] if isinstance(acl, Mapping)]
    elif name in ("AlterConfigs", "IncrementalAlterConfigs") and isinstance(request.get("resources"), list):
        found = list(_configs(request))
    elif name == "AlterUserScramCredentials":
        found = list(_scram(request))
    elif name == "AlterClientQuotas" and isinstance(request.get("entries"), list):
        found = list(_quotas(request))
    else:
        found = list(_generic(request))
    if request.get("validateOnly") is True:
        found.append(VALIDATE_ONLY)
    return found


def describe(method: str | None, parameters: str | None, resources: str | None) -> str:
    """What a change changed, one line per binding or entry (at most :data:`MAX_LINES`), joined by newlines.

    ``parameters`` is ``data.request`` as JSON text (null: the records carry none, and ``resources`` is shown)."""
    if parameters is None:
        return f"{resources or '(no resources)'}\n({NO_PARAMETERS})"
    try:
        value = json.loads(parameters)
    except ValueError:
        return _text(parameters)
    found = [line for line in lines(method, value) if line]
    if not found:
        return f"{resources or '(no resources)'}\n(no entries in the request)"
    if len(found) > MAX_LINES:
        found = [*found[:MAX_LINES], f"... {len(found) - MAX_LINES} more"]
    return "\n".join(found)
