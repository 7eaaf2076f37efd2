"""Kafka-style .properties files, typed access with precise errors (ConfigError), and the configured authorizer.

A leaf of the proxy: no trio, nothing of the rest of the proxy."""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar, overload

import javaproperties

from authz import Authorizer
from authz.loading import AuthorizerLoadError
from authz.loading import load_authorizer as _load_authorizer
from authz.model import parse_super_users


class ConfigError(ValueError):
    def __init__(self, key: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid value {value!r} for configuration {key}: {reason}")
        self.key = key
        self.value = value
        self.reason = reason


def load_authorizer(name: str, properties: Mapping[str, str]) -> Authorizer:
    """`authorizer.class.name` loaded while the configuration is read: authz.loading's errors as ConfigError."""
    try:
        return _load_authorizer(name, properties)
    except AuthorizerLoadError as exc:
        raise ConfigError(exc.key, exc.name, exc.reason) from exc


def load_properties(path: str | Path) -> dict[str, str]:
    with open(path, encoding="utf-8") as handle:
        return dict(javaproperties.load(handle))


def _to_int(key: str, text: str, minimum: int | None, maximum: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(key, text, "expected an integer") from None
    if minimum is not None and value < minimum:
        raise ConfigError(key, text, f"must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ConfigError(key, text, f"must be at most {maximum}")
    return value


_T = TypeVar("_T")
_reads: ContextVar[list[str] | None] = ContextVar("properties_reads", default=None)


@contextmanager
def recording_reads() -> Iterator[list[str]]:
    """Every key looked up in a `Properties` (by its getters, `scoped`, or `raw.get`, `raw[k]`, `k in raw`) while
    the block runs, in order: what a parse read, so that `envelope-proxy` can name the keys nothing read."""
    reads: list[str] = []
    token = _reads.set(reads)
    try:
        yield reads
    finally:
        _reads.reset(token)


class RecordingDict(dict[str, str]):
    """`Properties.raw`: a dict that notes each key looked up while `recording_reads` is active."""

    @staticmethod
    def _note(key: object) -> None:
        reads = _reads.get()
        if reads is not None and isinstance(key, str):
            reads.append(key)

    def __getitem__(self, key: str) -> str:
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)

    @overload
    def get(self, key: str, default: None = None, /) -> str | None: ...
    @overload
    def get(self, key: str, default: str, /) -> str: ...
    @overload
    def get(self, key: str, default: _T, /) -> str | _T: ...
    def get(self, key: str, default: object = None, /) -> object:
        self._note(key)
        return super().get(key, default)


class Properties:
    """Typed getters over raw properties; every failure names key and value."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = RecordingDict({k.strip(): v.strip() for k, v in raw.items()})

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def require(self, key: str) -> str:
        value = self.raw.get(key)
        if value is None or value == "":
            raise ConfigError(key, value, "is required")
        return value

    def required_int(self, key: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
        return _to_int(key, self.require(key), minimum, maximum)

    def int(self, key: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
        text = self.raw.get(key)
        return default if text is None else _to_int(key, text, minimum, maximum)

    def bool(self, key: str, default: bool) -> bool:
        text = self.raw.get(key)
        if text is None:
            return default
        if text.lower() not in ("true", "false"):
            raise ConfigError(key, text, "expected true or false")
        return text.lower() == "true"

    def list(self, key: str, default: str = "", *, separator: str = ",") -> list[str]:
        text = self.raw.get(key, default)
        return [item.strip() for item in text.split(separator) if item.strip()]

    def principals(self, key: str) -> frozenset[str]:
        """`Type:name` principals separated by ';' like super.users (a DN may contain ',')."""
        principals = self.list(key, separator=";")
        for principal in principals:
            kind, sep, name = principal.partition(":")
            if not sep or not kind.strip() or not name.strip():
                raise ConfigError(key, self.raw.get(key), f"{principal!r} is not of the form Type:name (e.g. User:proxy)")
        return frozenset(principals)

    def listener_value(self, listener: str, key: str) -> str | None:
        """`listener.name.<lower-case listener>.<key>` wins over `<key>` (KIP-103)."""
        return scoped(self.raw, key, listener=listener)[1]

    def listener_key(self, listener: str, key: str) -> str:
        """The key `listener_value` reads, so that errors name the one that was set."""
        return scoped(self.raw, key, listener=listener)[0]


def listener_prefix(listener: str, mechanism: str | None = None) -> str:
    """`listener.name.<l>.` (KIP-103), and `<mechanism>.` after it for a SASL mechanism's own keys; lower case."""
    return f"listener.name.{listener.lower()}." + (f"{mechanism.lower()}." if mechanism else "")


def scoped(raw: Mapping[str, str], key: str, *, listener: str | None = None, mechanism: str | None = None) -> tuple[str, str | None]:
    """Kafka's one lookup of a listener's (and a SASL mechanism's) setting: `listener.name.<l>.<mechanism>.<key>`,
    then `listener.name.<l>.<key>`, then `<key>` (a bare `<mechanism>.<key>` is not read, as Kafka does not read it).
    Returns the key that was read, or `key` itself when none is set, so errors name what the operator wrote, and
    its value. Every reader of a listener or mechanism key goes through here."""
    if listener:
        prefix = listener_prefix(listener)
        tried = (f"{listener_prefix(listener, mechanism)}{key}", f"{prefix}{key}") if mechanism else (f"{prefix}{key}",)
        for name in tried:
            if name in raw:
                return name, raw[name]
    return key, raw.get(key)


def allow_everyone_if_no_acl_found(props: Properties) -> bool:
    """`allow.everyone.if.no.acl.found` (StandardAuthorizer's default: false), for the proxy's and the controller's ACLs."""
    return props.bool("allow.everyone.if.no.acl.found", False)


def super_users(props: Properties) -> frozenset[str]:
    """`super.users`, its errors as ConfigError."""
    try:
        return parse_super_users(props.get("super.users"))
    except ValueError as exc:
        raise ConfigError("super.users", props.get("super.users"), str(exc)) from None
