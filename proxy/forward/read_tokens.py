"""DescribeDelegationToken, answered as a Kafka 4.3 broker answers it (KafkaApis.handleDescribeTokensRequest).

A broker answers it from its own token cache; a Kafka controller does not serve it. The proxy asks the read
upstream under its own identity, for the owners the client named, and keeps what Kafka's
DelegationTokenManager.filterToken lets this client see: its own tokens (as owner, requester or renewer), and those
it may DESCRIBE as a DELEGATION_TOKEN resource or whose owner it may DESCRIBE_TOKENS (a USER resource). A token
(and so its HMAC) the client may not describe is never in its answer. Before asking, the broker's own refusal: a
connection that logged in with a token, PLAINTEXT, or SSL without a client certificate gets
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED. The proxy's principal must itself be allowed to describe every token
(a super user, or DESCRIBE_TOKENS on the owners), and the read upstream must be a broker listener that is neither
PLAINTEXT nor one-way SSL.
"""

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Operation, PatternType, RequestContext, ResourceType
from authz.actions import ResourceAccess
from authz.token_rules import owner_or_renewer, token_requests_allowed
from envelope.header import RequestHeaderInfo
from envelope.principal import Principal
from proxy.forward.reads import ReadPath, ReadResult, ReadUnavailable, as_dict
from proxy.forward.token_checks import NOT_ALLOWED
from proxy.net.settings import ListenerConfig

log = logging.getLogger(__name__)


NEWEST = 3
"""The version the upstream is asked at (capped at what it serves): v3 (KIP-373) added each token's requester, which
a broker's filterToken counts as one of the token's own at every version the client asks."""
NO_REQUESTER = ""
"""DescribedDelegationToken's TokenRequesterPrincipalType/Name below v3: absent, read as Kafka's default, ""."""


def _principal(kind: Any, name: Any) -> Principal:
    return Principal(str(kind), str(name))


def _requester(token: Any) -> Principal:
    """The token's requester, or a principal nobody is when the upstream answered below v3."""
    kind = getattr(token, "token_requester_principal_type", NO_REQUESTER)
    return _principal(kind, getattr(token, "token_requester_principal_name", NO_REQUESTER))


def _described(token: Any) -> dict[str, Any]:
    """A token as the client's version lists it; a requester the upstream did not name (below v3) is Kafka's default."""
    requester = _requester(token)
    return {**as_dict(token), "token_requester_principal_type": requester.type, "token_requester_principal_name": requester.name}


def _accesses(token: Any) -> list[ResourceAccess]:
    """The two ACLs that let a stranger see `token`, in filterToken's order."""
    owner = _principal(token.principal_type, token.principal_name)
    return [
        ResourceAccess(ResourceType.DELEGATION_TOKEN, str(token.token_id), PatternType.LITERAL, Operation.DESCRIBE),
        ResourceAccess(ResourceType.USER, str(owner), PatternType.LITERAL, Operation.DESCRIBE_TOKENS),
    ]


def _own(token: Any, caller: Principal) -> bool:
    owner = _principal(token.principal_type, token.principal_name)
    requester = _requester(token)
    renewers = tuple(_principal(r.principal_type, r.principal_name) for r in token.renewers)
    return owner_or_renewer(owner, requester, renewers, caller)


def error_answer(_: Any, error: dict[str, Any]) -> dict[str, Any]:
    """DescribeDelegationTokenRequest.getErrorResponse: the code (no message field), no token."""
    return {"error_code": error["error_code"], "tokens": []}


async def answer(path: ReadPath, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
    if not token_requests_allowed(ctx, broker=True):
        refused = ErrorCode.delegation_token_request_not_allowed
        values = {"throttle_time": 0, **error_answer(body, {"error_code": refused})}
        return ReadResult(path.encode(header, values), [], [], refused, NOT_ALLOWED, refused=True)
    try:
        # The owners filter reads the same at every version: ask at the newest the upstream serves, so that each
        # token's requester is known whatever version the client speaks (the answer is built at the client's).
        response = await path.upstream_call(header.api_key, max(header.api_version, NEWEST), as_dict(body))
    except ReadUnavailable as exc:
        log.warning("DescribeDelegationToken for %s: %s", ctx.principal, exc)
        failed = ErrorCode.unknown_server_error
        return ReadResult(path.encode(header, {"throttle_time": 0, **error_answer(body, {"error_code": failed})}), [], [], failed, str(exc))
    code = int(response.error_code)
    tokens = list(response.tokens)
    strangers = [token for token in tokens if not _own(token, ctx.principal)]
    accesses = [access for token in strangers for access in _accesses(token)]
    decisions = iter(await path.allowed(ctx, accesses)) if accesses else iter(())
    allowed_strangers = {id(token) for token in strangers if any([next(decisions), next(decisions)])}
    kept = [_described(token) for token in tokens if id(token) in allowed_strangers or _own(token, ctx.principal)]
    hidden = len(tokens) - len(kept)
    if hidden:
        log.debug("DescribeDelegationToken for %s: %d tokens it may not describe left out", ctx.principal, hidden)
    # The upstream's throttle is the proxy's own quota there, not this client's.
    values = {"throttle_time": 0, "error_code": code, "tokens": kept}
    message = None if code == ErrorCode.none else f"the read upstream answered {code}"
    # The audit names no token: an id is as good as a password to whoever holds the HMAC, and the HMAC stays out.
    return ReadResult(path.encode(header, values), [], [], code, message)
