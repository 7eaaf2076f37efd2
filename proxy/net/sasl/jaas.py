"""Kafka's choice of login modules for a listener and mechanism, from the JAAS property or file.

Kafka's lookup for one listener and mechanism (`select_login`): the property
`listener.name.<listener>.<mechanism>.sasl.jaas.config` if set, else the file's
entry `<listener, lowercased>.KafkaServer`, else its `KafkaServer` entry. Entries
are never merged. An entry without login modules counts as absent, as in Java.

The text is parsed by proxy/net/sasl/jaas_parser.py; the file is named by proxy/net/sasl/system_properties.py.
Pure: no trio, no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from proxy.net.sasl.jaas_lexer import shown_name
from proxy.net.sasl.jaas_model import JaasError, JaasFile, LoginModule
from proxy.net.sasl.jaas_parser import parse_jaas_config
from proxy.net.sasl.login_modules import (
    GSSAPI_LOGIN_MODULES,
    MECHANISM_LOGIN_MODULES,
    OAUTHBEARER_LOGIN_MODULE,
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
)
from proxy.net.sasl.system_properties import JAAS_FILE_KEY, JAAS_FILE_SYSTEM_PROPERTY, KAFKA_OPTS
from proxy.properties import listener_prefix

__all__ = [
    "GSSAPI_LOGIN_MODULES",
    "MECHANISM_LOGIN_MODULES",
    "OAUTHBEARER_LOGIN_MODULE",
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "JaasLogin",
    "jaas_property_key",
    "select_login",
    "server_context_names",
    # the type of select_login's jaas_file, exported with it
    "JaasFile",
]


SERVER_CONTEXT = "KafkaServer"
"""The JAAS file entry a broker's listeners share (JaasContext), after `<listener>.KafkaServer`."""


@dataclass(frozen=True)
class JaasLogin:
    """The login modules Kafka would use for one listener and mechanism, and where they came from."""

    listener: str
    mechanism: str
    source: str  # "listener.name.client.plain.sasl.jaas.config" or "<file>: entry client.KafkaServer"
    modules: tuple[LoginModule, ...]
    key: str  # the configuration key behind the source (the property, jaas.config.file or KAFKA_OPTS)
    notes: tuple[str, ...] = ()

    @property
    def module(self) -> LoginModule | None:
        """The first module of the class the mechanism reads (None for a mechanism without one, or a file entry
        without ScramLoginModule for SCRAM on the server side)."""
        expected = MECHANISM_LOGIN_MODULES.get(self.mechanism.upper())
        for module in self.modules:
            if expected is None or module.module in expected:
                return module
        return None

    def option(self, key: str) -> str | None:
        """Kafka's `JaasContext.configEntryOption`: the first value of `key` among the mechanism's modules."""
        expected = MECHANISM_LOGIN_MODULES.get(self.mechanism.upper())
        for module in self.modules:
            if expected is not None and module.module not in expected:
                continue
            value = module.options.get(key)
            if value is not None:
                return value
        return None

    @property
    def users(self) -> dict[str, str]:
        """PLAIN's `user_<name>` options, looked up as Kafka's PlainServerCallbackHandler does (first module wins)."""
        found: dict[str, str] = {}
        for module in self.modules:
            if module.module != PLAIN_LOGIN_MODULE:
                continue
            for name, password in module.users.items():
                found.setdefault(name, password)
        return found


# --------------------------------------------------------------------------- Kafka's lookup


def jaas_property_key(listener: str, mechanism: str) -> str:
    """`listener.name.<listener>.<mechanism>.sasl.jaas.config`, both lowercased as Kafka does."""
    return f"{listener_prefix(listener, mechanism)}sasl.jaas.config"


def server_context_names(listener: str) -> tuple[str, str]:
    """The file entries Kafka tries for a listener, in order: `<listener, lowercased>.KafkaServer`, `KafkaServer`."""
    return f"{listener.lower()}.{SERVER_CONTEXT}", SERVER_CONTEXT


def _check_modules(login: JaasLogin, *, from_property: bool, role: Literal["server", "client"]) -> None:
    mechanism = login.mechanism.upper()
    expected = MECHANISM_LOGIN_MODULES.get(mechanism)
    names = ", ".join(shown_name(module.module) for module in login.modules)
    if mechanism == "OAUTHBEARER" and len(login.modules) != 1:
        # Kafka's JaasOptionsUtils: "Must supply exactly 1 non-null JAAS mechanism configuration".
        raise JaasError(f"OAUTHBEARER takes exactly 1 login module, found {len(login.modules)} ({names})", file=login.source, key=login.key)
    if expected is None or login.module is not None:
        return
    if mechanism.startswith("SCRAM-") and role == "server" and not from_property:
        return  # Kafka's SCRAM server reads no JAAS option: a shared KafkaServer entry may lack ScramLoginModule
    wanted = " or ".join(expected)
    raise JaasError(f"{login.mechanism} needs the login module {wanted}, found {names}", file=login.source, key=login.key)


def select_login(
    props: Mapping[str, str],
    listener: str,
    mechanism: str,
    jaas_file: JaasFile | None = None,
    *,
    file_key: str | None = None,
    role: Literal["server", "client"] = "server",
) -> JaasLogin:
    """Kafka's `JaasContext.loadServerContext` for `listener` and `mechanism`, with the login module check.

    The property `listener.name.<l>.<mech>.sasl.jaas.config` first (exactly one module),
    then `jaas_file`'s `<l>.KafkaServer` entry, then its `KafkaServer` entry; never merged.
    `role="client"` is the proxy's own login to a controller listener, which Kafka's
    brokers look up the same way. The mechanism's module must be there (PLAIN:
    PlainLoginModule, SCRAM: ScramLoginModule, OAUTHBEARER: OAuthBearerLoginModule and
    nothing else, GSSAPI: Krb5LoginModule), except that a server's file entry may
    lack ScramLoginModule, as Kafka reads SCRAM credentials elsewhere. `file_key` is
    the key that named the file (see `jaas_file_location`), for error messages.
    JaasError when nothing is found or the module does not fit."""
    key = jaas_property_key(listener, mechanism)
    notes: tuple[str, ...] = ()
    if "sasl.jaas.config" in props and key not in props:
        notes = (f"sasl.jaas.config is ignored for a listener, as Kafka ignores it: set {key}",)
    text = props.get(key)
    if text is not None:
        modules = parse_jaas_config(text.strip(), key=key)
        if len(modules) != 1:
            raise JaasError(f"holds {len(modules)} login modules; Kafka's sasl.jaas.config takes exactly 1", file=key, key=key)
        login = JaasLogin(listener, mechanism, key, modules, key, notes)
        _check_modules(login, from_property=True, role=role)
        return login
    names = server_context_names(listener)
    if jaas_file is None:
        raise JaasError(
            f"listener {listener} uses {mechanism} but neither {key} nor a JAAS file ({JAAS_FILE_KEY}, or -D{JAAS_FILE_SYSTEM_PROPERTY}= in {KAFKA_OPTS}) is set",
            key=key,
        )
    origin = file_key or jaas_file.source
    for name in names:
        context = jaas_file.context(name)
        if context is not None:
            login = JaasLogin(listener, mechanism, f"{jaas_file.source}: entry {name}", context.modules, origin, notes)
            _check_modules(login, from_property=False, role=role)
            return login
    raise JaasError(
        f"listener {listener} uses {mechanism} but {key} is not set and the JAAS file has neither an entry {names[0]} nor {names[1]} with a login module",
        file=jaas_file.source,
        key=origin,
    )
