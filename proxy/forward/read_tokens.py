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


def _principal(kind: Any, name: Any) -> Principal:
    return Principal(str(kind), str(name))


def _accesses(token: Any) -> list[ResourceAccess]:
    """The two ACLs that let a stranger see `token`, in filterToken's order."""
    owner = _principal(token.principal_type, token.principal_name)
    return [
        ResourceAccess(ResourceType.DELEGATION_TOKEN, str(token.token_id), PatternType.LITERAL, Operation.DESCRIBE),
        ResourceAccess(ResourceType.USER, str(owner), PatternType.LITERAL, Operation.DESCRIBE_TOKENS),
    ]


def _own(token: Any, caller: Principal) -> bool:
    owner = _principal(token.principal_type, token.principal_name)
    requester = _principal(token.token_requester_principal_type, token.token_requester_principal_name)
    renewers = tuple(_principal(r.principal_type, r.principal_name) for r in token.renewers)
    return owner_or_renewer(owner, requester, renewers, caller)


async def answer(path: ReadPath, ctx: RequestContext, listener: ListenerConfig, header: RequestHeaderInfo, body: Any) -> ReadResult:
    empty = {"throttle_time": 0, "tokens": []}
    if not token_requests_allowed(ctx, broker=True):
        refused = ErrorCode.delegation_token_request_not_allowed
        return ReadResult(path.encode(header, {**empty, "error_code": refused}), [], [], refused, NOT_ALLOWED, refused=True)
    try:
        response = await path.upstream_call(header.api_key, header.api_version, as_dict(body))
    except ReadUnavailable as exc:
        log.warning("DescribeDelegationToken for %s: %s", ctx.principal, exc)
        failed = ErrorCode.unknown_server_error
        return ReadResult(path.encode(header, {**empty, "error_code": failed}), [], [], failed, str(exc))
    code = int(response.error_code)
    tokens = list(response.tokens)
    strangers = [token for token in tokens if not _own(token, ctx.principal)]
    accesses = [access for token in strangers for access in _accesses(token)]
    decisions = iter(await path.allowed(ctx, accesses)) if accesses else iter(())
    allowed_strangers = {id(token) for token in strangers if any([next(decisions), next(decisions)])}
    kept = [as_dict(token) for token in tokens if id(token) in allowed_strangers or _own(token, ctx.principal)]
    hidden = len(tokens) - len(kept)
    if hidden:
        log.debug("DescribeDelegationToken for %s: %d tokens it may not describe left out", ctx.principal, hidden)
    # The upstream's throttle is the proxy's own quota there, not this client's.
    values = {"throttle_time": 0, "error_code": code, "tokens": kept}
    message = None if code == ErrorCode.none else f"the read upstream answered {code}"
    # The audit names no token: an id is as good as a password to whoever holds the HMAC, and the HMAC stays out.
    return ReadResult(path.encode(header, values), [], [], code, message)
