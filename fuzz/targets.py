"""The decode paths under test, called exactly as the proxy and the embedded controller call them,
and the embedded controller's request handlers behind them.

A target returns normally or raises ProtocolError (a refusal); any other
exception is a bug, and an abort or out-of-memory kills the worker process.

Two families: `decoders` (every request and response the proxy reads) and
`controller` (each request the embedded controller serves, decoded and then
handled, as a super user, as a user with some ACLs and as one with none,
against a small image, its answer built and encoded as the controller would).
No assert, KeyError or enum error may stand between a client and its answer.
"""

import ipaddress
import struct
import uuid
from collections.abc import Callable

from apiversions import kio_range, parse_response
from authz import AclAuthorizer, AclBinding, Operation, PatternType, PermissionType, RequestContext, ResourceType
from authz.admin_apis import SERVED_ADMIN_APIS, answer_scan, resources_of
from authz.model import CLUSTER_NAME
from controller.delegation_tokens import TokenSettings
from controller.handlers import Handlers
from controller.image import MetadataImage, Topic
from controller.leadership import Leadership
from envelope.answer_scan import scan_answer
from envelope.apis import FORWARDABLE, ApiKey
from envelope.build import build_entity
from envelope.codec import (
    decode_body,
    decode_response_body,
    encode_response,
    request_header_version,
    request_schema,
    response_header_version,
    response_schema,
)
from envelope.errors import ProtocolError, UnsupportedApiError
from envelope.header import peek_request_header
from envelope.principal import Principal, deserialize_principal, serialize_principal
from envelope.wrap import unwrap, unwrap_request, wrap
from fuzz.jaas import targets as jaas_family
from fuzz.oauthbearer import targets as oauthbearer_family
from fuzz.proxy_header import targets as proxy_header_family
from fuzz.target import Target
from proxy.forward.forwarding import decoded_response_errors
from proxy.forward.service import own_ranges


def decode_client_request(frame: bytes) -> None:
    """What a proxy session or the embedded controller does with one request frame."""
    header = peek_request_header(frame)
    if header.api_key == ApiKey.ENVELOPE:
        _, parts = unwrap_request(frame)
        frame = parts.request_data
        header = peek_request_header(frame)
    body_value = decode_body(header.api_key, header.api_version, frame, header.header_size, allow_trailing=header.api_key != ApiKey.SASL_AUTHENTICATE)
    if header.api_key in FORWARDABLE:
        resources_of(header.api_key, body_value)


def decode_controller_response(api_key: int, api_version: int) -> Callable[[bytes], None]:
    def decode(frame: bytes) -> None:
        if api_key == ApiKey.ENVELOPE:
            unwrap(frame)
        elif api_key == ApiKey.API_VERSIONS:
            parse_response(frame, api_version)
        elif api_key in SERVED_ADMIN_APIS:
            outcome_errors_agree(api_key, api_version, frame)
        else:
            decode_response_body(api_key, api_version, frame)

    return decode


def outcome_errors_agree(api_key: int, api_version: int, frame: bytes) -> None:
    """What the outcome reads of a forwarded API's answer: the one-pass scan must give the full decode's errors, or give
    up; a difference is a bug (an AssertionError, counted as an error). A refusal is the full decode's ProtocolError."""
    plan = answer_scan(api_key, api_version)
    scanned = None if plan is None else scan_answer(plan, frame)
    try:
        decoded = decoded_response_errors(api_key, api_version, frame)
    except ProtocolError:
        if scanned is not None:
            raise AssertionError(f"the scan read {scanned} from an answer the full decode refuses") from None
        raise
    if scanned is not None and scanned != decoded:
        raise AssertionError(f"the scan read {scanned}, the full decode {decoded}")


def _request_prefix(api_key: int, version: int) -> bytes:
    """Request header v1 (v2 adds an empty tagged-field section), client id "fuzz"."""
    client_id = b"fuzz"
    header = struct.pack(">hhih", api_key, version, 7, len(client_id)) + client_id
    return header + b"\x00" if request_header_version(api_key, version) == 2 else header


def _response_prefix(api_key: int, version: int) -> bytes:
    header = struct.pack(">i", 7)
    return header + b"\x00" if response_header_version(api_key, version) == 1 else header


def targets() -> list[Target]:
    """Every served request version, the Envelope around each forwardable one, the principal, and the responses the proxy reads."""
    found: list[Target] = []
    for api_key, served in own_ranges().items():
        for version in range(served.min, served.max + 1):
            schema = request_schema(api_key, version)
            found.append(Target(f"request {api_key} v{version}", schema, _request_prefix(api_key, version), decode_client_request))
            response = response_schema(api_key, version)
            prefix = _response_prefix(api_key, version)
            found.append(Target(f"response {api_key} v{version}", response, prefix, decode_controller_response(api_key, version)))
    return found


