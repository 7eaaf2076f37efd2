"""SASL/PLAIN: its settings (the listener's PlainLoginModule users), its server side and its client side."""

import hmac
from dataclasses import dataclass, field

from proxy.net.sasl.client import ClientExchange
from proxy.net.sasl.jaas import PLAIN_LOGIN_MODULE
from proxy.net.sasl.mechanisms import (
    STARTED_UNWATCHED,
    AuthenticationFailed,
    ServerExchange,
    TaskStarted,
    UsernamePasswordLogin,
    jaas_login,
    refuse_custom_callback_handler,
    username_password,
)
from proxy.properties import Properties

NAME = "PLAIN"


def verify_plain(token: bytes, users: dict[str, str]) -> str:
    """The authenticated user name of a PLAIN token, or AuthenticationFailed with Kafka's message.

    As Kafka's PlainSaslServer (checked against Kafka 4.3.1 by tests/interop/test_hostile_sasl_kafka.py): the token
    is read as UTF-8 with bad bytes replaced (Java's `new String(bytes, UTF_8)`), split at NUL into at most four parts,
    and checked in its order: three parts, a user name, a password, the credentials, then the authorization id."""
    parts = token.decode("utf-8", "replace").split("\x00", 3)
    if len(parts) != 3:
        raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authzid, user, password = parts
    if not user:
        raise AuthenticationFailed("Authentication failed: username not specified")
    if not password:
        raise AuthenticationFailed("Authentication failed: password not specified")
    expected = users.get(user)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise AuthenticationFailed("Authentication failed: Invalid username or password")
    if authzid and authzid != user:
        raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is different from username")
    return user


# -- the server side ---------------------------------------------------------------------


class PlainExchange:
    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.user: str | None = None

    @property
    def complete(self) -> bool:
        return self.user is not None

    @property
    def token_authenticated(self) -> bool:
        return False

    @property
    def credential_expiry_ms(self) -> int | None:
        return None  # a password does not expire

    @property
    def authentication_id(self) -> str | None:
        return None  # the principal's name is the one the credential proved

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("Authentication failed: PLAIN takes a single token")
        self.user = verify_plain(token, self._users)
        return b""


@dataclass(frozen=True, eq=False)  # one per listener; SCRAM's two names share it
class PlainServer:
    users: dict[str, str] = field(repr=False)
    """The `user_<name>="<password>"` options of the listener's PlainLoginModule."""
    source: str = ""
    """Where they were read: the property, or `<file>: entry <name>`."""

    def exchange(self, mechanism: str) -> ServerExchange:
        return PlainExchange(self.users)

    def attempted_user(self, mechanism: str, first_token: bytes) -> str | None:
        parts = first_token.split(b"\x00")
        return parts[1].decode("utf-8", "replace") if len(parts) == 3 else None

    def effective(self) -> dict[str, object]:
        return {"plain.users": {user: "[hidden]" for user in sorted(self.users)}, "plain.jaas.login": self.source}

    async def run(self, *, task_status: TaskStarted = STARTED_UNWATCHED) -> None:
        task_status.started()


# -- the client side: the proxy's own login -------------------------------------------------


class PlainClient:
    def __init__(self, username: str, password: str) -> None:
        self._token = b"\x00" + username.encode() + b"\x00" + password.encode()

    def initial(self) -> bytes:
        return self._token

    def respond(self, challenge: bytes) -> bytes | None:
        return None


def plain_client(mechanism: str, username: str, password: str) -> ClientExchange:
    return PlainClient(username, password)


# -- the settings ---------------------------------------------------------------------------


class Plain:
    names = (NAME,)

    def server(self, props: Properties, listener: str, enabled: tuple[str, ...]) -> PlainServer:
        refuse_custom_callback_handler(props, listener, NAME)
        # The property, else the JAAS file's <listener>.KafkaServer, else KafkaServer (never merged), as Kafka.
        login = jaas_login(props, listener, NAME)
        return PlainServer(login.users, login.source)

    def client(self, props: Properties, listener: str, mechanism: str) -> UsernamePasswordLogin:
        return username_password(props, listener, mechanism, PLAIN_LOGIN_MODULE, plain_client)


PLAIN = Plain()

__all__ = ["PLAIN", "PlainClient", "PlainExchange", "PlainServer", "plain_client", "verify_plain"]
