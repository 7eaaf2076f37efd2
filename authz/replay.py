"""What the what-if replay asks again: the forwarded requests of audit records, each resource's question and what
production decided for it.

Pure: records in (dicts, as the audit files hold them), questions out; `envelope-proxy authz replay` asks each
question of a candidate controller and `compare` sets the answers beside production's. A question is asked once
however often the workload asked it (`Question.seen` counts). The listener cannot be replayed: an Envelope
carries no listener, so the controller sees its own, as it did in production.
"""

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from authz.model import Action, Decision, Operation, ResourceType
from authz.probe_plans import NotProbeable, ProbePlan, api_by_name, plan_for_action, plan_for_api
from envelope.apis import ApiKey
from envelope.principal import Principal

REQUEST_TYPE = "io.github.kafka-envelope-proxy.request"
DENIALS = frozenset({ErrorCode.topic_authorization_failed, ErrorCode.group_authorization_failed, ErrorCode.cluster_authorization_failed})
"""The codes by which a controller says its authorizer refused a resource."""
ANSWERED = ("SUCCESS", "FAILURE")
"""Outcome statuses with a controller's decision in them (ERROR: no answer, nothing decided)."""

NEW_DENIAL, NEW_ALLOW, UNCHANGED, NOT_ASKED = "NEW DENIAL", "NEW ALLOW", "UNCHANGED", "NOT ASKED"


class ReplayInputError(ValueError):
    """An audit record or a time that cannot be read: the message names where."""


@dataclass
class Question:
    principal: Principal
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    listener: str
    security_protocol: str
    method: str
    resource: Action
    production: Decision
    plan: ProbePlan | None
    refused: str | None
    """Why the question has no dry path (then `plan` is None)."""
    first: str
    """The request id of the first record that asked it."""
    seen: int = 1
    times: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        r = self.resource
        return (str(self.principal), str(self.address), self.method, r.operation.name, r.resource_type.name, r.resource_name)


def parse_time(text: str, what: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ReplayInputError(f"{what} {text!r} is not an ISO 8601 time (2026-01-31T12:00:00Z)") from None


def _production(data: dict[str, Any], name: str) -> Decision:
    result = data["result"]
    if result.get("errorCode") in DENIALS:
        return Decision.DENIED
    denied = any(row.get("resource") == name and row.get("errorCode") in DENIALS for row in result.get("errors") or [])
    return Decision.DENIED if denied else Decision.ALLOWED


def _plan(api: ApiKey | None, action: Action) -> tuple[ProbePlan | None, str | None]:
    try:
        if api is not None:
            try:
                return plan_for_api(api, action.resource_type, action.resource_name), None
            except NotProbeable:
                pass  # no dry form of the request itself: ask its question by another request, if one asks it first
        return plan_for_action(action), None
    except NotProbeable as exc:
        return None, str(exc)


def _questions_of(record: dict[str, Any], where: str) -> list[Question]:
    data = record["data"]
    info, meta = data["authenticationInfo"], data["requestMetadata"]
    try:
        principal = Principal.parse(str(info["principal"]))
        address = ipaddress.ip_address(str(meta["clientAddress"]))
        resources = [
            Action(Operation[r["operation"]], ResourceType[r["type"]], str(r["name"])) for r in data.get("resources") or []
        ]
    except (KeyError, ValueError) as exc:
        raise ReplayInputError(f"{where}: cannot read the request's principal, address or resources: {exc}") from None
    method = str(data["methodName"])
    api = api_by_name(method)
    questions = []
    for action in resources:
        plan, refused = _plan(api, action)
        questions.append(
            Question(
                principal,
                address,
                str(info.get("listener")),
                str(info.get("securityProtocol")),
                method,
                action,
                _production(data, action.resource_name),
                plan,
                refused,
                str(data.get("requestId")),
                times=[str(record.get("time"))],
            )
        )
    return questions


def questions(records: Iterable[tuple[str, dict[str, Any]]], since: datetime | None, until: datetime | None) -> list[Question]:
    """Every forwarded, answered request's questions in [since, until), once each, in the order first asked.
    Probes (records marked `data.probe`) are not replayed."""
    found: dict[tuple[str, str, str, str, str, str], Question] = {}
    for where, record in records:
        data = record.get("data")
        if record.get("type") != REQUEST_TYPE or not isinstance(data, dict) or data.get("stage") != "outcome" or "probe" in data:
            continue
        if (data.get("result") or {}).get("status") not in ANSWERED:
            continue
        when = parse_time(str(record.get("time")), f"{where}: time")
        if (since is not None and when < since) or (until is not None and when >= until):
            continue
        for question in _questions_of(record, where):
            known = found.get(question.key)
            if known is None:
                found[question.key] = question
            else:
                known.seen += 1
                known.times.append(question.times[0])
    return list(found.values())


def compare(production: Decision, candidate: Decision | None) -> str:
    if candidate is None:
        return NOT_ASKED
    if candidate is production:
        return UNCHANGED
    return NEW_DENIAL if candidate is Decision.DENIED else NEW_ALLOW
