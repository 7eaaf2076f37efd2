"""Finding an authorizer by name (see authz.plugin for the contract).

Pure: used by the proxy and the embedded controller when their configuration
is read, and by the Spark job's what-if replay, which must not import proxy.
"""

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from authz.acl import AclAuthorizer
from authz.model import parse_super_users
from authz.plugin import ENTRY_POINT_GROUP, Authorizer

KEY = "authorizer.class.name"
STANDARD_NAMES = frozenset(
    {"org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer", "authz.acl.AclAuthorizer"}
)
"""Names that mean the built-in ACL authorizer, with Kafka's semantics."""


class AuthorizerLoadError(ValueError):
    """`name` cannot become an authorizer; `reason` says why."""

    def __init__(self, key: str, name: str, reason: str) -> None:
        super().__init__(f"Invalid value {name!r} for configuration {key}: {reason}")
        self.key = key
        self.name = name
        self.reason = reason


def is_standard(name: str) -> bool:
    return name in STANDARD_NAMES


def _factory(name: str) -> Any:
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            try:
                return entry.load()
            except Exception as exc:
                raise AuthorizerLoadError(KEY, name, f"entry point {entry.value} of group {ENTRY_POINT_GROUP} cannot be loaded: {exc!r}") from exc
    module_name, sep, attribute = name.partition(":")
    if not sep:
        module_name, _, attribute = name.rpartition(".")
    if not module_name or not attribute:
        raise AuthorizerLoadError(KEY, name, f"not an entry point of group {ENTRY_POINT_GROUP} and not a dotted path like package.module:Class")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise AuthorizerLoadError(KEY, name, f"module {module_name} cannot be imported: {exc!r}") from exc
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise AuthorizerLoadError(KEY, name, f"module {module_name} has no attribute {attribute}") from None


def _bool(properties: Mapping[str, str], key: str) -> bool:
    text = properties.get(key, "false").strip().lower()
    if text not in ("true", "false"):
        raise AuthorizerLoadError(key, properties[key], "expected true or false")
    return text == "true"


def load_authorizer(name: str, properties: Mapping[str, str]) -> Authorizer:
    """The authorizer named `name`, built from `properties`; AuthorizerLoadError naming the problem otherwise."""
    if is_standard(name):
        try:
            super_users = parse_super_users(properties.get("super.users"))
        except ValueError as exc:
            raise AuthorizerLoadError("super.users", properties.get("super.users", ""), str(exc)) from None
        return AclAuthorizer(super_users, allow_everyone_if_no_acl_found=_bool(properties, "allow.everyone.if.no.acl.found"))
    factory = _factory(name)
    try:
        authorizer = factory(dict(properties))
    except AuthorizerLoadError:
        raise
    except Exception as exc:
        raise AuthorizerLoadError(KEY, name, f"the plug-in refused its configuration: {exc!r}") from exc
    if not isinstance(authorizer, Authorizer):
        raise AuthorizerLoadError(KEY, name, "the plug-in has no authorize(context, actions) method")
    return authorizer
