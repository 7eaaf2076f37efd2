"""The token mirror: a snapshot of the upstream's tokens into every SCRAM listener's cache, emptied when the
upstream cannot say which tokens exist (a token expired meanwhile must never log in)."""

from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from proxy.forward.reads import NotServed, ReadUnavailable
from proxy.forward.token_mirror import TokenMirror
from proxy.net.sasl.token_cache import TokenCache


def _token(token_id: str, owner: str, expiry: int = 2**62) -> Any:
    return SimpleNamespace(token_id=token_id, principal_name=owner, hmac=b"\x07" * 64, expiry_timestamp=expiry, max_timestamp=2**62)


class _Upstream:
    """What the mirror asks of the read path: answers (or failures) in turn."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[int, int, dict[str, Any]]] = []
        self.upstream = SimpleNamespace(settings=SimpleNamespace(address="127.0.0.1:9092", request_timeout=1.0))

    async def upstream_call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        self.asked.append((api_key, version, values))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_a_snapshot_reaches_every_cache_and_a_failure_empties_them(caplog: pytest.LogCaptureFixture) -> None:
    ok = SimpleNamespace(error_code=ErrorCode.none, tokens=[_token("t1", "alice"), _token("t2", "bob")])
    upstream = _Upstream(ok, ReadUnavailable("down"), SimpleNamespace(error_code=ErrorCode.delegation_token_auth_disabled, tokens=[]), ok)
    mirror = TokenMirror(upstream, 5.0)  # type: ignore[arg-type]
    mirror.caches = [TokenCache(), TokenCache()]
    assert await mirror.refresh()
    assert upstream.asked == [(41, 3, {"owners": None})]  # every owner's tokens, as the proxy may see them
    assert [len(cache) for cache in mirror.caches] == [2, 2]
    assert mirror.caches[0].login("SCRAM-SHA-256")("t2") is not None
    assert not await mirror.refresh()
    assert [(len(cache), cache.loaded) for cache in mirror.caches] == [(0, False), (0, False)]
    assert not await mirror.refresh()  # an error answer counts as a failure too, warned about once per outage
    assert sum("cannot read them" in record.message for record in caplog.records) == 1
    assert await mirror.refresh() and mirror.caches[1].login("SCRAM-SHA-512")("t1") is not None


@pytest.mark.parametrize(
    ("failure", "advised"),
    [(ReadUnavailable("the read upstream 127.0.0.1:9092 has not answered yet"), False), (NotServed("does not serve this API at v3 or lower"), True)],
)
async def test_the_warning_advises_a_broker_listener_only_when_the_upstream_does_not_serve_the_api(
    caplog: pytest.LogCaptureFixture, failure: ReadUnavailable, advised: bool
) -> None:
    """Found by an outside check: with the proxy's Kerberos login failing, the warning blamed the upstream's APIs."""
    mirror = TokenMirror(_Upstream(failure), 5.0)  # type: ignore[arg-type]
    mirror.caches = [TokenCache()]
    assert not await mirror.refresh()
    (warning,) = [record.message for record in caplog.records if "cannot read them" in record.message]
    assert str(failure) in warning
    assert ("a broker listener in read.bootstrap.servers" in warning) is advised


async def test_tokens_disabled_on_the_cluster_is_said_once_at_info_and_other_errors_by_name(caplog: pytest.LogCaptureFixture) -> None:
    """Found by a newcomer following docs/deploy.md: every start warned "DescribeDelegationToken answered error 61".
    A cluster without delegation.token.secret.key is no failure of the proxy's: one INFO line says what it means."""
    caplog.set_level("INFO", logger="proxy.forward.token_mirror")
    disabled = SimpleNamespace(error_code=ErrorCode.delegation_token_auth_disabled, tokens=[])
    mirror = TokenMirror(_Upstream(disabled, disabled, SimpleNamespace(error_code=ErrorCode.cluster_authorization_failed, tokens=[])), 5.0)  # type: ignore[arg-type]
    mirror.caches = [TokenCache()]
    assert not await mirror.refresh()
    assert not await mirror.refresh()
    said = [(record.levelname, record.message) for record in caplog.records]
    assert len(said) == 1 and said[0][0] == "INFO" and "DELEGATION_TOKEN_AUTH_DISABLED" in said[0][1]
    assert not await mirror.refresh()
    (warning,) = [record.message for record in caplog.records if record.levelname == "WARNING"]
    assert "CLUSTER_AUTHORIZATION_FAILED (error 31)" in warning
