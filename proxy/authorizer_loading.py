"""Loading `authorizer.class.name` while the configuration is read: authz.loading, with ConfigError."""

from collections.abc import Mapping

from authz import Authorizer
from authz.loading import STANDARD_NAMES, AuthorizerLoadError, is_standard
from authz.loading import load_authorizer as _load
from proxy.config_errors import ConfigError

__all__ = ["STANDARD_NAMES", "is_standard", "load_authorizer"]


def load_authorizer(name: str, properties: Mapping[str, str]) -> Authorizer:
    try:
        return _load(name, properties)
    except AuthorizerLoadError as exc:
        raise ConfigError(exc.key, exc.name, exc.reason) from exc
