"""The delegation tokens a listener accepts in a SCRAM login with `tokenauth=true` (KIP-48), as Kafka's TokenCache.

Kafka's brokers learn tokens from the metadata log; the proxy learns them from the upstream
(proxy/forward/token_mirror.py replaces the snapshot here). A token logs in with its id as the user name and its
HMAC, base64-encoded, as the password; the SCRAM credentials are derived from that password as
DelegationTokenManager does (a random salt, 4096 iterations), once per token and mechanism, at its first login, so
a thousand tokens cost nothing until used.
"""

import base64
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from proxy.net.sasl.scram import MECHANISMS, MIN_ITERATIONS, ScramCredential, TokenLogin, make_credential


@dataclass(frozen=True)
class TokenInfo:
    """What a login needs of one token (TokenInformation and its HMAC)."""

    token_id: str
    owner: str
    """The owner's name: the principal a token login gets is User:<owner> (DelegationTokenCache.owner)."""
    hmac: bytes = field(repr=False)
    expiry_ms: int
    max_ms: int


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class TokenCache:
    """One snapshot of the upstream's tokens, replaced whole; logins read it."""

    def __init__(self, *, clock: Callable[[], int] = wall_clock_ms) -> None:
        self._tokens: dict[str, TokenInfo] = {}
        self._credentials: dict[tuple[str, bytes, str], ScramCredential] = {}
        self.clock = clock
        self.loaded = False
        """Whether a snapshot has been taken since the last failure (none yet: every token login fails)."""

    def replace(self, tokens: Iterable[TokenInfo]) -> None:
        self._tokens = {token.token_id: token for token in tokens}
        live = {(t.token_id, t.hmac) for t in self._tokens.values()}
        self._credentials = {key: value for key, value in self._credentials.items() if key[:2] in live}
        self.loaded = True

    def clear(self) -> None:
        """The upstream could not say which tokens exist: none is accepted until it can (fail closed)."""
        self._tokens = {}
        self._credentials = {}
        self.loaded = False

    def __len__(self) -> int:
        return len(self._tokens)

    def token(self, token_id: str) -> TokenInfo | None:
        """The token, while it is neither expired nor past its maximum lifetime."""
        token = self._tokens.get(token_id)
        if token is None:
            return None
        now = self.clock()
        if token.expiry_ms < now or token.max_ms < now:
            return None
        return token

    def credential(self, mechanism: str, token_id: str) -> ScramCredential | None:
        """The SCRAM credential of a live token for `mechanism` (DelegationTokenCache.credential)."""
        if mechanism not in MECHANISMS:
            return None
        token = self.token(token_id)
        if token is None:
            return None
        key = (token.token_id, token.hmac, mechanism)
        credential = self._credentials.get(key)
        if credential is None:
            password = base64.b64encode(token.hmac).decode("ascii")
            credential = self._credentials[key] = make_credential(mechanism, password, iterations=MIN_ITERATIONS)
        return credential

    def login(self, mechanism: str) -> Callable[[str], TokenLogin | None]:
        """The `ScramServer` token lookup for one mechanism: a live token's credential, owner and expiry."""

        def find(token_id: str) -> TokenLogin | None:
            token = self.token(token_id)
            credential = self.credential(mechanism, token_id)
            if token is None or credential is None:
                return None
            return TokenLogin(credential, token.owner, token.expiry_ms)

        return find


__all__ = ["TokenCache", "TokenInfo"]
