"""What a Kafka 4.3 broker checks itself before it forwards a token request (KafkaApis), checked at the proxy's edge.

A Kafka controller trusts a forwarded token request more than a direct one: ControllerApis refuses a
token-authenticated principal, but allows a forwarded request that came over PLAINTEXT or one-way SSL. The broker is
the one that refuses those, before forwarding, and so is the proxy. In KafkaApis' order:

- CreateDelegationToken: the owner is read first (an owner name without a type fails there:
  UNKNOWN_SERVER_ERROR); then a connection that may not ask for tokens (logged in with a token, PLAINTEXT, SSL
  without a client certificate) is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; a token for another owner without
  CREATE_TOKENS on that owner (a USER resource) DELEGATION_TOKEN_AUTHORIZATION_FAILED; a renewer that is not a User
  INVALID_PRINCIPAL_TYPE. The answers name the owner and requester, every time -1.
- RenewDelegationToken, ExpireDelegationToken: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as above, expiry -1.

CREATE_TOKENS is decided by the edge authorizer when it has a policy that decides (`acl` or a plug-in); with the
default `deny` the controller's own identical check decides it after forwarding.
"""

from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Operation, PatternType, RequestContext, ResourceType
from authz.actions import ResourceAccess
from authz.admin_apis import ERROR_TIMESTAMP, token_error_answer
from authz.token_rules import USER_TYPE, create_token_answer, expiry_answer, same_principal, token_requests_allowed
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import encode_response, response_schema
from envelope.header import RequestHeaderInfo
from envelope.principal import Principal
from proxy.forward.edge_authz import EdgeAuthorizer

TOKEN_CHANGES = frozenset({ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN})

NOT_ALLOWED = "delegation tokens may not be requested on this connection (logged in with a token, PLAINTEXT, or SSL without a client certificate)"


@dataclass(frozen=True)
class EdgeTokenAnswer:
    """The broker's own answer: the error code, why (for the audit), the answer frame and what it was decided on."""

    code: int
    reason: str
    frame: bytes
    resources: list[ResourceAccess]


def _encode(header: RequestHeaderInfo, values: dict[str, Any]) -> bytes:
    return encode_response(build_entity(response_schema(header.api_key, header.api_version), values), correlation_id=header.correlation_id)


async def broker_answer(edge: EdgeAuthorizer, ctx: RequestContext, header: RequestHeaderInfo, body: Any) -> EdgeTokenAnswer | None:
    """The answer a Kafka broker gives this token request itself, or None when it forwards it."""
    if header.api_key != ApiKey.CREATE_DELEGATION_TOKEN:
        if token_requests_allowed(ctx, broker=True):
            return None
        frame = _encode(header, expiry_answer(ErrorCode.delegation_token_request_not_allowed, ERROR_TIMESTAMP))
        return EdgeTokenAnswer(ErrorCode.delegation_token_request_not_allowed, NOT_ALLOWED, frame, [])
    requester = Principal(ctx.principal.type, ctx.principal.name)
    owner_name = getattr(body, "owner_principal_name", None)
    owner_type = getattr(body, "owner_principal_type", None)
    if owner_name and owner_type is None:
        # `new KafkaPrincipal(null, name)` throws before any check: the request's error answer
        values = {"throttle_time": 0, **token_error_answer(body, {"error_code": ErrorCode.unknown_server_error, "error_message": None})}
        return EdgeTokenAnswer(ErrorCode.unknown_server_error, "an owner name without an owner type", _encode(header, values), [])
    owner = Principal(str(owner_type), str(owner_name)) if owner_name else requester

    def refuse(code: int, reason: str, resources: list[ResourceAccess]) -> EdgeTokenAnswer:
        return EdgeTokenAnswer(code, reason, _encode(header, create_token_answer(code, owner, requester, ERROR_TIMESTAMP)), resources)

    if not token_requests_allowed(ctx, broker=True):
        return refuse(ErrorCode.delegation_token_request_not_allowed, NOT_ALLOWED, [])
    if not same_principal(owner, requester) and edge.decides:
        access = ResourceAccess(ResourceType.USER, str(owner), PatternType.LITERAL, Operation.CREATE_TOKENS)
        (allowed,) = await edge.allowed(ctx, [access])
        if not allowed:
            return refuse(ErrorCode.delegation_token_authorization_failed, f"no CREATE_TOKENS on {owner}", [access])
    if any(str(renewer.principal_type) != USER_TYPE for renewer in body.renewers):
        return refuse(ErrorCode.invalid_principal_type, "a renewer that is not a User", [])
    return None
