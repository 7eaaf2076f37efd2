"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512: their settings (a credentials file per listener), server side and client side.

The RFC 5802 exchanges live in proxy/net/sasl/scram_server.py and scram_client.py, on scram.py's primitives;
this module fits them to the mechanism contract of proxy/net/sasl/mechanisms.py.
"""

import os
from dataclasses import dataclass, field

from proxy.net.sasl.client import LoginFailed
from proxy.net.sasl.credential_source import ScramCredentialSource
from proxy.net.sasl.credentials import DEFAULT_KEY as SCRAM_CREDENTIALS_KEY
from proxy.net.sasl.jaas import SCRAM_LOGIN_MODULE
from proxy.net.sasl.mechanisms import (
    STARTED_UNWATCHED,
    AuthenticationFailed,
    ServerExchange,
    TaskStarted,
    UsernamePasswordLogin,
    jaas_key,
    jaas_login,
    refuse_custom_callback_handler,
    username_password,
)
from proxy.net.sasl.scram import MECHANISMS as SCRAM_MECHANISMS
from proxy.net.sasl.scram import ScramError, unescape_username
from proxy.net.sasl.scram_client import ScramClient
from proxy.net.sasl.scram_server import ScramServer
from proxy.net.sasl.system_properties import jaas_file_location
from proxy.net.sasl.token_cache import TokenCache
from proxy.properties import ConfigError, Properties

# -- the server side ---------------------------------------------------------------------


class ScramExchange:
    def __init__(self, server: ScramServer) -> None:
        self._server = server

    @property
    def complete(self) -> bool:
        return self._server.complete

    @property
    def user(self) -> str | None:
        return self._server.username

    @property
    def credential_expiry_ms(self) -> int | None:
        return self._server.token_expiry_ms  # a delegation token's expiry; a password does not expire

    @property
    def token_authenticated(self) -> bool:
        return self._server.token_authenticated

    @property
    def authentication_id(self) -> str | None:
        return None  # the principal's name is the one the credential proved

    def evaluate(self, token: bytes) -> bytes:
        try:
            return self._server.evaluate(token)
        except ScramError as exc:
            raise AuthenticationFailed(exc.error_message, exc.reason, answered=exc.answered) from None


@dataclass(frozen=True, eq=False)  # one per listener; SCRAM's two names share it
class ScramServerSide:
    credentials: ScramCredentialSource = field(repr=False)
    """The listener's credentials file, re-read when it changes (`envelope-proxy scram add-user`)."""
    tokens: TokenCache = field(default_factory=TokenCache, repr=False)
    """The delegation tokens a `tokenauth=true` login may name, kept current by the proxy (proxy/forward/token_mirror.py)."""

    def exchange(self, mechanism: str) -> ServerExchange:
        return ScramExchange(ScramServer(mechanism, self.credentials.lookup(mechanism), tokens=self.tokens.login(mechanism)))

    def attempted_user(self, mechanism: str, first_token: bytes) -> str | None:
        # client-first: gs2 header (2 attributes), then n=<saslname>,r=<nonce>
        attributes = first_token.decode("utf-8", "replace").split(",")
        if len(attributes) < 3 or not attributes[2].startswith("n="):
            return None
        try:
            return unescape_username(attributes[2][2:])
        except ValueError:
            return attributes[2][2:]

    def effective(self) -> dict[str, object]:
        return {"sasl.scram.credentials": self.credentials.effective()}

    async def run(self, *, task_status: TaskStarted = STARTED_UNWATCHED) -> None:
        task_status.started()


# -- the client side: the proxy's own login -------------------------------------------------


class ScramLogin:
    """Also checks the server's final signature, so a controller that does not hold our keys is not trusted."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self._client = ScramClient(mechanism, username, password)
        self._sent_final = False

    def initial(self) -> bytes:
        return self._client.first()

    def respond(self, challenge: bytes) -> bytes | None:
        try:
            if not self._sent_final:
                self._sent_final = True
                return self._client.final(challenge)
            self._client.verify(challenge)
        except ScramError as exc:
            raise LoginFailed(str(exc)) from None
        return None


# -- the settings ---------------------------------------------------------------------------


class Scram:
    names = tuple(SCRAM_MECHANISMS)

    def server(self, props: Properties, listener: str, enabled: tuple[str, ...]) -> ScramServerSide:
        for mechanism in enabled:
            refuse_custom_callback_handler(props, listener, mechanism)
            # Kafka's SCRAM server reads no JAAS option (users live in the credentials file), but a login it finds must
            # fit: the property (ScramLoginModule), else the JAAS file's <listener>.KafkaServer or KafkaServer entry.
            # With neither the property nor a file, accepted (Kafka would refuse to start).
            if props.get(jaas_key(listener, mechanism)) is not None or jaas_file_location(props.raw, os.environ) is not None:
                jaas_login(props, listener, mechanism)
        file_key = props.listener_key(listener, SCRAM_CREDENTIALS_KEY)
        path = props.listener_value(listener, SCRAM_CREDENTIALS_KEY)
        if not path:
            raise ConfigError(
                file_key,
                path,
                f"listener {listener} enables {', '.join(enabled)} but names no credentials file (create one with envelope-proxy scram add-user)",
            )
        return ScramServerSide(ScramCredentialSource(path, file_key))

    def client(self, props: Properties, listener: str, mechanism: str) -> UsernamePasswordLogin:
        return username_password(props, listener, mechanism, SCRAM_LOGIN_MODULE, ScramLogin)


SCRAM = Scram()

__all__ = ["SCRAM", "ScramExchange", "ScramLogin", "ScramServerSide"]
