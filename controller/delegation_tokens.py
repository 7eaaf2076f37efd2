"""Delegation tokens (KIP-48, KIP-373; KRaft since KIP-900): Create, Renew and ExpireDelegationToken (38-40,
forwardable) and DescribeDelegationToken (41, a read).

The three changes follow Kafka 4.3's ControllerApis (the checks before the controller: a token-authenticated
principal, or a direct request over PLAINTEXT or one-way SSL, may not ask, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
a token for another owner needs CREATE_TOKENS on that owner as a USER resource,
DELEGATION_TOKEN_AUTHORIZATION_FAILED) and then its DelegationTokenControlManager, in that order:
`delegation.token.secret.key` unset or empty is DELEGATION_TOKEN_AUTH_DISABLED, a metadata.version before
3.6-IV2 UNSUPPORTED_VERSION; a token is found by its HMAC (HmacSHA512 of the token id keyed by the secret);
only its owner or a renewer may renew or expire it (DELEGATION_TOKEN_OWNER_MISMATCH), a token past its expiry or
its maximum time cannot be renewed (DELEGATION_TOKEN_EXPIRED), and a negative expiry period removes it at once.
Lifetimes are bounded by `delegation.token.max.lifetime.ms` and `delegation.token.expiry.time.ms`, and tokens past
either time are removed every `delegation.token.expiry.check.interval.ms` (`sweep`, called by the server).

Error answers carry what Kafka's carry: the ControllerApis refusals -1 for every time (ERROR_TIMESTAMP), the
control manager's refusals the owner and requester with the times left at 0, and a request Kafka fails on
(an owner name without a type; a principal `Type:name` over 32767 bytes, which its DelegationTokenRecord cannot
hold) the answer of CreateDelegationTokenRequest.getErrorResponse.

DescribeDelegationToken is answered as a Kafka broker answers it (KafkaApis, DelegationTokenManager.filterToken),
for the proxy's read path: a Kafka controller advertises the API on its listener but answers every request
UNKNOWN_SERVER_ERROR, so reads of tokens go to a broker, which the embedded controller stands in for.
"""

from __future__ import annotations

import functools
import hashlib
import hmac as hmac_module
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext, ResourceType
from authz.admin_apis import ERROR_TIMESTAMP, token_error_answer
from authz.token_rules import USER_TYPE, create_token_answer, expiry_answer, owner_or_renewer, same_principal, token_requests_allowed
from controller.authorize import allowed
from controller.changes import Change, change_of
from controller.image import DelegationToken, MetadataImage
from controller.java_order import string_map_order
from envelope import kafka_uuid
from envelope.java_types import LONG_MAX, LONG_VALUES, SHORT_MAX
from envelope.principal import Principal
from proxy.properties import ConfigError, Properties

SECRET_KEY = "delegation.token.secret.key"
MAX_LIFETIME_KEY = "delegation.token.max.lifetime.ms"
EXPIRY_TIME_KEY = "delegation.token.expiry.time.ms"
CHECK_INTERVAL_KEY = "delegation.token.expiry.check.interval.ms"
DEFAULT_MAX_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000
DEFAULT_EXPIRY_TIME_MS = 24 * 60 * 60 * 1000
DEFAULT_CHECK_INTERVAL_MS = 60 * 60 * 1000
DELEGATION_TOKEN_METADATA_VERSION = 14  # MetadataVersion.IBP_3_6_IV2, isDelegationTokenSupported
UNSET_TIME = 0  # what the control manager's answers hold in a time nobody set

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class TokenSettings:
    """`delegation.token.*` as a Kafka controller reads them (DelegationTokenManagerConfigs)."""

    secret_key: str | None = None
    """None (unset or empty): delegation tokens are disabled."""
    max_lifetime_ms: int = DEFAULT_MAX_LIFETIME_MS
    expiry_time_ms: int = DEFAULT_EXPIRY_TIME_MS
    check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    def effective(self) -> dict[str, object]:
        return {
            SECRET_KEY: "[hidden]" if self.secret_key is not None else None,
            MAX_LIFETIME_KEY: self.max_lifetime_ms,
            EXPIRY_TIME_KEY: self.expiry_time_ms,
            CHECK_INTERVAL_KEY: self.check_interval_ms,
        }


