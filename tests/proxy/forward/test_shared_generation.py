"""The shared generation of the ACL and token mirrors: a change forwarded by one process on a port makes every other
process's mirror stale before its next decision (issue 48, part 5). Two `EdgeAuthorizer`s (or `TokenMirror`s) on one
generation directory stand for two processes here; tests/integration/test_processes_on_one_port.py runs real ones."""

import ipaddress
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from authz import AclBinding, Action, Decision, Operation, PatternType, PermissionType, RequestContext, ResourceType
from envelope.principal import Principal
from proxy.audit.cloudevents import INSTANCE, load_schema, make_record, source
from proxy.config import parse_proxy_config
from proxy.forward.edge_authz import GENERATION_DIR_KEY, EdgeAuthorizer, EdgeSettings, SharedGeneration
from proxy.forward.token_mirror import GENERATION_WATCH_SECONDS, TokenMirror
from proxy.net.sasl.token_cache import TokenCache
from proxy.properties import ConfigError

ALICE = RequestContext(Principal("User", "alice"), ipaddress.ip_address("127.0.0.1"), "CLIENT", "SASL_PLAINTEXT", "PLAIN")
DESCRIBE_CLUSTER = Action(Operation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster")
GRANT = AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:alice", "*", Operation.DESCRIBE, PermissionType.ALLOW)


# -- the generation itself ---------------------------------------------------------------------------------------------


def test_without_a_file_the_generation_is_the_process_own_count() -> None:
    generation = SharedGeneration()
    before = generation.read()
    assert generation.read() == before and not generation.shared
    generation.bump()
    assert generation.read() != before


def test_a_bump_in_one_process_shows_in_the_others_read(tmp_path: Path) -> None:
    path = tmp_path / "port-9092.acls"
    first, second = SharedGeneration(path), SharedGeneration(path)
    seen = second.read()
    assert second.read() == seen  # nothing changed: the same generation, every time
    first.bump()
    assert second.read() != seen
    assert path.read_bytes() == b"\n"  # one byte per change: the file's length is the shared count


def test_a_file_removed_makes_every_read_new_until_a_change_makes_it_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "port-9092.acls"
    generation = SharedGeneration(path)
    path.unlink()
    reads = {generation.read() for _ in range(3)}
    assert len(reads) == 3  # nobody can say whether another process changed anything: reload each time
    assert sum("cannot read" in record.message for record in caplog.records) == 1  # said once per outage
    generation.bump()  # made again by the next change
    assert generation.read() == generation.read()


def test_a_file_made_again_counts_as_a_change(tmp_path: Path) -> None:
    path = tmp_path / "port-9092.acls"
    generation = SharedGeneration(path)
    SharedGeneration(path).bump()
    seen = generation.read()
    path.unlink()
    SharedGeneration(path)  # a new, empty file: the same length as before the change, another inode
    assert generation.read() != seen


# -- the ACL mirror ----------------------------------------------------------------------------------------------------


class _Controller:
    """The upstream's ACLs, as the edge authorizer's DescribeAcls reads them; counts the reads."""

    def __init__(self) -> None:
        self.acls: list[AclBinding] = []
        self.reads = 0

    def authorizer(self, directory: Path | None, **settings: Any) -> EdgeAuthorizer:
        edge = EdgeAuthorizer(
            EdgeSettings(policy="acl", refresh_seconds=600.0, generation_dir=directory, generation_port=9092, **settings),
            None,  # type: ignore[arg-type]
        )

        async def fetch() -> list[AclBinding]:
            self.reads += 1
            snapshot = list(self.acls)
            await trio.sleep(0)
            return snapshot

        edge._fetch = fetch  # type: ignore[method-assign]
        return edge


async def _allowed(edge: EdgeAuthorizer) -> bool:
    (decision,) = await edge.authorize(ALICE, [DESCRIBE_CLUSTER])
    return decision is Decision.ALLOWED


async def test_an_acl_change_forwarded_by_one_process_counts_at_once_in_another(tmp_path: Path) -> None:
    controller = _Controller()
    one, other = controller.authorizer(tmp_path), controller.authorizer(tmp_path)
    assert not await _allowed(other)  # loaded without the grant; refresh period 600 s

    controller.acls.append(GRANT)  # granted through `one` (its `_answer` invalidates)
    one.invalidate()
    assert await _allowed(other)

    controller.acls.clear()  # revoked through `one`
    one.invalidate()
    assert not await _allowed(other)
    reads = controller.reads
    assert not await _allowed(other) and controller.reads == reads  # nothing changed since: no reload


async def test_without_a_shared_directory_only_the_forwarding_process_knows(tmp_path: Path) -> None:
    """What the generation file fixes: apart, each process only learns of another's change from the timer."""
    controller = _Controller()
    one, other = controller.authorizer(None), controller.authorizer(None)
    assert not await _allowed(other)
    controller.acls.append(GRANT)
    one.invalidate()
    assert await _allowed(one)
    assert not await _allowed(other)


async def test_a_change_made_while_a_reload_runs_is_not_lost() -> None:
    """The generation is read before the fetch: a reload that began before a change cannot pass for one after it."""
    controller = _Controller()
    edge = controller.authorizer(None)
    started, release = trio.Event(), trio.Event()

    async def fetch() -> list[AclBinding]:
        snapshot = list(controller.acls)  # the first one reads before the change below
        started.set()
        await release.wait()
        return snapshot

    edge._fetch = fetch  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_allowed, edge)
        await started.wait()
        controller.acls.append(GRANT)
        edge.invalidate()  # the change's answer comes back while the reload is still out
        release.set()
    assert await _allowed(edge)


