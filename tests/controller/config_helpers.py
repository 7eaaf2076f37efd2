"""What the config tests share: a controller's handlers on a fresh image, requests built by kio, and a selective authorizer."""

import ipaddress
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from authz import Action, Decision, Operation, RequestContext, ResourceType
from controller.handlers import Handlers
from controller.image import MetadataImage, Topic
from controller.leadership import Leadership
from controller.quorum import format_image
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import request_schema
from envelope.principal import Principal

CONTEXT = RequestContext(
    principal=Principal("User", "admin"),
    client_address=ipaddress.ip_address("127.0.0.1"),
    listener="CONTROLLER",
    security_protocol="PLAINTEXT",
)
NODE_ID = 1


@dataclass
class Denying:
    """Allows everything except the (operation, resource type, name) it was given."""

    denied: set[tuple[Operation, ResourceType, str]] = field(default_factory=set)

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        return [
            Decision.DENIED if (a.operation, a.resource_type, a.resource_name) in self.denied else Decision.ALLOWED for a in actions
        ]


@dataclass
class Controller:
    image: MetadataImage
    handlers: Handlers

    def call(self, api_key: int, version: int, values: dict[str, Any], ctx: RequestContext = CONTEXT) -> dict[str, Any]:
        body = build_entity(request_schema(api_key, version), values)
        answer: dict[str, Any] = self.handlers.by_key[api_key](body, ctx)
        return answer

    def describe(self, *resources: tuple[int, str], synonyms: bool = True, documentation: bool = True, keys: list[str] | None = None) -> list[dict[str, Any]]:
        values = {
            "resources": [{"resource_type": t, "resource_name": n, "configuration_keys": keys} for t, n in resources],
            "include_synonyms": synonyms,
            "include_documentation": documentation,
        }
        results: list[dict[str, Any]] = self.call(ApiKey.DESCRIBE_CONFIGS, 4, values)["results"]
        return results

    def configs(self, kind: int, name: str, **options: Any) -> dict[str, dict[str, Any]]:
        (result,) = self.describe((kind, name), **options)
        assert result["error_code"] == 0, result
        return {entry["name"]: entry for entry in result["configs"]}

    def incremental(self, *resources: tuple[int, str, list[tuple[str, int, str | None]]], validate_only: bool = False, ctx: RequestContext = CONTEXT) -> list[tuple[int, str, int, str | None]]:
        values = {
            "resources": [
                {"resource_type": t, "resource_name": n, "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in configs]}
                for t, n, configs in resources
            ],
            "validate_only": validate_only,
        }
        return _outcomes(self.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, values, ctx))

    def legacy(self, *resources: tuple[int, str, dict[str, str | None]], validate_only: bool = False, ctx: RequestContext = CONTEXT) -> list[tuple[int, str, int, str | None]]:
        values = {
            "resources": [
                {"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in configs.items()]}
                for t, n, configs in resources
            ],
            "validate_only": validate_only,
        }
        return _outcomes(self.call(ApiKey.ALTER_CONFIGS, 2, values, ctx))

    def add_topic(self, name: str, configs: dict[str, str] | None = None) -> None:
        self.image.topics[name] = Topic(name, uuid.uuid4(), 1, 1, dict(configs or {}))


def _outcomes(answer: dict[str, Any]) -> list[tuple[int, str, int, str | None]]:
    return [(int(r["resource_type"]), str(r["resource_name"]), int(r["error_code"]), r["error_message"]) for r in answer["responses"]]


def controller(static: dict[str, str] | None = None, *, authorizer: Any = None, fresh: bool = True) -> Controller:
    """A controller (node 1, brokers 1..1) whose static config is `static`, formatted as Kafka 4.3.1 formats a cluster."""
    image = MetadataImage()
    static = {"node.id": str(NODE_ID), "process.roles": "controller", **(static or {})}
    if fresh:
        format_image(image, static, static_voters=False)
    handlers = Handlers(
        image,
        authorizer or Denying(),
        leadership=Leadership(NODE_ID, active_id=NODE_ID),
        default_partitions=1,
        default_replication_factor=1,
        broker_count=1,
        static_config=static,
    )
    return Controller(image, handlers)
