"""Connection events: audit records of type `io.github.kafka-envelope-proxy.connection` (docs/audit-schema.md).

One connection gives `connected`, then `authenticated` (SASL or SSL) or
`authentication-failed`, then `disconnected` with its cause; a connection refused
as a whole gives `refused` (proxy/refusals.py).
"""

import uuid
from typing import Any

from proxy.audit import CONNECTION_EVENT_TYPE, make_record
from proxy.scram import MECHANISMS as SCRAM_MECHANISMS
from proxy.scram import unescape_username

CONNECTED = "connected"
REFUSED = "refused"
AUTHENTICATED = "authenticated"
AUTHENTICATION_FAILED = "authentication-failed"
DISCONNECTED = "disconnected"

# Why a connection ended (`data.connection.cause` of `disconnected`).
CAUSE_CLIENT = "client"
CAUSE_IDLE = "idle"
CAUSE_SHUTDOWN = "shutdown"
CAUSE_AUTHENTICATION_FAILED = "authentication-failed"
CAUSE_PROTOCOL_ERROR = "protocol-error"
CAUSE_VERSIONS_CHANGED = "versions-changed"
CAUSE_PRIVILEGED_PRINCIPAL = "privileged-principal"
CAUSE_ERROR = "error"

SASL_AUTHENTICATION_FAILED = 58
_MAX_USER_LENGTH = 256  # an unauthenticated peer chooses it: keep records and logs bounded


def connection_record(
    node_id: int,
    stage: str,
    *,
    listener: str,
    security_protocol: str,
    host: str,
    port: int,
    connection_id: str | None,
    principal: str | None = None,
    mechanism: str | None = None,
    authorization: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
    timings: dict[str, float] | None = None,
    cause: str | None = None,
    duration_ms: float | None = None,
    requests: int | None = None,
    software: tuple[str | None, str | None] = (None, None),
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "requestId": str(uuid.uuid4()),
        "stage": stage,
        "methodName": "kafka.Connection",
        "apiKey": None,
        "apiVersion": None,
        "authenticationInfo": {
            "principal": principal,
            "mechanism": mechanism,
            "listener": listener,
            "securityProtocol": security_protocol,
        },
        "forwardingPrincipal": None,
        "requestMetadata": {
            "clientAddress": host,
            "clientPort": port,
            "clientId": None,
            "clientSoftwareName": software[0],
            "clientSoftwareVersion": software[1],
            "correlationId": None,
            "connectionId": connection_id,
        },
        "resources": [],
        "authorizationInfo": authorization,
        "result": result,
        "timings": timings,
        "upstream": None,
        "connection": {
            "cause": cause,
            "durationMs": None if duration_ms is None else round(duration_ms, 3),
            "requests": requests,
        },
    }
    return make_record(node_id, None, data, event_type=CONNECTION_EVENT_TYPE)


def authentication_failed_result(error_code: int = SASL_AUTHENTICATION_FAILED) -> dict[str, Any]:
    return {"status": "REFUSED", "envelopeErrorCode": None, "errorCode": error_code, "errors": []}


def attempted_user(mechanism: str, token: bytes | None) -> str | None:
    """The user name a client tried to log in as, read from its first SASL token; None when it cannot be told."""
    if not token:
        return None
    user: str | None = None
    if mechanism == "PLAIN":
        parts = token.split(b"\x00")
        if len(parts) == 3:
            user = parts[1].decode("utf-8", "replace")
    elif mechanism in SCRAM_MECHANISMS:
        # client-first: gs2 header (2 attributes), then n=<saslname>,r=<nonce>
        attributes = token.decode("utf-8", "replace").split(",")
        if len(attributes) >= 3 and attributes[2].startswith("n="):
            try:
                user = unescape_username(attributes[2][2:])
            except ValueError:
                user = attributes[2][2:]
    if not user:
        return None
    return user[:_MAX_USER_LENGTH]
