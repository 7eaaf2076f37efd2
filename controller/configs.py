"""Config changes: AlterConfigs (33) and IncrementalAlterConfigs (44) as Kafka 4.3's controller decides them.

ControllerApis sorts the request first: an unknown resource type is answered
UNSUPPORTED_VERSION, a resource named twice INVALID_REQUEST ("Duplicate
resource.", once, whatever the count), BROKER_LOGGER changes are applied to
the node's own loggers (IncrementalAlterConfigs only, gated on CLUSTER_ACTION)
and the rest are authorized (ALTER_CONFIGS on the topic, the group, or the
cluster for brokers and client metrics). ConfigurationControlManager then
works out each resource's new configs and validates them: the KIP-966 rules
for min.insync.replicas while ELR is on, the value size, the resource's
validator (LogConfig for topics, GroupConfig, ClientMetricsConfigs; only the
name for brokers, whose values the forwarding broker has checked), and last
whether the topic or broker exists. The answer lists the sorting errors, then
the denials, then the controller's results, then the logger results; Kafka's
own order inside each part follows hash maps keyed by an enum's identity hash,
which differs from run to run, so ours keeps the request's order there.
"""

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext, ResourceType
from authz.model import CLUSTER_NAME
from controller.authorize import allowed
from controller.broker_loggers import LOG4J_TO_PYTHON, ROOT_LOGGER, check_logger_change
from controller.changes import change_of
from controller.config_defs import kafka_configs
from controller.config_resources import ERROR_MESSAGES, ConfigProblem, alter_response
from controller.config_state import ConfigState
from controller.config_validation import validate_resource_configs
from controller.image import MetadataImage
from controller.java_order import string_map_order
from controller.java_values import java_integer
from envelope.config_resources import (
    CONFIG_BROKER,
    CONFIG_BROKER_LOGGER,
    CONFIG_CLIENT_METRICS,
    CONFIG_GROUP,
    CONFIG_RESOURCE_TYPE_NAMES,
    CONFIG_RESOURCE_TYPES,
    CONFIG_TOPIC,
    OP_APPEND,
    OP_DELETE,
    OP_NAMES,
    OP_SET,
    OP_SUBTRACT,
)
from envelope.java_types import SHORT_MAX

log = logging.getLogger(__name__)

MIN_INSYNC_REPLICAS = "min.insync.replicas"
CORDONED_LOG_DIRS = "cordoned.log.dirs"
ELR_FEATURE = "eligible.leader.replicas.version"
METADATA_VERSION = "metadata.version"
CORDONED_LOG_DIRS_LEVEL = 30  # IBP_4_3_IV0
MAX_VALUE_SIZE = SHORT_MAX

# One resource's change: each config name's (operation, value); a name given twice keeps its last
Changes = dict[str, tuple[int, str | None]]
Key = tuple[int, str]


class WholeRequestFailure(Exception):
    """What makes Kafka's controller fail the whole request (a NullPointerException there): UNKNOWN_SERVER_ERROR for all."""


@dataclass
class Record:
    """A ConfigRecord: one config of one resource set to a value, or removed (None)."""

    name: str
    value: str | None