# -- the token mirror --------------------------------------------------------------------------------------------------


class _Tokens:
    """The read path of one proxy process, answering DescribeDelegationToken from a shared list of tokens."""

    def __init__(self, tokens: list[Any], edge: EdgeAuthorizer) -> None:
        self.tokens = tokens
        self.edge = edge
        self.asked = 0
        self.upstream = SimpleNamespace(settings=SimpleNamespace(address="127.0.0.1:9092", request_timeout=1.0))

    async def upstream_call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        self.asked += 1
        return SimpleNamespace(error_code=ErrorCode.none, tokens=list(self.tokens))


def _token(token_id: str) -> Any:
    return SimpleNamespace(token_id=token_id, principal_name="alice", hmac=b"\x07" * 64, expiry_timestamp=2**62, max_timestamp=2**62)


def _mirror(tokens: list[Any], directory: Path | None) -> tuple[TokenMirror, _Tokens, TokenCache]:
    path = _Tokens(tokens, _Controller().authorizer(directory))
    return TokenMirror(path, 600.0), path, TokenCache()  # type: ignore[arg-type]


async def test_a_token_expired_through_one_process_stops_logging_in_on_another_within_the_watch(tmp_path: Path) -> None:
    tokens = [_token("t1")]
    one, _, _ = _mirror(tokens, tmp_path)
    other, _, cache = _mirror(tokens, tmp_path)
    async with trio.open_nursery() as nursery:
        await nursery.start(other.run, [cache])
        with trio.fail_after(2):
            while not cache.loaded:  # the first snapshot, taken at start
                await trio.sleep(0)
        assert cache.token("t1") is not None
        tokens.clear()  # expired through `one`, which pokes its mirror
        one.poke()
        with trio.fail_after(2):
            while cache.token("t1") is not None:
                await trio.sleep(GENERATION_WATCH_SECONDS / 4)
        nursery.cancel_scope.cancel()


async def test_current_refreshes_only_when_the_generation_moved(tmp_path: Path) -> None:
    """What a login would await first for a strict guarantee: one stat when nothing changed."""
    tokens = [_token("t1")]
    one, _, _ = _mirror(tokens, tmp_path)
    other, path, cache = _mirror(tokens, tmp_path)
    other.caches = [cache]
    await other.current()
    asked = path.asked
    await other.current()
    assert path.asked == asked == 1 and cache.token("t1") is not None
    tokens.clear()
    one.poke()
    await other.current()
    assert path.asked == 2 and cache.token("t1") is None


# -- configuration -----------------------------------------------------------------------------------------------------


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "node.id": "100",
        "listeners": "CLIENT://127.0.0.1:19092,OTHER://127.0.0.1:19093,CONTROLLER://127.0.0.1:19094",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,OTHER:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "127.0.0.1:19094",
        "audit.log.dir": str(tmp_path / "audit"),
        **extra,
    }


