"""DescribeConfigs (32) as Kafka 4.3's controller answers it (ControllerApis -> ConfigHelper).

Every config of a resource is listed, defaults included, in the order Kafka
lists them, with its source, its synonyms when asked (dynamic per-broker,
dynamic cluster default, static, default, under each broker synonym name),
its documentation when asked, its type, and the read-only and sensitive
flags (a sensitive value, or one of unknown type, is null). Resources the
caller may not describe come after the others, as in Kafka. An unknown
resource type fails the whole request with INVALID_REQUEST.

BROKER_LOGGER lists this process's Python loggers with their log4j level
names; the rest follows kafka_configs.json, generated from Kafka's classes.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext, ResourceType
from authz.model import CLUSTER_NAME
from controller.authorize import allowed
from controller.broker_loggers import python_loggers
from controller.config_defs import CONFIG_TYPE_IDS, UNKNOWN_CONFIG_TYPE, ConfigKey, kafka_configs, normalized
from controller.config_resources import ERROR_MESSAGES
from controller.config_state import (
    CLIENT_METRICS_CONFIG,
    CLUSTER_DEFAULT,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_LOGGER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    GROUP_CONFIG,
    TOPIC_CONFIG,
    ConfigState,
    Synonym,
)
from controller.image import MetadataImage
from controller.java_values import java_hash_map_order, java_integer, scala_hash_map_order
from controller.topic_rules import topic_name_problem
from envelope.config_resources import (
    CONFIG_BROKER,
    CONFIG_BROKER_LOGGER,
    CONFIG_CLIENT_METRICS,
    CONFIG_GROUP,
    CONFIG_RESOURCE_TYPES,
    CONFIG_TOPIC,
)

INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or the message was sent to an "
    "incompatible broker. See the broker logs for more details."
)


class ResourceError(Exception):
    """An error for one resource: its code and Kafka's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def broker_id_of(name: str, message: str) -> int:
    """Integer.parseInt, or the INVALID_REQUEST Kafka gives with `message` + the name."""
    broker = java_integer(name)
    if broker is None:
        raise ResourceError(ErrorCode.invalid_request, f"{message}{name}")
    return broker


def _entry(
    name: str,
    value: str | None,
    source: int,
    *,
    read_only: bool,
    sensitive: bool,
    synonyms: list[Synonym],
    include_synonyms: bool,
    config_type: int,
    documentation: str | None,
) -> dict[str, Any]:
    return {
        "name": name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "is_default": source == DEFAULT_CONFIG,  # v0 only; Kafka 4 serves v1+
        "config_source": source,
        "is_sensitive": sensitive,
        "synonyms": [s.as_dict() for s in synonyms] if include_synonyms else [],
        "config_type": config_type,
        "documentation": documentation,
    }


def _described_by(key: ConfigKey | None, include_documentation: bool) -> dict[str, Any]:
    """An entry's type and documentation from its definition (an unknown config has neither)."""
    return {
        "config_type": key.type_id if key else UNKNOWN_CONFIG_TYPE,
        "documentation": (key.documentation if key else None) if include_documentation else None,
    }


def _listed(names: Iterable[str], wanted: list[str] | None) -> list[str]:
    """The names Kafka lists, in its order; a non-empty key list keeps only those."""
    return [n for n in names if not wanted or n in wanted]