def envelope_of(request: bytes) -> bytes:
    return wrap(request, Principal("User", "alice"), "127.0.0.1", correlation_id=9, client_id="fuzz")


def principal_bytes() -> bytes:
    return serialize_principal(Principal("User", "alice"))


def decode_principal(data: bytes) -> None:
    deserialize_principal(data)


SUPER_USER = Principal("User", "admin")
_CONTEXTS = tuple(
    RequestContext(principal=principal, client_address=ipaddress.ip_address(host), listener="CONTROLLER", security_protocol="SASL_PLAINTEXT")
    for principal, host in ((SUPER_USER, "127.0.0.1"), (Principal("User", "alice"), "127.0.0.2"), (Principal("User", "bob"), "::1"))
)
_ACLS = (
    AclBinding(ResourceType.TOPIC, "orders", PatternType.PREFIXED, "User:alice", "*", Operation.ALL, PermissionType.ALLOW),
    AclBinding(ResourceType.TOPIC, "a", PatternType.LITERAL, "User:alice", "*", Operation.DESCRIBE, PermissionType.DENY),
    AclBinding(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:*", "127.0.0.2", Operation.CREATE, PermissionType.ALLOW),
    AclBinding(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, "User:alice", "*", Operation.ALTER, PermissionType.ALLOW),
    AclBinding(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, "User:alice", "*", Operation.DELETE, PermissionType.DENY),
)
_TOPICS = ("orders", "a", "payments")


def _controller() -> Handlers:
    """A fresh embedded controller's handlers over a small image: each input starts from the same state."""
    image = MetadataImage()
    for number, name in enumerate(_TOPICS, start=1):
        image.topics[name] = Topic(name, uuid.UUID(int=number), number, 1)
    authorizer = AclAuthorizer([str(SUPER_USER)], acls=_ACLS)
    # tokens enabled, so the token handlers are reached past DELEGATION_TOKEN_AUTH_DISABLED
    return Handlers(
        image,
        authorizer,
        leadership=Leadership(1, active_id=1),
        default_partitions=1,
        default_replication_factor=1,
        broker_count=3,
        tokens=TokenSettings("fuzz-secret"),
    )


def handle_controller_request(frame: bytes) -> None:
    """What the embedded controller does with one request frame: decode it, handle it as three callers, encode the answers."""
    header = peek_request_header(frame)
    handlers = _controller()
    handler = handlers.by_key.get(header.api_key)
    if handler is None:
        raise UnsupportedApiError(header.api_key, header.api_version)
    body_value = decode_body(header.api_key, header.api_version, frame, header.header_size, allow_trailing=True)
    schema = response_schema(header.api_key, header.api_version)
    for context in _CONTEXTS:
        encode_response(build_entity(schema, handler(body_value, context)), correlation_id=header.correlation_id)


def controller_targets() -> list[Target]:
    """Every request version the embedded controller serves, through its handlers."""
    handled = _controller().by_key
    found: list[Target] = []
    for api_key in sorted(handled):
        served = kio_range(api_key)
        for version in range(served.min, served.max + 1):
            schema = request_schema(api_key, version)
            found.append(Target(f"controller {api_key} v{version}", schema, _request_prefix(api_key, version), handle_controller_request))
    return found


def jaas_targets() -> list[Target]:
    """The JAAS file, sasl.jaas.config and KAFKA_OPTS parsers (fuzz/jaas.py)."""
    return jaas_family()


def oauthbearer_targets() -> list[Target]:
    """OAUTHBEARER's client-first message, token validator and JWKS parser (fuzz/oauthbearer.py)."""
    return oauthbearer_family()


def proxy_header_targets() -> list[Target]:
    """The PROXY protocol v1/v2 header reader (fuzz/proxy_header.py)."""
    return proxy_header_family()


FAMILIES: dict[str, Callable[[], list[Target]]] = {
    "decoders": targets,
    "controller": controller_targets,
    "jaas": jaas_targets,
    "oauthbearer": oauthbearer_targets,
    "proxy-header": proxy_header_targets,
}


__all__ = [
    "FAMILIES",
    "ProtocolError",
    "Target",
    "controller_targets",
    "decode_client_request",
    "decode_controller_response",
    "decode_principal",
    "envelope_of",
    "handle_controller_request",
    "principal_bytes",
    "targets",
]