def test_a_configured_directory_holds_one_file_per_kind_named_after_the_lowest_client_port(tmp_path: Path) -> None:
    config = parse_proxy_config(_config(tmp_path, **{GENERATION_DIR_KEY: str(tmp_path)}))
    assert config.edge.generation_file("acls") == tmp_path / "port-19092.acls"
    assert config.effective()["edge"][GENERATION_DIR_KEY] == str(tmp_path)
    assert not (tmp_path / "port-19092.acls").exists()  # check-config makes nothing
    edge = EdgeAuthorizer(config.edge, None)  # type: ignore[arg-type]
    assert edge.acl_generation.shared and (tmp_path / "port-19092.acls").is_file() and (tmp_path / "port-19092.tokens").is_file()


def _file(path: Path) -> Path:
    path.write_text("")
    return path


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda base: base / "missing", "does not exist"),
        (lambda base: _file(base / "a-file"), "is not a directory"),
    ],
)
def test_a_directory_that_cannot_be_used_is_a_config_error_naming_key_value_and_reason(tmp_path: Path, make: Any, reason: str) -> None:
    bad = make(tmp_path)
    with pytest.raises(ConfigError) as error:
        parse_proxy_config(_config(tmp_path, **{GENERATION_DIR_KEY: str(bad)}))
    assert (error.value.key, error.value.value) == (GENERATION_DIR_KEY, str(bad))
    assert reason in error.value.reason


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any directory")
def test_a_directory_this_process_cannot_write_is_a_config_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ConfigError, match="not writable"):
        parse_proxy_config(_config(tmp_path, **{GENERATION_DIR_KEY: str(locked)}))


def test_without_reuse_port_and_without_the_key_the_generation_is_the_process_own(tmp_path: Path) -> None:
    config = parse_proxy_config(_config(tmp_path))
    assert config.edge.generation_dir is None
    assert not EdgeAuthorizer(config.edge, None).acl_generation.shared  # type: ignore[arg-type]


def test_reuse_port_shares_through_a_directory_of_this_user_in_the_temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = parse_proxy_config(_config(tmp_path, **{"socket.reuse.port": "true"}))
    expected = tmp_path / f"envelope-proxy-{os.geteuid()}"
    assert config.edge.generation_dir == expected and config.edge.generation_dir_default
    EdgeAuthorizer(config.edge, None)  # type: ignore[arg-type]
    assert expected.is_dir() and expected.stat().st_mode & 0o777 == 0o700
    assert (expected / "port-19092.acls").is_file()


def test_a_default_directory_others_may_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shared = tmp_path / f"envelope-proxy-{os.geteuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ConfigError) as error:
        parse_proxy_config(_config(tmp_path, **{"socket.reuse.port": "true"}))
    assert error.value.key == GENERATION_DIR_KEY and "writable by others" in error.value.reason


def test_a_generation_file_of_another_kind_is_a_config_error_at_start(tmp_path: Path) -> None:
    (tmp_path / "port-19092.acls").mkdir()
    config = parse_proxy_config(_config(tmp_path, **{GENERATION_DIR_KEY: str(tmp_path)}))
    with pytest.raises(ConfigError) as error:
        EdgeAuthorizer(config.edge, None)  # type: ignore[arg-type]
    assert error.value.key == GENERATION_DIR_KEY and "port-19092.acls" in error.value.reason


def test_a_failed_append_is_logged_and_still_counts_in_this_process(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "port-9092.acls"
    generation = SharedGeneration(path)
    seen = generation.read()
    path.unlink()
    path.mkdir()  # the append fails
    with caplog.at_level(logging.ERROR):
        generation.bump()
    assert "cannot append" in caplog.text
    assert generation.read() != seen


# -- the audit source --------------------------------------------------------------------------------------------------


def test_records_name_the_process_in_source_and_match_the_schema() -> None:
    import re

    record = make_record(100, None, {})
    assert record["source"] == source(100) == f"envelope-proxy/100/{INSTANCE}"
    assert INSTANCE.startswith(f"{os.getpid()}-")
    pattern = load_schema()["properties"]["source"]["pattern"]
    assert re.match(pattern, record["source"]) and re.match(pattern, "envelope-proxy/100")  # older records too


def test_two_processes_have_two_sources() -> None:
    code = "from proxy.audit.cloudevents import source; print(source(100))"
    sources = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() for _ in range(2)}
    assert len(sources) == 2 and all(s.startswith("envelope-proxy/100/") for s in sources)
