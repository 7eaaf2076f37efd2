"""Authorizer test cases: who asks for what, from where, and what the answer must be.

A cases file holds one JSON object per line:

`{"principal": "User:alice", "host": "10.0.0.7", "operation": "CREATE",
"resourceType": "TOPIC", "resourceName": "orders", "forwardedBy": "User:proxy",
"listener": "CLIENT", "expect": "DENIED"}`

`forwardedBy` (default null: a direct request), `listener` (default
`CLIENT`), `securityProtocol` (default `SASL_PLAINTEXT`), `saslMechanism` and
`clientId` are optional. Evaluating them against an authorizer gives every
mismatch, explained when the authorizer can say why.

`tokenAuthenticated` (default false) marks a principal that logged in with a
delegation token. Instead of an operation, a case may name an admin request,
`"api": "CreateTopics"` (with the `resourceName` it is about, and for config
requests the `resourceType`): it then holds what that request asks, in the
controller's order (authz/probe_plans.py), and `envelope-proxy authz probe`
sends that request's dry form.
"""

import dataclasses
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from authz.json_lines import json_lines
from authz.model import CLUSTER_NAME, Action, Decision, Operation, RequestContext, ResourceType
from authz.plugin import Authorizer
from authz.probe_plans import PROBED_APIS, NotProbeable, api_by_name, plan_for_api
from envelope.apis import ApiKey
from envelope.principal import Principal

REQUIRED = ("principal", "host", "operation", "resourceType", "resourceName", "expect")
REQUIRED_WITH_API = ("principal", "host", "api", "expect")


class CaseFileError(ValueError):
    """The message names the file, the line and the problem."""


@dataclass(frozen=True)
class Case:
    where: str
    context: RequestContext
    action: Action
    expected: Decision
    api: ApiKey | None = None
    """The admin request the case names, when it names one (then `action` is the last it asks: the one about the named resource)."""

    @property
    def asks(self) -> tuple[Action, ...]:
        """Every action the case's question needs: alternatives for a named request (any allowed decides)."""
        if self.api is None:
            return (self.action,)
        try:
            return plan_for_api(self.api, self.action.resource_type, self.action.resource_name, allow_changes=True).asks
        except NotProbeable:
            return (self.action,)

    def describe(self) -> str:
        forwarded = f" forwarded by {self.context.forwarding_principal}" if self.context.forwarding_principal else ""
        token = " (token)" if self.context.principal.token_authenticated else ""
        if self.api is not None:
            return f"{self.context.principal}{token} {self.api.name} {self.action.resource_name} from {self.context.client_address}{forwarded}"
        return (
            f"{self.context.principal}{token} {self.action.operation.name} {self.action.resource_type.name}:{self.action.resource_name}"
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


def _principal(value: Any, field: str, where: str, *, token: bool = False) -> Principal:
    try:
        parsed = Principal.parse(str(value))
    except ValueError as exc:
        raise CaseFileError(f"{where}: {field}: {exc}") from None
    return dataclasses.replace(parsed, token_authenticated=True) if token else parsed


def _named_api(item: dict[str, Any], where: str) -> tuple[ApiKey, Action]:
    api = api_by_name(str(item["api"]))
    if api is None or api not in PROBED_APIS:
        names = ", ".join(sorted(key.name for key in PROBED_APIS))
        raise CaseFileError(f"{where}: api {item['api']!r} is not an admin request a case may name ({names})")
    resource_type = _enum(ResourceType, item.get("resourceType", "TOPIC"), "resourceType", where)
    name = str(item.get("resourceName", CLUSTER_NAME))
    try:
        # the last action asked is the one about the named resource (CreateTopics asks CLUSTER first, then the TOPIC)
        about = plan_for_api(api, resource_type, name, allow_changes=True).asks[-1]
    except NotProbeable as exc:
        raise CaseFileError(f"{where}: {exc}") from None
    return api, about


def case_from_json(item: Any, where: str) -> Case:
    if not isinstance(item, dict):
        raise CaseFileError(f"{where}: expected an object with {', '.join(REQUIRED)}")
    missing = [key for key in (REQUIRED_WITH_API if "api" in item else REQUIRED) if key not in item]
    if missing:
        raise CaseFileError(f"{where}: missing {', '.join(missing)}")
    try:
        address = ipaddress.ip_address(str(item["host"]))
    except ValueError:
        raise CaseFileError(f"{where}: host {item['host']!r} is not an IP address") from None
    forwarded_by = item.get("forwardedBy")
    token = item.get("tokenAuthenticated", False)
    if not isinstance(token, bool):
        raise CaseFileError(f"{where}: tokenAuthenticated {token!r} is not true or false")
    context = RequestContext(
        principal=_principal(item["principal"], "principal", where, token=token),
        client_address=address,
        listener=str(item.get("listener", "CLIENT")).upper(),
        security_protocol=str(item.get("securityProtocol", "SASL_PLAINTEXT")).upper(),
        sasl_mechanism=item.get("saslMechanism"),
        client_id=item.get("clientId"),
        forwarding_principal=_principal(forwarded_by, "forwardedBy", where) if forwarded_by else None,
    )
    expected = _enum(Decision, item["expect"], "expect", where)
    if "api" in item:
        api, about = _named_api(item, where)
        return Case(where, context, about, expected, api)
    action = Action(
        _enum(Operation, item["operation"], "operation", where),
        _enum(ResourceType, item["resourceType"], "resourceType", where),
        str(item["resourceName"]),
    )
    return Case(where, context, action, expected)


def parse_cases(text: str, source: str = "<cases>") -> list[Case]:
    return [case_from_json(item, where) for where, item in json_lines(text, source, CaseFileError)]


def load_cases(path: str | Path) -> list[Case]:
    return parse_cases(Path(path).read_text(encoding="utf-8"), str(path))


def mismatches(authorizer: Authorizer, cases: Iterable[Case]) -> list[Mismatch]:
    """Every case the authorizer decides otherwise, with the deciding rule when it can explain itself."""
    found = []
    for case in cases:
        decisions = authorizer.authorize(case.context, list(case.asks))
        # one action, or a named request's alternatives (CreateTopics: CREATE on CLUSTER, else on the TOPIC)
        actual = Decision.ALLOWED if Decision.ALLOWED in decisions else Decision.DENIED
        if actual is not case.expected:
            explain = getattr(authorizer, "explain", None)
            why = str(explain(case.context, case.action)) if callable(explain) else None
            found.append(Mismatch(case, actual, why))
    return found