def _positive_long(props: Properties, key: str, default: int) -> int:
    value = props.int(key, default, minimum=1)  # ConfigDef Range.atLeast(1)
    if value > LONG_MAX:
        raise ConfigError(key, props.get(key), "not a number of type LONG")
    return value


def parse_token_settings(props: Properties) -> TokenSettings:
    secret = props.get(SECRET_KEY)
    return TokenSettings(
        secret_key=secret or None,
        max_lifetime_ms=_positive_long(props, MAX_LIFETIME_KEY, DEFAULT_MAX_LIFETIME_MS),
        expiry_time_ms=_positive_long(props, EXPIRY_TIME_KEY, DEFAULT_EXPIRY_TIME_MS),
        check_interval_ms=_positive_long(props, CHECK_INTERVAL_KEY, DEFAULT_CHECK_INTERVAL_MS),
    )


@functools.lru_cache(maxsize=65536)
def token_hmac(secret_key: str, token_id: str) -> bytes:
    """DelegationTokenManager.createHmac: HmacSHA512 of the token id (UTF-8), keyed by the secret (UTF-8)."""
    return hmac_module.new(secret_key.encode("utf-8", "surrogatepass"), token_id.encode("utf-8", "surrogatepass"), hashlib.sha512).digest()


def new_token_id() -> str:
    """Uuid.randomUuid().toString(): a random (version 4) UUID as Kafka's text, never reserved, never starting with '-'."""
    while True:
        value = uuid.uuid4()
        text = kafka_uuid.to_text(value)
        if not text.startswith("-"):
            return text


def _saturated_sum(now: int, duration: int) -> int:
    """DelegationTokenControlManager.sum: now + duration, Long.MAX_VALUE where it would overflow."""
    return LONG_MAX if now > LONG_MAX - duration else now + duration


def _java_sum(now: int, duration: int) -> int:
    """now + duration as Java adds two longs (renewDelegationToken does not saturate)."""
    total = (now + duration) % LONG_VALUES
    return total - LONG_VALUES if total > LONG_MAX else total


def _owner_or_renewer(token: DelegationToken, principal: Principal) -> bool:
    """DelegationTokenControlManager.allowedToRenew."""
    return same_principal(token.owner, principal) or any(same_principal(r, principal) for r in token.renewers)


def _may_describe(token: DelegationToken, principal: Principal) -> bool:
    return owner_or_renewer(token.owner, token.requester, token.renewers, principal)


def _plain(principal: Principal) -> Principal:
    return Principal(principal.type, principal.name)


class DelegationTokenHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer, settings: TokenSettings, *, clock: Clock = wall_clock_ms) -> None:
        self.image = image
        self.authorizer = authorizer
        self.settings = settings
        self.clock = clock

    def _hmac(self, token_id: str) -> bytes:
        return token_hmac(self.settings.secret_key or "", token_id)

    def _supported(self) -> bool:
        return self.image.finalized_features.get("metadata.version", DELEGATION_TOKEN_METADATA_VERSION) >= DELEGATION_TOKEN_METADATA_VERSION

    def _token_for(self, hmac: bytes) -> DelegationToken | None:
        """DelegationTokenCache.tokenForHmac."""
        for token_id, token in self.image.delegation_tokens.items():
            if self._hmac(token_id) == hmac:
                return token
        return None

    def _store(self, api: str, ctx: RequestContext | None, token: DelegationToken | None, token_id: str) -> None:
        if token is None:
            del self.image.delegation_tokens[token_id]
        else:
            self.image.delegation_tokens[token_id] = token
        resource = f"delegation-token:{token_id}"
        # the sweep is the controller's own change: no caller
        self.image.record(change_of(api, ctx, resource, ErrorCode.none) if ctx else Change(api, "", "", None, resource, ErrorCode.none))

    def create_delegation_token(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        requester = _plain(ctx.principal)
        owner_name = getattr(body, "owner_principal_name", None)
        owner_type = getattr(body, "owner_principal_type", None)
        if owner_name and owner_type is None:
            # `new KafkaPrincipal(null, name)` fails in ControllerApis: an unexpected error, answered by getErrorResponse
            return {"throttle_time": 0, **token_error_answer(body, {"error_code": ErrorCode.unknown_server_error, "error_message": None})}
        owner = Principal(str(owner_type), str(owner_name)) if owner_name else requester
        if not token_requests_allowed(ctx):
            return create_token_answer(ErrorCode.delegation_token_request_not_allowed, owner, requester, ERROR_TIMESTAMP)
        if not same_principal(owner, requester) and not allowed(self.authorizer, ctx, Operation.CREATE_TOKENS, ResourceType.USER, str(owner)):
            return create_token_answer(ErrorCode.delegation_token_authorization_failed, owner, requester, ERROR_TIMESTAMP)
        if not self.settings.enabled:
            return create_token_answer(ErrorCode.delegation_token_auth_disabled, owner, requester, UNSET_TIME)
        if not self._supported():
            return create_token_answer(ErrorCode.unsupported_version, owner, requester, UNSET_TIME)
        now = self.clock()
        lifetime = self.settings.max_lifetime_ms
        if int(body.max_lifetime) > 0:
            lifetime = min(lifetime, int(body.max_lifetime))
        max_time = _saturated_sum(now, lifetime)
        expiry = min(max_time, _saturated_sum(now, self.settings.expiry_time_ms))
        renewers: list[Principal] = []
        for renewer in body.renewers:
            if str(renewer.principal_type) != USER_TYPE:
                return create_token_answer(ErrorCode.invalid_principal_type, owner, requester, UNSET_TIME)
            renewers.append(Principal(str(renewer.principal_type), str(renewer.principal_name)))
        if any(len(str(p).encode("utf-8", "surrogatepass")) > SHORT_MAX for p in (owner, requester, *renewers)):
            # DelegationTokenRecord cannot hold a principal longer than 32767 bytes: Kafka's controller fails writing it
            # (and resigns); ControllerApis answers the unexpected error. The embedded controller stays the leader.
            return {"throttle_time": 0, **token_error_answer(body, {"error_code": ErrorCode.unknown_server_error, "error_message": None})}
        token_id = new_token_id()
        token = DelegationToken(token_id, owner, requester, tuple(renewers), now, max_time, expiry)
        self._store("CreateDelegationToken", ctx, token, token_id)
        return {
            **create_token_answer(ErrorCode.none, owner, requester, UNSET_TIME),
            "issue_timestamp": now,
            "expiry_timestamp": expiry,
            "max_timestamp": max_time,
            "token_id": token_id,
            "hmac": self._hmac(token_id),
        }

    def _find(self, body: Any) -> DelegationToken | int:
        """The checks Renew and Expire share, in Kafka's order: the token, or the error code that answers."""
        if not self.settings.enabled:
            return ErrorCode.delegation_token_auth_disabled
        if not self._supported():
            return ErrorCode.unsupported_version
        token = self._token_for(bytes(body.hmac))
        if token is None:
            return ErrorCode.delegation_token_not_found
        return token

    def renew_delegation_token(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not token_requests_allowed(ctx):
            return expiry_answer(ErrorCode.delegation_token_request_not_allowed, ERROR_TIMESTAMP)
        found = self._find(body)
        if isinstance(found, int):
            return expiry_answer(found, UNSET_TIME)
        now = self.clock()
        if found.max_ms < now or found.expiry_ms < now:
            return expiry_answer(ErrorCode.delegation_token_expired, UNSET_TIME)
        if not _owner_or_renewer(found, ctx.principal):
            return expiry_answer(ErrorCode.delegation_token_owner_mismatch, UNSET_TIME)
        period = self.settings.expiry_time_ms
        if int(body.renew_period) > 0:
            period = min(period, int(body.renew_period))
        expiry = min(found.max_ms, _java_sum(now, period))
        self._store("RenewDelegationToken", ctx, replace(found, expiry_ms=expiry), found.token_id)
        return expiry_answer(ErrorCode.none, expiry)

    def expire_delegation_token(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not token_requests_allowed(ctx):
            return expiry_answer(ErrorCode.delegation_token_request_not_allowed, ERROR_TIMESTAMP)
        found = self._find(body)
        if isinstance(found, int):
            return expiry_answer(found, UNSET_TIME)
        if not _owner_or_renewer(found, ctx.principal):
            return expiry_answer(ErrorCode.delegation_token_owner_mismatch, UNSET_TIME)
        now = self.clock()
        period = int(body.expiry_time_period)
        if period < 0:  # expire at once
            self._store("ExpireDelegationToken", ctx, None, found.token_id)
            return expiry_answer(ErrorCode.none, now)
        if found.max_ms < now or found.expiry_ms < now:
            return expiry_answer(ErrorCode.delegation_token_expired, UNSET_TIME)
        expiry = min(found.max_ms, _saturated_sum(now, period))
        self._store("ExpireDelegationToken", ctx, replace(found, expiry_ms=expiry), found.token_id)
        return expiry_answer(ErrorCode.none, expiry)

    def sweep(self) -> int:
        """sweepExpiredDelegationTokens: remove every token past its expiry or its maximum time; how many went."""
        now = self.clock()
        expired = [t.token_id for t in self.image.delegation_tokens.values() if t.max_ms < now or t.expiry_ms < now]
        for token_id in expired:
            self._store("SweepExpiredDelegationTokens", None, None, token_id)
        return len(expired)

    def describe_delegation_token(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """KafkaApis.handleDescribeTokensRequest, as a broker answers it."""
        if not token_requests_allowed(ctx, broker=True):
            return {"throttle_time": 0, "error_code": ErrorCode.delegation_token_request_not_allowed, "tokens": []}
        if not self.settings.enabled:
            return {"throttle_time": 0, "error_code": ErrorCode.delegation_token_auth_disabled, "tokens": []}
        owners = None if body.owners is None else [Principal(str(o.principal_type), str(o.principal_name)) for o in body.owners]
        if owners is not None and not owners:
            return {"throttle_time": 0, "error_code": ErrorCode.none, "tokens": []}
        tokens = []
        # DelegationTokenCache keeps tokens in a hash map by id: answered in its order
        for token_id in string_map_order(self.image.delegation_tokens):
            token = self.image.delegation_tokens[token_id]
            if self._describable(token, owners, ctx):
                tokens.append(self._described(token))
        return {"throttle_time": 0, "error_code": ErrorCode.none, "tokens": tokens}

    def _describable(self, token: DelegationToken, owners: list[Principal] | None, ctx: RequestContext) -> bool:
        """DelegationTokenManager.filterToken."""
        if owners is not None and not any(_may_describe(token, owner) for owner in owners):
            return False
        if _may_describe(token, ctx.principal):
            return True
        return allowed(self.authorizer, ctx, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id) or allowed(
            self.authorizer, ctx, Operation.DESCRIBE_TOKENS, ResourceType.USER, str(token.owner)
        )

    def _described(self, token: DelegationToken) -> dict[str, Any]:
        return {
            "principal_type": token.owner.type,
            "principal_name": token.owner.name,
            "token_requester_principal_type": token.requester.type,
            "token_requester_principal_name": token.requester.name,
            "issue_timestamp": token.issue_ms,
            "expiry_timestamp": token.expiry_ms,
            "max_timestamp": token.max_ms,
            "token_id": token.token_id,
            "hmac": self._hmac(token.token_id),
            "renewers": [{"principal_type": r.type, "principal_name": r.name} for r in token.renewers],
        }
