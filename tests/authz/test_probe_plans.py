"""The probe plans (which dry request asks which question, how its answer reads), named-request cases, and the
replay's questions from audit records: pure, no controller."""

import json
from datetime import UTC

import pytest
from kio.schema.errors import ErrorCode

from authz import AclAuthorizer
from authz.cases import CaseFileError, mismatches, parse_cases
from authz.model import Action, Decision, Operation, ResourceType
from authz.probe_plans import NotProbeable, decide, plan_for_action, plan_for_api
from authz.replay import NEW_ALLOW, NEW_DENIAL, UNCHANGED, compare, questions
from envelope.apis import ApiKey


def test_every_dry_plan_is_marked_dry_and_validate_only_where_the_api_has_it() -> None:
    for operation, kind in [
        (Operation.CREATE, ResourceType.TOPIC),
        (Operation.ALTER, ResourceType.TOPIC),
        (Operation.ALTER_CONFIGS, ResourceType.TOPIC),
        (Operation.ALTER_CONFIGS, ResourceType.CLUSTER),
        (Operation.ALTER, ResourceType.CLUSTER),
    ]:
        plan = plan_for_action(Action(operation, kind, "t"))
        assert not plan.changes
        assert plan.values.get("validate_only", True) is True
        assert plan.asks[-1].operation is operation


@pytest.mark.parametrize(
    ("operation", "kind", "why"),
    [
        (Operation.DELETE, ResourceType.TOPIC, "--allow-changes"),
        (Operation.DESCRIBE, ResourceType.TOPIC, "no dry path"),
        (Operation.CREATE, ResourceType.CLUSTER, "cannot tell"),
        (Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, "Envelope"),
        (Operation.CREATE_TOKENS, ResourceType.USER, "creates a token"),
    ],
)
def test_questions_without_a_dry_path_are_refused_with_the_reason(operation: Operation, kind: ResourceType, why: str) -> None:
    with pytest.raises(NotProbeable, match=why):
        plan_for_action(Action(operation, kind, "x"))


def test_delete_is_sent_only_when_changes_are_allowed() -> None:
    plan = plan_for_action(Action(Operation.DELETE, ResourceType.TOPIC, "x"), allow_changes=True)
    assert plan.changes and plan.api == ApiKey.DELETE_TOPICS


def test_the_answer_reads_as_denied_allowed_or_no_decision() -> None:
    plan = plan_for_api(ApiKey.CREATE_TOPICS, ResourceType.TOPIC, "t")
    assert decide(plan, {ErrorCode.none, ErrorCode.topic_authorization_failed}) is Decision.DENIED
    assert decide(plan, {ErrorCode.topic_already_exists}) is Decision.ALLOWED
    assert decide(plan, {ErrorCode.throttling_quota_exceeded}) is None
    assert decide(plan, set()) is None


def test_a_named_request_case_holds_what_the_request_asks_in_authz_check() -> None:
    text = "\n".join(
        json.dumps(item)
        for item in (
            {"principal": "User:a", "host": "10.0.0.1", "api": "CreateTopics", "resourceName": "t", "expect": "ALLOWED", "tokenAuthenticated": True},
            {"principal": "User:a", "host": "10.0.0.1", "api": "ElectLeaders", "expect": "DENIED"},
        )
    )
    cases = parse_cases(text)
    assert cases[0].context.principal.token_authenticated
    assert [a.resource_type for a in cases[0].asks] == [ResourceType.CLUSTER, ResourceType.TOPIC]
    authorizer = AclAuthorizer(["User:a"])  # a super user: everything allowed
    assert [str(m.case.where) for m in mismatches(authorizer, cases)] == ["<cases>:2"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"principal": "User:a", "host": "10.0.0.1", "api": "Produce", "expect": "DENIED"}, "not an admin request"),
        ({"principal": "User:a", "host": "10.0.0.1", "api": "CreateTopics", "expect": "DENIED", "tokenAuthenticated": "yes"}, "tokenAuthenticated"),
        ({"principal": "User:a", "host": "10.0.0.1", "expect": "DENIED"}, "missing"),
    ],
)
def test_a_bad_case_names_its_line(line: dict[str, object], message: str) -> None:
    with pytest.raises(CaseFileError, match=f"<cases>:1: .*{message}"):
        parse_cases(json.dumps(line))


def _outcome(principal: str, method: str, name: str, code: int, time: str = "2026-01-01T00:00:00.000Z") -> tuple[str, dict[str, object]]:
    errors = [{"resource": name, "errorCode": code, "errorName": "", "message": None}] if code else []
    return (
        "f:1",
        {
            "type": "io.github.kafka-envelope-proxy.request",
            "time": time,
            "data": {
                "stage": "outcome",
                "requestId": "r",
                "methodName": method,
                "authenticationInfo": {"principal": principal, "listener": "CLIENT", "securityProtocol": "SASL_PLAINTEXT"},
                "requestMetadata": {"clientAddress": "10.0.0.1"},
                "resources": [{"type": "TOPIC", "name": name, "patternType": "LITERAL", "operation": "CREATE"}],
                "result": {"status": "FAILURE" if code else "SUCCESS", "errorCode": 0, "errors": errors},
            },
        },
    )


def test_replay_asks_each_question_once_with_productions_decision_and_skips_probes() -> None:
    records = [
        _outcome("User:a", "kafka.CreateTopics", "t", 0),
        _outcome("User:a", "kafka.CreateTopics", "t", 0),
        _outcome("User:b", "kafka.CreateTopics", "t", ErrorCode.topic_authorization_failed),
        _outcome("User:c", "kafka.CreateTopics", "t", 0, time="2020-01-01T00:00:00.000Z"),
    ]
    probe = _outcome("User:d", "kafka.CreateTopics", "t", 0)
    probe[1]["data"]["probe"] = {"command": "authz probe", "case": "x:1"}  # type: ignore[index]
    from datetime import datetime

    asked = questions([*records, probe], datetime(2025, 1, 1, tzinfo=UTC), None)
    assert [(str(q.principal), q.production, q.seen) for q in asked] == [("User:a", Decision.ALLOWED, 2), ("User:b", Decision.DENIED, 1)]
    assert all(q.plan is not None and q.plan.api == ApiKey.CREATE_TOPICS for q in asked)
    assert compare(Decision.ALLOWED, Decision.DENIED) == NEW_DENIAL
    assert compare(Decision.DENIED, Decision.ALLOWED) == NEW_ALLOW
    assert compare(Decision.DENIED, Decision.DENIED) == UNCHANGED
