"""Server side SASL (SaslHandshake v0-1, SaslAuthenticate v0-2) for PLAIN."""

import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from envelope.apis import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE
from envelope.build import build_entity
from envelope.codec import decode_body, encode_response, response_schema
from envelope.errors import ProtocolError
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import ANONYMOUS, Principal
from proxy.connection import KafkaConnection
from proxy.listener_config import ListenerConfig, TransportSettings

log = logging.getLogger(__name__)

UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58


@dataclass(frozen=True)
class Authenticated:
    principal: Principal
    mechanism: str | None


class AuthenticationFailed(Exception):
    pass


ApiVersionsAnswer = Callable[[RequestHeaderInfo, bytes], Awaitable[None]]


def verify_plain(token: bytes, users: dict[str, str]) -> str:
    """The authenticated user name of a PLAIN token, or AuthenticationFailed."""
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
    try:
        authzid, user, password = (part.decode("utf-8") for part in parts)
    except UnicodeDecodeError:
        raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
    if not user:
        raise AuthenticationFailed("Authentication failed: username not specified")
    if authzid and authzid != user:
        raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is different from username")
    expected = users.get(user)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise AuthenticationFailed("Authentication failed: Invalid username or password")
    return user


class SaslServer:
    """Runs the pre-authentication exchange on one connection."""

    def __init__(
        self, conn: KafkaConnection, listener: ListenerConfig, answer_api_versions: ApiVersionsAnswer, *, failure_delay: float
    ) -> None:
        self.conn = conn
        self.listener = listener
        self.answer_api_versions = answer_api_versions
        self.failure_delay = failure_delay

    async def run(self) -> Authenticated | None:
        """The session's principal, or None when the connection must close."""
        mechanism: str | None = None
        handshake_version = -1
        while True:
            frame = await self.conn.receive_frame()
            if frame is None:
                return None
            if mechanism is not None and handshake_version == 0:
                # SaslHandshake v0: raw tokens follow, no Kafka header.
                return await self._finish(None, frame, mechanism)
            header = peek_request_header(frame)
            if header.api_key == API_VERSIONS and mechanism is None:
                await self.answer_api_versions(header, frame)
            elif header.api_key == SASL_HANDSHAKE and mechanism is None:
                body = decode_body(header.api_key, header.api_version, frame, header.header_size)
                requested = str(body.mechanism).upper()
                ok = requested in self.listener.sasl_mechanisms
                await self._respond(
                    header, {"error_code": 0 if ok else UNSUPPORTED_SASL_MECHANISM, "mechanisms": list(self.listener.sasl_mechanisms)}
                )
                if not ok:
                    log.info(
                        "connection %s from %s: unsupported SASL mechanism %s", self.conn.connection_id, self.conn.peer.host, requested
                    )
                    return None
                mechanism, handshake_version = requested, header.api_version
            elif header.api_key == SASL_AUTHENTICATE and mechanism is not None:
                body = decode_body(header.api_key, header.api_version, frame, header.header_size)
                return await self._finish(header, bytes(body.auth_bytes), mechanism)
            else:
                log.info(
                    "connection %s from %s: api %s before SASL authentication (ILLEGAL_SASL_STATE), closing",
                    self.conn.connection_id,
                    self.conn.peer.host,
                    header.api_key,
                )
                return None

    async def _respond(self, header: RequestHeaderInfo, values: dict[str, object]) -> None:
        body = build_entity(response_schema(header.api_key, header.api_version), values)
        await self.conn.send(encode_response(body, correlation_id=header.correlation_id))

    async def _finish(self, header: RequestHeaderInfo | None, token: bytes, mechanism: str) -> Authenticated | None:
        """Verify the token and answer; `header` is None for SaslHandshake v0's raw tokens."""
        try:
            principal = Principal("User", verify_plain(token, self.listener.plain_users))
        except AuthenticationFailed as exc:
            if header is not None:
                failure = {"error_code": SASL_AUTHENTICATION_FAILED, "error_message": str(exc), "auth_bytes": b"", "session_lifetime": 0}
                await self._respond(header, failure)
            log.info("connection %s from %s: %s", self.conn.connection_id, self.conn.peer.host, exc)
            await trio.sleep(self.failure_delay)
            return None
        if header is None:
            await self.conn.send(b"")
        else:
            await self._respond(header, {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime": 0})
        return Authenticated(principal, mechanism)


async def authenticate(
    conn: KafkaConnection, listener: ListenerConfig, transport: TransportSettings, answer_api_versions: ApiVersionsAnswer
) -> Authenticated | None:
    """The session's principal: ANONYMOUS on PLAINTEXT, the SASL login otherwise (None = close).

    Frames are capped at `sasl.server.max.receive.size` until the login succeeds.
    """
    if not listener.uses_sasl:
        return Authenticated(ANONYMOUS, None)
    conn.reader.max_frame_size = transport.sasl_max_receive_size
    result = await SaslServer(conn, listener, answer_api_versions, failure_delay=transport.failed_auth_delay).run()
    conn.reader.max_frame_size = transport.max_frame_size
    return result


__all__ = ["Authenticated", "ProtocolError", "SaslServer", "authenticate", "verify_plain"]
