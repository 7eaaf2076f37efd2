"""Kafka's rules for delegation-token requests that do not depend on where the tokens live (pure).

Shared by the proxy, which checks on its listeners what a Kafka 4.3 broker's KafkaApis checks before it forwards
a token request (or answers DescribeDelegationToken), and by the embedded controller, which checks what
ControllerApis checks for a forwarded or direct one.
"""

from typing import Any

from authz.model import RequestContext
from envelope.principal import ANONYMOUS, Principal

USER_TYPE = "User"


def same_principal(a: Principal, b: Principal) -> bool:
    """KafkaPrincipal.equals: type and name (not whether it logged in with a token)."""
    return (a.type, a.name) == (b.type, b.name)


def token_requests_allowed(ctx: RequestContext, *, broker: bool = False) -> bool:
    """allowTokenRequests of ControllerApis (or of a broker's KafkaApis, `broker`): never for a principal that logged in
    with a token; a direct request (a broker's: any) not over PLAINTEXT, nor over SSL without a client certificate."""
    if ctx.principal.token_authenticated:
        return False
    direct = broker or ctx.forwarding_principal is None
    protocol = ctx.security_protocol.upper()
    return not (direct and (protocol == "PLAINTEXT" or (protocol == "SSL" and same_principal(ctx.principal, ANONYMOUS))))


def owner_or_renewer(owner: Principal, requester: Principal, renewers: tuple[Principal, ...], principal: Principal) -> bool:
    """TokenInformation.ownerOrRenewer: the owner, the requester (KIP-373) or a renewer; who may describe a token
    without an ACL."""
    return any(same_principal(p, principal) for p in (owner, requester, *renewers))


def create_token_answer(code: int, owner: Principal, requester: Principal, times: int) -> dict[str, Any]:
    """CreateDelegationTokenResponse.prepareResponse without a token: the owner and requester it was asked for, every
    time `times`."""
    return {
        "throttle_time": 0,
        "error_code": code,
        "principal_type": owner.type,
        "principal_name": owner.name,
        "token_requester_principal_type": requester.type,
        "token_requester_principal_name": requester.name,
        "issue_timestamp": times,
        "expiry_timestamp": times,
        "max_timestamp": times,
        "token_id": "",
        "hmac": b"",
    }


def expiry_answer(code: int, expiry: int) -> dict[str, Any]:
    """Renew/ExpireDelegationTokenResponse."""
    return {"throttle_time": 0, "error_code": code, "expiry_timestamp": expiry}


__all__ = ["USER_TYPE", "create_token_answer", "expiry_answer", "owner_or_renewer", "same_principal", "token_requests_allowed"]
