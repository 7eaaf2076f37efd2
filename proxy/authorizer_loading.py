"""Finding an authorizer by name when the configuration is read (see authz.plugin for the contract)."""

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from authz import ENTRY_POINT_GROUP, AclAuthorizer, Authorizer
from proxy.config_errors import ConfigError
from proxy.properties import Properties

KEY = "authorizer.class.name"
STANDARD_NAMES = frozenset(
    {"org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer", "authz.acl.AclAuthorizer"}
)
"""Names that mean the built-in ACL authorizer, with Kafka's semantics."""


def is_standard(name: str) -> bool:
    return name in STANDARD_NAMES


def _factory(name: str) -> Any:
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            try:
                return entry.load()
            except Exception as exc:
                raise ConfigError(KEY, name, f"entry point {entry.value} of group {ENTRY_POINT_GROUP} cannot be loaded: {exc!r}") from exc
    module_name, sep, attribute = name.partition(":")
    if not sep:
        module_name, _, attribute = name.rpartition(".")
    if not module_name or not attribute:
        raise ConfigError(KEY, name, f"not an entry point of group {ENTRY_POINT_GROUP} and not a dotted path like package.module:Class")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(KEY, name, f"module {module_name} cannot be imported: {exc!r}") from exc
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(KEY, name, f"module {module_name} has no attribute {attribute}") from None


def load_authorizer(name: str, properties: Mapping[str, str]) -> Authorizer:
    """The authorizer named `name`, built from `properties`; ConfigError naming the problem otherwise."""
    if is_standard(name):
        props = Properties(properties)
        return AclAuthorizer(
            props.list("super.users", separator=";"),
            allow_everyone_if_no_acl_found=props.bool("allow.everyone.if.no.acl.found", False),
        )
    factory = _factory(name)
    try:
        authorizer = factory(dict(properties))
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(KEY, name, f"the plug-in refused its configuration: {exc!r}") from exc
    if not isinstance(authorizer, Authorizer):
        raise ConfigError(KEY, name, "the plug-in has no authorize(context, actions) method")
    return authorizer
