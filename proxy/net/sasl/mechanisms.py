"""What one SASL mechanism provides: the contract every mechanism module fulfils (no trio; no I/O but reading a JAAS file).

A mechanism module (proxy/net/sasl/plain.py, scram_mechanism.py) holds the three sides of
its mechanism, and proxy/net/sasl/registry.py lists it on one line:

- its settings parsing: `Mechanism.server` reads a listener's keys (JAAS, credentials
  files, ...) into a `ServerMechanism`, `Mechanism.client` the proxy's own login into a
  `ClientLogin`;
- its server side: `ServerMechanism.exchange` starts one `ServerExchange` per login, a
  token-in, token-out exchange of as many steps as the mechanism needs (SaslMachine
  drives it with SaslAuthenticate frames, or SaslHandshake v0's raw tokens);
- its client side: `ClientLogin.exchange` (awaited: a mechanism may fetch a token first)
  gives the `ClientExchange` the proxy logs in to the controller with.

Work a mechanism must do in the background, such as fetching and refreshing keys, runs
in `ServerMechanism.run`, started with its listener (proxy/net/listener.py) and lasting
as long as it does.
"""

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from proxy.net.sasl.client import ClientExchange
from proxy.net.sasl.jaas import JaasLogin, jaas_property_key, select_login
from proxy.net.sasl.jaas_model import JaasFile
from proxy.net.sasl.jaas_parser import load_jaas_file
from proxy.net.sasl.system_properties import jaas_file_location, java_system_properties
from proxy.properties import ConfigError, Properties, listener_prefix


class AuthenticationFailed(Exception):
    """`str(exc)` goes to the client as SaslAuthenticate's error_message; `reason` only to the log.

    `answered=False` where Kafka's SaslServer fails with something other than a SaslException (an unexpected error,
    such as a SCRAM proof of the wrong length): Kafka then sends no answer and closes the connection at once, so the
    client sees a closed connection, not SASL_AUTHENTICATION_FAILED. The failure is still audited."""

    def __init__(self, message: str, reason: str | None = None, *, answered: bool = True) -> None:
        super().__init__(message)
        self.reason = reason if reason is not None else message
        self.answered = answered


class TaskStarted(Protocol):
    """What `nursery.start` hands a task (trio.TaskStatus[None]), described here so that the contract, which does no
    I/O, needs no trio: a trio TaskStatus is one."""

    def started(self, value: None = None) -> None: ...


class _StartedUnwatched:
    """The task status of a `run` called without `nursery.start`: nobody waits for it to start."""

    def started(self, value: None = None) -> None:
        return None


STARTED_UNWATCHED: TaskStarted = _StartedUnwatched()
"""The default `task_status` of `ServerMechanism.run`, as trio.TASK_STATUS_IGNORED is trio's."""


class ServerExchange(Protocol):
    @property
    def complete(self) -> bool: ...

    @property
    def user(self) -> str | None: ...

    @property
    def credential_expiry_ms(self) -> int | None:
        """When the credential this login presented stops being valid (milliseconds since the epoch: a token's `exp`,
        a Kerberos ticket's end time), which caps the session's lifetime (KIP-368); None when it does not expire."""
        ...

    @property
    def authentication_id(self) -> str | None:
        """The name the credential proved when the mechanism maps it to another one for the principal (GSSAPI: the
        Kerberos name, alice/admin@REALM, of User:<short name>), for the audit; None when the user is that name."""
        ...

    @property
    def token_authenticated(self) -> bool:
        """Whether the login presented a delegation token (SCRAM's `tokenauth=true`): the principal then says so
        (KafkaPrincipal.tokenAuthenticated), in the Envelope too, and Kafka's token rules apply to it."""
        ...

    def evaluate(self, token: bytes) -> bytes:
        """The challenge (or final answer) for `token`; AuthenticationFailed ends the exchange."""
        ...


class ServerMechanism(Protocol):
    """One listener's server side of a mechanism, as its settings configure it."""

    def exchange(self, mechanism: str) -> ServerExchange:
        """A fresh exchange for one login with `mechanism` (one of the names the listener enables)."""
        ...

    def attempted_user(self, mechanism: str, first_token: bytes) -> str | None:
        """The user a failed login tried, read from its first token, for the audit; None when it cannot be told."""
        ...

    def effective(self) -> dict[str, object]:
        """What check-config shows of it (keys of the listener's entry), secrets hidden."""
        ...

    async def run(self, *, task_status: TaskStarted = STARTED_UNWATCHED) -> None:
        """Background work for as long as the listener serves (key refresh, say); calls `task_status.started()` once it
        can serve, and may then return at once."""
        ...


