"""Test fixtures for OAUTHBEARER: RSA and EC keys (cryptography), tokens signed with PyJWT, their JWKS, and a
loopback HTTP server on trio's sockets that answers as a JWKS or token endpoint would, or hangs, or misbehaves."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import h11
import jwt
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://idp.example.com/realms/kafka"
AUDIENCE = "kafka-cluster"


@dataclass
class SigningKey:
    kid: str
    algorithm: str
    private: Any = field(repr=False)

    @property
    def public(self) -> Any:
        return self.private.public_key()

    def jwk(self, **extra: Any) -> dict[str, Any]:
        to_jwk = RSAAlgorithm.to_jwk if self.algorithm.startswith(("RS", "PS")) else ECAlgorithm.to_jwk
        data: dict[str, Any] = json.loads(to_jwk(self.public))
        data.update({"kid": self.kid, "use": "sig", "alg": self.algorithm})
        data.update(extra)
        return data

    def sign(self, claims: dict[str, Any], *, headers: dict[str, Any] | None = None, algorithm: str | None = None) -> str:
        """A JWS over exactly these claims (PyJWS: jwt.encode would refuse or coerce hostile claims)."""
        header = {"kid": self.kid, **(headers or {})}
        return jwt.PyJWS().encode(json.dumps(claims).encode(), self.private, algorithm=algorithm or self.algorithm, headers=header)


_RSA_CACHE: list[rsa.RSAPrivateKey] = []


def rsa_key(kid: str = "rsa-1", algorithm: str = "RS256", *, bits: int = 2048) -> SigningKey:
    if bits != 2048:
        return SigningKey(kid, algorithm, rsa.generate_private_key(public_exponent=65537, key_size=bits))
    if len(_RSA_CACHE) < 3:  # generating 2048-bit keys costs ~50 ms each: a small pool, reused round-robin
        _RSA_CACHE.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
        return SigningKey(kid, algorithm, _RSA_CACHE[-1])
    key = _RSA_CACHE.pop(0)
    _RSA_CACHE.append(key)
    return SigningKey(kid, algorithm, key)


def fresh_rsa_key(kid: str, algorithm: str = "RS256") -> SigningKey:
    return SigningKey(kid, algorithm, rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_key(kid: str = "ec-1", algorithm: str = "ES256") -> SigningKey:
    curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}[algorithm]
    return SigningKey(kid, algorithm, ec.generate_private_key(curve))


def jwks(*keys: SigningKey) -> bytes:
    return json.dumps({"keys": [key.jwk() for key in keys]}).encode()


def claims(sub: str = "alice", *, lifetime: int = 300, now: float | None = None, **extra: Any) -> dict[str, Any]:
    issued = int(time.time() if now is None else now)
    found: dict[str, Any] = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": issued, "exp": issued + lifetime, "scope": "profile email"}
    found.update(extra)
    return {name: value for name, value in found.items() if value is not None}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], payload: dict[str, Any], signature: bytes = b"") -> str:
    """A JWS built by hand: `alg: none`, forged headers, or any signature bytes."""
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}.{_b64(signature)}"


def hmac_with_public_key(key: SigningKey, payload: dict[str, Any]) -> str:
    """The classic algorithm confusion: HS256 whose secret is the RSA public key's PEM."""
    pem = key.public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    signing_input = f"{_b64(json.dumps({'alg': 'HS256', 'typ': 'JWT', 'kid': key.kid}).encode())}.{_b64(json.dumps(payload).encode())}"
    return f"{signing_input}.{_b64(hmac.digest(pem, signing_input.encode(), hashlib.sha256))}"


# --------------------------------------------------------------------------- a loopback HTTP server


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    hang: bool = False
    content_length: int | None = None  # announce another length than the body's


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class LoopbackHttp:
    """Answers each request with `respond(request)`; `hang` answers never come. Counts requests."""

    def __init__(self, respond: Callable[[Request], Answer]) -> None:
        self.respond = respond
        self.requests: list[Request] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, stream: trio.SocketStream) -> None:
        connection = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        body = b""
        try:
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    connection.receive_data(bytes(data))
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    return
            assert request is not None
            seen = Request(
                request.method.decode(), request.target.decode(), {bytes(k).decode().lower(): bytes(v).decode() for k, v in request.headers}, body
            )
            self.requests.append(seen)
            answer = self.respond(seen)
            if answer.hang:
                await trio.sleep_forever()
            length = len(answer.body) if answer.content_length is None else answer.content_length
            headers = [("Content-Type", "application/json"), ("Content-Length", str(length)), ("Connection", "close")]
            await stream.send_all(connection.send(h11.Response(status_code=answer.status, headers=headers)) or b"")
            await stream.send_all(answer.body)
        except (trio.BrokenResourceError, h11.RemoteProtocolError):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    async def serve(self, *, task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        await trio.serve_listeners(self._handle, listeners, task_status=task_status)


async def start_http(nursery: trio.Nursery, respond: Callable[[Request], Answer]) -> LoopbackHttp:
    server = LoopbackHttp(respond)
    await nursery.start(server.serve)
    return server
