"""Authorizer test cases: who asks for what, from where, and what the answer must be.

A cases file holds one JSON object per line:

`{"principal": "User:alice", "host": "10.0.0.7", "operation": "CREATE",
"resourceType": "TOPIC", "resourceName": "orders", "forwardedBy": "User:proxy",
"listener": "CLIENT", "expect": "DENIED"}`

`forwardedBy` (default null: a direct request), `listener` (default
`CLIENT`), `securityProtocol` (default `SASL_PLAINTEXT`), `saslMechanism` and
`clientId` are optional. Evaluating them against an authorizer gives every
mismatch, explained when the authorizer can say why.
"""

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from authz.json_lines import json_lines
from authz.model import Action, Decision, Operation, RequestContext, ResourceType
from authz.plugin import Authorizer
from envelope.principal import Principal

REQUIRED = ("principal", "host", "operation", "resourceType", "resourceName", "expect")


class CaseFileError(ValueError):
    """The message names the file, the line and the problem."""


@dataclass(frozen=True)
class Case:
    where: str
    context: RequestContext
    action: Action
    expected: Decision

    def describe(self) -> str:
        forwarded = f" forwarded by {self.context.forwarding_principal}" if self.context.forwarding_principal else ""
        return (
            f"{self.context.principal} {self.action.operation.name} {self.action.resource_type.name}:{self.action.resource_name}"
            f" from {self.context.client_address} on {self.context.listener}{forwarded}"
        )


@dataclass(frozen=True)
class Mismatch:
    case: Case
    actual: Decision
    why: str | None

    def __str__(self) -> str:
        because = f" ({self.why})" if self.why else ""
        return f"{self.case.where}: {self.case.describe()}: expected {self.case.expected.name}, got {self.actual.name}{because}"


def _enum(kind: Any, value: Any, field: str, where: str) -> Any:
    try:
        return kind[str(value).upper()]
    except KeyError:
        raise CaseFileError(f"{where}: {field} {value!r} is not one of {', '.join(m.name for m in kind)}") from None


def _principal(value: Any, field: str, where: str) -> Principal:
    try:
        return Principal.parse(str(value))
    except ValueError as exc:
        raise CaseFileError(f"{where}: {field}: {exc}") from None


def case_from_json(item: Any, where: str) -> Case:
    if not isinstance(item, dict):
        raise CaseFileError(f"{where}: expected an object with {', '.join(REQUIRED)}")
    missing = [key for key in REQUIRED if key not in item]
    if missing:
        raise CaseFileError(f"{where}: missing {', '.join(missing)}")
    try:
        address = ipaddress.ip_address(str(item["host"]))
    except ValueError:
        raise CaseFileError(f"{where}: host {item['host']!r} is not an IP address") from None
    forwarded_by = item.get("forwardedBy")
    context = RequestContext(
        principal=_principal(item["principal"], "principal", where),
        client_address=address,
        listener=str(item.get("listener", "CLIENT")).upper(),
        security_protocol=str(item.get("securityProtocol", "SASL_PLAINTEXT")).upper(),
        sasl_mechanism=item.get("saslMechanism"),
        client_id=item.get("clientId"),
        forwarding_principal=_principal(forwarded_by, "forwardedBy", where) if forwarded_by else None,
    )
    action = Action(
        _enum(Operation, item["operation"], "operation", where),
        _enum(ResourceType, item["resourceType"], "resourceType", where),
        str(item["resourceName"]),
    )
    return Case(where, context, action, _enum(Decision, item["expect"], "expect", where))


def parse_cases(text: str, source: str = "<cases>") -> list[Case]:
    return [case_from_json(item, where) for where, item in json_lines(text, source, CaseFileError)]


def load_cases(path: str | Path) -> list[Case]:
    return parse_cases(Path(path).read_text(encoding="utf-8"), str(path))


def mismatches(authorizer: Authorizer, cases: Iterable[Case]) -> list[Mismatch]:
    """Every case the authorizer decides otherwise, with the deciding rule when it can explain itself."""
    found = []
    for case in cases:
        (actual,) = authorizer.authorize(case.context, [case.action])
        if actual is not case.expected:
            explain = getattr(authorizer, "explain", None)
            why = str(explain(case.context, case.action)) if callable(explain) else None
            found.append(Mismatch(case, actual, why))
    return found