class ClientLogin(Protocol):
    """The proxy's own login to the controller with one mechanism, as its settings configure it."""

    @property
    def mechanism(self) -> str: ...

    @property
    def user(self) -> str | None:
        """The user name the controller will see, for the proxy's principal (User:<user>); None when not known here."""
        ...

    def effective(self) -> dict[str, object]:
        """What check-config shows of it (keys of the `controller` entry), secrets hidden."""
        ...

    async def exchange(self, server_host: str) -> ClientExchange:
        """The exchange of one login to the controller at `server_host` (GSSAPI names the service by it; a mechanism
        may fetch a token first). It may be called again for a link that is open, to log in again (KIP-368)."""
        ...


class Mechanism(Protocol):
    """One SASL mechanism family (SCRAM serves two names): its settings, its server side, its client side."""

    @property
    def names(self) -> tuple[str, ...]: ...

    def server(self, props: Properties, listener: str, enabled: tuple[str, ...]) -> ServerMechanism:
        """Read the settings of listener `listener`, which enables `enabled` (some of `names`); ConfigError names a bad key."""
        ...

    def client(self, props: Properties, listener: str, mechanism: str) -> ClientLogin:
        """Read the proxy's own login to the controller listener `listener` with `mechanism`."""
        ...


# -- shared by the mechanisms whose settings are a JAAS entry ------------------------------


jaas_key = jaas_property_key


def refuse_custom_callback_handler(props: Properties, listener: str, mechanism: str) -> None:
    """A mechanism the proxy checks itself cannot run a broker's Java callback handler: refusing the key keeps an
    operator's custom check from being silently replaced by the JAAS users."""
    key = f"{listener_prefix(listener, mechanism)}sasl.server.callback.handler.class"
    value = props.get(key)
    if value is not None:
        raise ConfigError(key, value, f"the proxy checks {mechanism} logins itself and cannot run a Java callback handler")


@dataclass(frozen=True)
class UsernamePasswordLogin:
    """The proxy's login with a username and a password (PLAIN, SCRAM): `start` makes the exchange of one login."""

    mechanism: str
    username: str
    password: str = field(repr=False)
    start: Callable[[str, str, str], ClientExchange] = field(repr=False, compare=False)
    """(mechanism, username, password) -> the exchange."""

    @property
    def user(self) -> str | None:
        return self.username

    def effective(self) -> dict[str, object]:
        return {"username": self.username, "password": "[hidden]"}

    async def exchange(self, server_host: str) -> ClientExchange:
        return self.start(self.mechanism, self.username, self.password)


def jaas_file(props: Properties, environ: Mapping[str, str] | None = None) -> tuple[JaasFile | None, str | None]:
    """The JAAS file the configuration names (`jaas.config.file`, which wins, else `-Djava.security.auth.login.config`
    in KAFKA_OPTS), parsed, and the key that named it; (None, None) when none is named. JaasError (a ConfigError)
    names the file, line, entry and reason of a bad one."""
    env = os.environ if environ is None else environ
    location = jaas_file_location(props.raw, env)
    if location is None:
        return None, None
    path, key = location
    return load_jaas_file(path, key=key, system_properties=java_system_properties(env)), key


def jaas_login(
    props: Properties, listener: str, mechanism: str, *, role: Literal["server", "client"] = "server", environ: Mapping[str, str] | None = None
) -> JaasLogin:
    """Kafka's lookup of the login modules of `listener` and `mechanism`: the property
    `listener.name.<l>.<mech>.sasl.jaas.config`, then the JAAS file's `<l>.KafkaServer` entry, then `KafkaServer`
    (proxy.net.sasl.jaas.select_login). The proxy's own login to the controller listener (`role="client"`) is looked
    up the same way, as a Kafka broker looks up its login to the controllers."""
    if jaas_property_key(listener, mechanism) in props.raw:
        return select_login(props.raw, listener, mechanism, role=role)  # the property wins: the file is not read
    parsed, key = jaas_file(props, environ)
    return select_login(props.raw, listener, mechanism, parsed, file_key=key, role=role)


def username_password(
    props: Properties, listener: str, mechanism: str, module: str, start: Callable[[str, str, str], ClientExchange]
) -> UsernamePasswordLogin:
    """The proxy's own login with the username and password of the controller listener's JAAS login for `mechanism`
    (the property, else the JAAS file's `<controller listener>.KafkaServer` or `KafkaServer` entry)."""
    login = jaas_login(props, listener, mechanism, role="client")
    found = login.module
    where = "" if login.source == login.key else f"{login.source}: "
    if found is None or found.module != module:
        raise ConfigError(login.key, "[hidden]", f"{where}expected {module}")
    username = found.options.get("username")
    password = found.options.get("password")
    if not username or password is None:
        raise ConfigError(login.key, "[hidden]", f"{where}the proxy's login needs username and password options")
    return UsernamePasswordLogin(mechanism, username, password, start)


__all__ = [
    "STARTED_UNWATCHED",
    "AuthenticationFailed",
    "ClientExchange",
    "ClientLogin",
    "Mechanism",
    "ServerExchange",
    "ServerMechanism",
    "TaskStarted",
    "UsernamePasswordLogin",
    "jaas_file",
    "jaas_key",
    "jaas_login",
    "refuse_custom_callback_handler",
    "username_password",
]