class ConfigDescriber:
    def __init__(
        self,
        image: MetadataImage,
        authorizer: Authorizer,
        *,
        node_id: int,
        static_config: Mapping[str, str],
        broker_ids: Sequence[int] = (),
    ) -> None:
        self.image = image
        self.authorizer = authorizer
        self.node_id = node_id
        self.static_config = dict(static_config)
        # The embedded controller stands in for its brokers, as it lists them in Metadata: each answers for itself
        # with the controller's static configs and its own dynamic ones, as a broker of that cluster would.
        self.broker_ids = frozenset(broker_ids) | {node_id}

    def state(self) -> ConfigState:
        return ConfigState(self.image, self.static_config, self.node_id)

    # ---------------------------------------------------------------- the request

    def describe_configs(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        resources = list(body.resources)
        if any(int(r.resource_type) not in CONFIG_RESOURCE_TYPES for r in resources):
            # ConfigHelper throws while it sorts the resources; the request fails as a whole.
            return {"throttle_time": 0, "results": [_failed(r, ErrorCode.invalid_request, INVALID_REQUEST_MESSAGE) for r in resources]}
        include_synonyms = bool(getattr(body, "include_synonyms", False))
        include_documentation = bool(getattr(body, "include_documentation", False))
        authorized: list[Any] = []
        denied: list[tuple[Any, int]] = []
        for resource in resources:
            code = self._denial(resource, ctx)
            if code is None:
                authorized.append(resource)
            else:
                denied.append((resource, code))
        state = self.state()
        results = [self._describe(resource, state, include_synonyms, include_documentation) for resource in authorized]
        results += [_failed(resource, code, ERROR_MESSAGES[code]) for resource, code in denied]
        return {"throttle_time": 0, "results": results}

    def _denial(self, resource: Any, ctx: RequestContext) -> int | None:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        if kind == CONFIG_TOPIC:
            ok = allowed(self.authorizer, ctx, Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name)
            return None if ok else ErrorCode.topic_authorization_failed
        if kind == CONFIG_GROUP:
            ok = allowed(self.authorizer, ctx, Operation.DESCRIBE_CONFIGS, ResourceType.GROUP, name)
            return None if ok else ErrorCode.group_authorization_failed
        ok = allowed(self.authorizer, ctx, Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
        return None if ok else ErrorCode.cluster_authorization_failed

    def _describe(self, resource: Any, state: ConfigState, include_synonyms: bool, include_documentation: bool) -> dict[str, Any]:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        wanted = None if resource.configuration_keys is None else [str(k) for k in resource.configuration_keys]
        try:
            if kind == CONFIG_TOPIC:
                configs = self._topic(name, state, wanted, include_synonyms, include_documentation)
            elif kind == CONFIG_BROKER:
                configs = self._broker(name, state, wanted, include_synonyms, include_documentation)
            elif kind == CONFIG_BROKER_LOGGER:
                configs = self._broker_logger(name, wanted)
            elif kind == CONFIG_CLIENT_METRICS:
                configs = self._client_metrics(name, wanted, include_synonyms, include_documentation)
            else:
                configs = self._group(name, state, wanted, include_synonyms, include_documentation)
        except ResourceError as error:
            return _failed(resource, error.code, error.message)
        if configs is None:
            return _failed(resource, ErrorCode.unknown_topic_or_partition, "")
        return {"error_code": ErrorCode.none, "error_message": "", "resource_type": kind, "resource_name": name, "configs": configs}

    # ---------------------------------------------------------------- topics

    def _topic(
        self, name: str, state: ConfigState, wanted: list[str] | None, include_synonyms: bool, include_documentation: bool
    ) -> list[dict[str, Any]] | None:
        problem = topic_name_problem(name)
        if problem is not None:
            raise ResourceError(ErrorCode.invalid_topic_exception, problem)
        topic = self.image.topics.get(name)
        if topic is None:
            return None
        return self.topic_entries(topic.configs, state, wanted, include_synonyms=include_synonyms, include_documentation=include_documentation)

    def topic_entries(
        self,
        overrides: Mapping[str, str],
        state: ConfigState | None = None,
        wanted: list[str] | None = None,
        *,
        include_synonyms: bool,
        include_documentation: bool,
    ) -> list[dict[str, Any]]:
        """A topic's configs as DescribeConfigs lists them (CreateTopics' KIP-525 answer is the same list)."""
        state = state or self.state()
        defs = state.defs.topic
        defaults = state.topic_defaults()
        entries = []
        for config in _listed(_originals_first(overrides, defs.describe_order), wanted):
            key = defs.get(config)
            sensitive = key is None or key.sensitive
            overridden = config in overrides
            value = normalized(key, overrides[config]) if overridden else defaults.get(config)
            shown = None if sensitive else value
            synonyms = []
            if key is not None and key.broker_synonym is not None:
                synonyms = state.broker_synonym_list(key.broker_synonym, sensitive)
            if overridden:
                synonyms.insert(0, Synonym(config, shown, TOPIC_CONFIG))
            entries.append(
                _entry(
                    config,
                    shown,
                    synonyms[0].source if synonyms else DEFAULT_CONFIG,
                    read_only=False,
                    sensitive=sensitive,
                    synonyms=synonyms,
                    include_synonyms=include_synonyms,
                    **_described_by(key, include_documentation),
                )
            )
        return entries

    # ---------------------------------------------------------------- brokers

    def _broker(
        self, name: str, state: ConfigState, wanted: list[str] | None, include_synonyms: bool, include_documentation: bool
    ) -> list[dict[str, Any]]:
        if name == CLUSTER_DEFAULT:
            values = state.dynamic_default
            names = scala_hash_map_order(values)
            return [self._broker_entry(n, values[n], state, False, include_synonyms, include_documentation) for n in _listed(names, wanted)]
        broker_id = broker_id_of(name, "Broker id must be an integer, but it is: ")
        if broker_id not in self.broker_ids:
            raise ResourceError(
                ErrorCode.invalid_request, f"Unexpected broker id, expected {self.node_id} or empty string, but received {name}"
            )
        if broker_id != state.node_id:
            state = ConfigState(self.image, self.static_config, broker_id)
        names = _originals_first(state.effective, state.defs.broker.describe_order)
        return [
            self._broker_entry(n, state.broker_value(n), state, True, include_synonyms, include_documentation) for n in _listed(names, wanted)
        ]

    def _broker_entry(
        self, name: str, value: str | None, state: ConfigState, per_broker: bool, include_synonyms: bool, include_documentation: bool
    ) -> dict[str, Any]:
        defs = state.defs
        config_type = defs.broker_type(name)
        sensitive = config_type is None or config_type == "PASSWORD"
        synonyms = [
            s
            for s in state.synonyms(name, defs.broker_synonyms(name), sensitive)
            if per_broker or s.source == DYNAMIC_DEFAULT_BROKER_CONFIG
        ]
        key: ConfigKey | None = defs.broker.get(name)
        dynamic_only = defs.broker_dynamic_only.get(name)
        dynamic = (key is not None and key.dynamic) or (dynamic_only is not None and dynamic_only.dynamic)
        return _entry(
            name,
            value,
            synonyms[0].source if synonyms else DEFAULT_CONFIG,
            read_only=not dynamic,
            sensitive=sensitive,
            synonyms=synonyms,
            include_synonyms=include_synonyms,
            config_type=_type_id(config_type),
            documentation=(key.documentation if key else None) if include_documentation else None,
        )

    def _broker_logger(self, name: str, wanted: list[str] | None) -> list[dict[str, Any]]:
        if not name:
            raise ResourceError(ErrorCode.invalid_request, "Broker id must not be empty")
        if broker_id_of(name, "Broker id must be an integer, but it is: ") not in self.broker_ids:
            raise ResourceError(ErrorCode.invalid_request, f"Unexpected broker id, expected {self.node_id} but received {name}")
        loggers = python_loggers()
        return [
            {
                "name": logger,
                "value": level,
                "read_only": False,
                "is_default": False,
                "config_source": DYNAMIC_BROKER_LOGGER_CONFIG,
                "is_sensitive": False,
                "synonyms": [],
                "config_type": UNKNOWN_CONFIG_TYPE,
                "documentation": "",  # never set by Kafka: the field's default
            }
            for logger, level in loggers.items()
            if not wanted or logger in wanted
        ]

    # ---------------------------------------------------------------- client metrics and groups

    def _client_metrics(self, name: str, wanted: list[str] | None, include_synonyms: bool, include_documentation: bool) -> list[dict[str, Any]]:
        if not name:
            raise ResourceError(ErrorCode.invalid_request, "Client metrics subscription name must not be empty")
        defs = kafka_configs().client_metrics
        overrides = self.image.client_metrics_configs.get(name, {})
        entries = []
        for config in _listed(_originals_first(overrides, defs.describe_order), wanted):
            key = defs.get(config)
            overridden = config in overrides
            value = normalized(key, overrides[config]) if overridden else (key.default if key else None)
            synonyms = [Synonym(config, value, CLIENT_METRICS_CONFIG)] if overridden else []
            entries.append(
                _entry(
                    config,
                    value,
                    CLIENT_METRICS_CONFIG if overridden else DEFAULT_CONFIG,
                    read_only=False,
                    sensitive=False,
                    synonyms=synonyms,
                    include_synonyms=include_synonyms,
                    **_described_by(key, include_documentation),
                )
            )
        return entries

    def _group(
        self, name: str, state: ConfigState, wanted: list[str] | None, include_synonyms: bool, include_documentation: bool
    ) -> list[dict[str, Any]]:
        if not name:
            raise ResourceError(ErrorCode.invalid_request, "Group name must not be empty")
        defs = state.defs.group
        overrides = self.image.group_configs.get(name, {})
        defaults = state.group_defaults()
        entries = []
        for config in _listed(_originals_first(overrides, defs.describe_order), wanted):
            key = defs.get(config)
            sensitive = key is None or key.sensitive
            overridden = config in overrides
            value = normalized(key, overrides[config]) if overridden else defaults.get(config)
            shown = None if sensitive else value
            if key is not None and key.broker_synonym is not None:
                synonyms = state.broker_synonym_list(key.broker_synonym, sensitive)
            elif key is not None and key.default is not None:
                synonyms = [Synonym(config, None if sensitive else key.default, DEFAULT_CONFIG)]
            else:
                synonyms = []
            if overridden:
                synonyms.insert(0, Synonym(config, shown, GROUP_CONFIG))
            entries.append(
                _entry(
                    config,
                    shown,
                    synonyms[0].source if synonyms else DEFAULT_CONFIG,
                    read_only=False,
                    sensitive=sensitive,
                    synonyms=synonyms,
                    include_synonyms=include_synonyms,
                    **_described_by(key, include_documentation),
                )
            )
        return entries


def _type_id(config_type: str | None) -> int:
    return UNKNOWN_CONFIG_TYPE if config_type is None else CONFIG_TYPE_IDS.get(config_type, UNKNOWN_CONFIG_TYPE)


def _originals_first(originals: Mapping[str, str], order: Iterable[str]) -> list[str]:
    """ConfigHelperUtils: the originals that are not among the listed values first (in their HashMap's order), then those."""
    listed = list(order)
    known = set(listed)
    extra = [n for n in java_hash_map_order(originals, copy_of_size=len(originals)) if n not in known]
    return extra + listed


def _failed(resource: Any, code: int, message: str) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": int(resource.resource_type),
        "resource_name": str(resource.resource_name),
        "configs": [],
    }