def java_split(text: str) -> list[str]:
    """String.split(","): trailing empty strings dropped, and "" gives [""]."""
    if text == "":
        return [""]
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class ConfigHandlers:
    def __init__(
        self,
        image: MetadataImage,
        authorizer: Authorizer,
        *,
        node_id: int = 1,
        static_config: Mapping[str, str] | None = None,
        broker_ids: list[int] | None = None,
        controller_ids: list[int] | None = None,
    ) -> None:
        self.image = image
        self.authorizer = authorizer
        self.node_id = node_id
        self.static_config = dict(static_config or {})
        self.broker_ids = list(broker_ids or [node_id])
        self.controller_ids = list(controller_ids or [node_id])

    # ---------------------------------------------------------------- the two requests

    def incremental_alter_configs(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        def changes_of(resource: Any) -> Changes:
            changes: Changes = {}
            for config in resource.configs:
                changes[str(config.name)] = (int(config.config_operation), config.value)
            return changes

        return self._alter("IncrementalAlterConfigs", body, ctx, changes_of, incremental=True)

    def alter_configs(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        def changes_of(resource: Any) -> Changes:
            return {str(config.name): (OP_SET, config.value) for config in resource.configs}

        return self._alter("AlterConfigs", body, ctx, changes_of, incremental=False)

    def _alter(self, api: str, body: Any, ctx: RequestContext, changes_of: Callable[[Any], Changes], *, incremental: bool) -> dict[str, Any]:
        validate_only = bool(body.validate_only)
        forwarded = ctx.forwarding_principal is not None
        sorted_out: list[dict[str, Any]] = []
        loggers: list[dict[str, Any]] = []
        pending: dict[Key, Changes] = {}
        duplicates: set[Key] = set()
        for resource in body.resources:
            kind, name = int(resource.resource_type), str(resource.resource_name)
            key = (kind, name)
            if kind == CONFIG_BROKER_LOGGER and incremental:
                loggers.append(self._broker_logger(resource, ctx, validate_only))
            elif kind not in CONFIG_RESOURCE_TYPES:
                sorted_out.append(alter_response(ErrorCode.unsupported_version, f"Unknown resource type {kind}.", kind, name))
            elif key in duplicates:
                continue
            elif key in pending:
                duplicates.add(key)
                del pending[key]
                sorted_out.append(alter_response(ErrorCode.invalid_request, "Duplicate resource.", kind, name))
            else:
                pending[key] = changes_of(resource)
        denied: list[dict[str, Any]] = []
        for key in list(pending):
            problem = self._authorize(key, ctx)
            if problem is not None:
                denied.append(alter_response(problem.code, problem.message, *key))
                del pending[key]
        state = ConfigState(self.image, self.static_config, self.node_id)
        try:
            outcomes = {key: self._outcome(key, changes, state, incremental, forwarded) for key, changes in pending.items()}
        except WholeRequestFailure:
            every = [alter_response(ErrorCode.unknown_server_error, None, int(r.resource_type), str(r.resource_name)) for r in body.resources]
            return {"throttle_time": 0, "responses": every}
        results = []
        for key, (code, message, updated) in outcomes.items():
            if code == ErrorCode.none and not validate_only and updated is not None:
                self._store(key, updated)
            results.append(alter_response(code, message, *key))
        answer = sorted_out + denied + results + loggers
        for item in answer:
            self.image.record(change_of(api, ctx, f"config:{item['resource_type']}:{item['resource_name']}", int(item["error_code"])))
        return {"throttle_time": 0, "responses": answer}

    def _authorize(self, key: Key, ctx: RequestContext) -> ConfigProblem | None:
        """ControllerApis.authorizeAlterResource."""
        kind, name = key
        if kind == CONFIG_TOPIC:
            ok, code = allowed(self.authorizer, ctx, Operation.ALTER_CONFIGS, ResourceType.TOPIC, name), ErrorCode.topic_authorization_failed
        elif kind == CONFIG_GROUP:
            ok, code = allowed(self.authorizer, ctx, Operation.ALTER_CONFIGS, ResourceType.GROUP, name), ErrorCode.group_authorization_failed
        elif kind in (CONFIG_BROKER, CONFIG_CLIENT_METRICS):
            ok = allowed(self.authorizer, ctx, Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
            code = ErrorCode.cluster_authorization_failed
        else:
            return ConfigProblem(ErrorCode.invalid_request, f"Unexpected resource type {CONFIG_RESOURCE_TYPE_NAMES.get(kind, kind)}.")
        return None if ok else ConfigProblem(code, ERROR_MESSAGES[code])

    # ---------------------------------------------------------------- one resource

    def _current(self, key: Key) -> dict[str, str]:
        kind, name = key
        store = {CONFIG_TOPIC: None, CONFIG_BROKER: self.image.broker_configs, CONFIG_GROUP: self.image.group_configs, CONFIG_CLIENT_METRICS: self.image.client_metrics_configs}
        if kind == CONFIG_TOPIC:
            topic = self.image.topics.get(name)
            return dict(topic.configs) if topic is not None else {}
        return dict((store[kind] or {}).get(name, {}))

    def _store(self, key: Key, updated: dict[str, str]) -> None:
        kind, name = key
        if kind == CONFIG_TOPIC:
            topic = self.image.topics.get(name)
            if topic is not None:
                topic.configs.clear()
                topic.configs.update(updated)
            return
        store = {CONFIG_BROKER: self.image.broker_configs, CONFIG_GROUP: self.image.group_configs, CONFIG_CLIENT_METRICS: self.image.client_metrics_configs}[kind]
        if updated:
            store[name] = updated
        else:
            store.pop(name, None)

    def _outcome(self, key: Key, changes: Changes, state: ConfigState, incremental: bool, forwarded: bool) -> tuple[int, str | None, dict[str, str] | None]:
        current = self._current(key)
        try:
            records = self._records(key, changes, current, incremental)
            updated = self._validate(key, records, current, state, forwarded)
        except ConfigProblem as problem:
            return problem.code, problem.message, None
        return ErrorCode.none, None, updated

    def _records(self, key: Key, changes: Changes, current: dict[str, str], incremental: bool) -> list[Record]:
        """The ConfigRecords a change comes to (ConfigurationControlManager)."""
        kind = key[0]
        records: list[Record] = []
        for name in string_map_order(changes):  # Kafka keeps each resource's changes in a HashMap
            op, value = changes[name]
            old = current.get(name)
            if op == OP_SET:
                new = value
            elif op == OP_DELETE:
                new = None
            elif op in (OP_APPEND, OP_SUBTRACT):
                if not self._splittable(kind, name):
                    raise ConfigProblem(ErrorCode.invalid_config, f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
                if value is None:
                    raise WholeRequestFailure(name)
                parts = self._parts(kind, name, old)
                for item in java_split(value):
                    if op == OP_APPEND and item not in parts:
                        parts.append(item)
                    elif op == OP_SUBTRACT and item in parts:
                        parts.remove(item)
                new = ",".join(parts)
            else:
                raise WholeRequestFailure(name)
            if new != old or kind == CONFIG_BROKER:
                records.append(Record(name, new))
        if not incremental:
            records += [Record(name, None) for name in current if name not in changes]
        return records

    def _splittable(self, kind: int, name: str) -> bool:
        defs = kafka_configs()
        key = defs.topic.get(name) if kind == CONFIG_TOPIC else defs.broker.get(name) if kind == CONFIG_BROKER else None
        return key is not None and key.type == "LIST"

    def _parts(self, kind: int, name: str, value: str | None) -> list[str]:
        if value is None:
            defs = kafka_configs()
            key = defs.topic.get(name) if kind == CONFIG_TOPIC else defs.broker.get(name)
            value = key.default if key is not None else None
        return [] if value is None else [part for part in java_split(value) if part]

    def _validate(self, key: Key, records: list[Record], current: dict[str, str], state: ConfigState, forwarded: bool) -> dict[str, str]:
        """ConfigurationControlManager.validateAlterConfig: the rules on records, the validator, then existence."""
        kind, name = key
        elr = self.image.finalized_features.get(ELR_FEATURE, 0) >= 1
        updated = dict(current)
        for record in records:
            if record.name == MIN_INSYNC_REPLICAS and kind == CONFIG_BROKER and name and elr:
                raise ConfigProblem(ErrorCode.invalid_config, f"Broker-level {MIN_INSYNC_REPLICAS} cannot be altered while ELR is enabled.")
            if record.name == MIN_INSYNC_REPLICAS and kind == CONFIG_BROKER and not name and record.value is None and elr:
                raise ConfigProblem(ErrorCode.invalid_config, f"Cluster-level {MIN_INSYNC_REPLICAS} cannot be removed while ELR is enabled.")
            if record.name == CORDONED_LOG_DIRS and kind == CONFIG_BROKER:
                self._check_cordoned(record, current.get(CORDONED_LOG_DIRS), forwarded)
            if record.value is None:
                updated.pop(record.name, None)
            elif len(record.value) > MAX_VALUE_SIZE:
                raise ConfigProblem(
                    ErrorCode.invalid_config,
                    f"The configuration value cannot be added because it exceeds the maximum value size of {MAX_VALUE_SIZE} bytes.",
                )
            else:
                updated[record.name] = record.value
        validate_resource_configs(kind, name, updated, state)
        self._exists(kind, name)
        return updated

    def _check_cordoned(self, record: Record, current: str | None, forwarded: bool) -> None:
        if self.image.finalized_features.get(METADATA_VERSION, 0) < CORDONED_LOG_DIRS_LEVEL:
            raise ConfigProblem(
                ErrorCode.invalid_config,
                f"The {CORDONED_LOG_DIRS} configuration value cannot be set because it requires metadata.version >= 4.3-IV0",
            )
        if forwarded or record.value is None or not record.value.strip():
            return
        present = [] if current is None else [d for d in _split_dirs(current)]
        if not set(_split_dirs(record.value)) <= set(present):
            raise ConfigProblem(
                ErrorCode.invalid_config,
                f"When updating {CORDONED_LOG_DIRS} via controllers,  the new value must be a subset of the current configuration value.",
            )

    def _exists(self, kind: int, name: str) -> None:
        """QuorumController's ConfigResourceExistenceChecker."""
        if kind == CONFIG_BROKER and name:
            node = java_integer(name)  # checked before: a broker name that parses
            if node not in self.broker_ids and node not in self.controller_ids:
                raise ConfigProblem(ErrorCode.broker_id_not_registered, f"No node with id {node} found.")
        elif kind == CONFIG_TOPIC and name not in self.image.topics:
            raise ConfigProblem(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")

    # ---------------------------------------------------------------- BROKER_LOGGER

    def _broker_logger(self, resource: Any, ctx: RequestContext, validate_only: bool) -> dict[str, Any]:
        """RuntimeLoggerManager.applyChangesForResource, on this process's Python loggers."""
        kind, name = int(resource.resource_type), str(resource.resource_name)
        try:
            if not allowed(self.authorizer, ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
                raise ConfigProblem(ErrorCode.cluster_authorization_failed, ERROR_MESSAGES[ErrorCode.cluster_authorization_failed])
            node = java_integer(name)
            if node is None:
                raise ConfigProblem(ErrorCode.invalid_request, f"Node id must be an integer, but it is: {name}")
            if node != self.node_id:
                raise ConfigProblem(ErrorCode.invalid_request, f"Unexpected node id. Expected {self.node_id}, but received {node}")
            ops = [(str(c.name), int(c.config_operation), c.value) for c in resource.configs]
            for logger, op, value in ops:
                check_logger_change(logger, op, value)
        except ConfigProblem as problem:
            return alter_response(problem.code, problem.message, kind, name)
        if not validate_only:
            for logger, op, value in ops:
                target = logging.getLogger() if logger == ROOT_LOGGER else logging.getLogger(logger)
                if op == OP_SET and value is not None:
                    target.setLevel(LOG4J_TO_PYTHON[value])
                    log.warning("Updated the log level of %s to %s", logger, value)
                elif op == OP_DELETE:
                    target.setLevel(logging.NOTSET)
                    log.warning("Unset the log level of %s", logger)
        return alter_response(ErrorCode.none, None, kind, name)


def _split_dirs(text: str) -> list[str]:
    return re.split(r"\s*,\s*", text.strip())
