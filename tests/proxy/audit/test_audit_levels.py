"""audit.level and its overrides: which intents keep what the request changes, and the errors of bad settings."""

from pathlib import Path
from typing import Any

import pytest

from envelope.apis import ApiKey
from proxy.audit.pipeline import AuditLevels
from proxy.audit.settings import parse_audit_settings
from proxy.properties import ConfigError, Properties
from tests.proxy.audit.test_request_parameters import CALLER, intent

LISTENERS = {"listeners": "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0"}
ACL = {"creations": [{"resource_type": 2, "resource_name": "*", "resource_pattern_type": 3, "principal": "User:bob", "host": "*", "operation": 2, "permission_type": 3}]}


def _levels(**raw: str) -> AuditLevels:
    props = {**LISTENERS, **{key.replace("__", "."): value for key, value in raw.items()}}
    return parse_audit_settings(Properties(props), Path("audit")).levels


def test_the_default_keeps_the_parameters_everywhere() -> None:
    levels = _levels()
    assert levels.default == "request"
    assert levels.keeps_request("CLIENT", "CreateAcls") and levels.keeps_request("INTERNAL", "AlterConfigs")


def test_the_most_specific_key_applies() -> None:
    levels = AuditLevels(
        "metadata",
        listeners={"INTERNAL": "request"},
        apis={"CreateAcls": "request", "AlterConfigs": "metadata"},
        listener_apis={("INTERNAL", "AlterConfigs"): "request"},
    )
    assert levels.level("CLIENT", "CreateTopics") == "metadata"  # audit.level
    assert levels.level("INTERNAL", "CreateTopics") == "request"  # the listener's
    assert levels.level("CLIENT", "CreateAcls") == "request"  # the API's, on every listener
    assert levels.level("INTERNAL", "AlterConfigs") == "request"  # the listener's for that API
    assert levels.level("CLIENT", "AlterConfigs") == "metadata"
    assert levels.level("internal", "CreateTopics") == "request"  # listener names are matched as Kafka matches them


def test_the_keys_as_an_operator_writes_them() -> None:
    levels = _levels(
        audit__level="METADATA",
        listener__name__internal__audit__level="request",
        audit__level__api__createacls="request",
        listener__name__client__audit__level__api__IncrementalAlterConfigs="request",
    )
    assert levels == AuditLevels(
        "metadata",
        listeners={"INTERNAL": "request"},
        apis={"CreateAcls": "request"},
        listener_apis={("CLIENT", "IncrementalAlterConfigs"): "request"},
    )
    effective = parse_audit_settings(Properties({**LISTENERS, "audit.level.api.CreateAcls": "metadata"}), Path("audit")).effective()
    assert effective["level"] == "request" and effective["level.overrides"] == {"audit.level.api.CreateAcls": "metadata"}


@pytest.mark.parametrize(
    ("raw", "key", "value", "reason"),
    [
        ({"audit.level": "verbose"}, "audit.level", "verbose", "expected one of metadata, request"),
        ({"audit.level.api.CreateTopics": "none"}, "audit.level.api.CreateTopics", "none", "expected one of metadata, request"),
        ({"audit.level.api.CreateTopic": "metadata"}, "audit.level.api.CreateTopic", "metadata", "'CreateTopic' is not an API the proxy forwards (did you mean CreateTopics?)"),
        ({"audit.level.api.Metadata": "metadata"}, "audit.level.api.Metadata", "metadata", "'Metadata' is not an API the proxy forwards"),
        ({"listener.name.extrnal.audit.level": "metadata"}, "listener.name.extrnal.audit.level", "metadata", "no listener EXTRNAL in listeners (CLIENT, INTERNAL)"),
        ({"listener.name.client.audit.level": "all"}, "listener.name.client.audit.level", "all", "expected one of metadata, request"),
        ({"listener.name.client.audit.level.api.Nope": "request"}, "listener.name.client.audit.level.api.Nope", "request", "'Nope' is not an API the proxy forwards"),
    ],
)
def test_a_bad_setting_names_key_value_and_reason(raw: dict[str, str], key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_audit_settings(Properties({**LISTENERS, **raw}), Path("audit"))
    assert (error.value.key, error.value.value) == (key, value)
    assert error.value.reason.startswith(reason), error.value.reason


async def _request_kept(levels: AuditLevels) -> dict[str, Any] | None:
    data, _ = await intent(ApiKey.CREATE_ACLS, 3, ACL, levels=levels)
    request: dict[str, Any] | None = data.get("request")
    return request


async def test_metadata_leaves_the_parameters_out_and_request_keeps_them() -> None:
    assert CALLER.listener == "CLIENT"
    assert await _request_kept(AuditLevels("request")) is not None
    assert await _request_kept(AuditLevels("metadata")) is None
    assert await _request_kept(AuditLevels("request", listeners={"CLIENT": "metadata"})) is None
    assert await _request_kept(AuditLevels("metadata", apis={"CreateAcls": "request"})) is not None
    assert await _request_kept(AuditLevels("metadata", apis={"AlterConfigs": "request"})) is None
    assert await _request_kept(AuditLevels("request", listener_apis={("CLIENT", "CreateAcls"): "metadata"})) is None


async def test_at_metadata_the_intent_is_the_record_it_was() -> None:
    full, _ = await intent(ApiKey.CREATE_ACLS, 3, ACL, levels=AuditLevels("request"))
    bare, _ = await intent(ApiKey.CREATE_ACLS, 3, ACL, levels=AuditLevels("metadata"))
    for data in (full, bare):
        del data["requestId"]
    assert {k: v for k, v in full.items() if k != "request"} == bare
