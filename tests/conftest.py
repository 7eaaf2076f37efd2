"""Session-wide fixtures shared by several test folders: one MIT KDC for the whole run (tests/kdc.py)."""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdist.scheduler import LoadFileScheduling

from devkit.processes import skip_or_fail
from devkit.test_tiers import SPARK_FOLDER, TIERS, schedule_rank, tier_of, work_unit
from tests.kdc import Kdc, KdcError, missing_tools

SERVICE = "kafka"
SERVICE_HOST = "localhost"
SERVICE_IP = "127.0.0.1"
OTHER_SERVICE = "other"
BRIEF_TICKET_SECONDS = 4


@dataclass(frozen=True)
class Realm:
    """The test realm: the KDC, and a keytab for each principal the GSSAPI tests use."""

    kdc: Kdc
    service_principal: str
    """kafka/localhost@REALM: the proxy's listeners (and the Kafka node's controller listener) accept it."""
    service_keytab: Path
    keytabs: dict[str, Path]
    """Short key (alice, bob-admin, proxy, carol; brief and renewing: tickets of BRIEF_TICKET_SECONDS) -> its keytab."""
    principals: dict[str, str]


@pytest.fixture(scope="session")
def kerberos_realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    """A running KDC with its realm, started once per session; KRB5_CONFIG (and the replay cache folder) point at it
    for this process while it runs, so python-gssapi in the tests and the in-process proxy use it."""
    missing = missing_tools()
    if missing:
        skip_or_fail(f"MIT krb5 not installed ({', '.join(missing)} missing; Debian: krb5-kdc krb5-admin-server krb5-user; `make krb5`)")
    workdir = tmp_path_factory.mktemp("kdc")
    try:
        kdc = Kdc(workdir).start()
    except KdcError as exc:
        skip_or_fail(f"the KDC did not start: {exc}")
        raise
    try:
        service_keytab = workdir / "service.keytab"
        service = kdc.add_principal(f"{SERVICE}/{SERVICE_HOST}", service_keytab)
        kdc.add_principal(f"{OTHER_SERVICE}/{SERVICE_HOST}")  # a service the proxy holds no key of
        kdc.add_principal(f"{SERVICE}/{SERVICE_IP}", service_keytab)  # for links opened to 127.0.0.1
        keytabs: dict[str, Path] = {}
        principals: dict[str, str] = {}
        for key, name in (("alice", "alice"), ("bob-admin", "bob/admin"), ("proxy", "proxy"), ("carol", "carol")):
            keytabs[key] = workdir / f"{key}.keytab"
            principals[key] = kdc.add_principal(name, keytabs[key])
        for key in ("brief", "renewing"):  # tickets that expire within the test that uses them (one test each)
            keytabs[key] = workdir / f"{key}.keytab"
            principals[key] = kdc.add_principal(key, keytabs[key], max_life=f"{BRIEF_TICKET_SECONDS} seconds")
        with pytest.MonkeyPatch.context() as patch:
            for name in ("KRB5_CONFIG", "KRB5RCACHEDIR"):
                patch.setenv(name, kdc.env[name])
            patch.setenv("KRB5CCNAME", f"MEMORY:envelope-tests-{os.getpid()}")
            yield Realm(kdc, service, service_keytab, keytabs, principals)
    finally:
        kdc.stop()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tier", choices=TIERS, help="run only this tier of the suite (devkit/test_tiers.py, as `make test` does)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))

    def path_of(item: pytest.Item) -> str:
        return Path(str(item.path)).relative_to(root).as_posix()

    # the Spark tier collects only SPARK_FOLDER (devkit/test_tiers.py): a Spark test elsewhere would run in no tier
    astray = [item.nodeid for item in items if item.get_closest_marker("spark") and not path_of(item).startswith(SPARK_FOLDER)]
    if astray:
        raise pytest.UsageError(f"tests marked spark must be in {SPARK_FOLDER}, so that the Spark tier collects them: {', '.join(astray)}")
    tier = config.getoption("--tier")
    if tier is not None:
        chosen: list[pytest.Item] = []
        other: list[pytest.Item] = []
        for item in items:
            markers = {mark.name for mark in item.iter_markers()}
            (chosen if tier_of(path_of(item), markers) == tier else other).append(item)
        if other:
            config.hook.pytest_deselected(items=other)
            items[:] = chosen
    # in an xdist worker, whose collection is the order the files are handed out in (`--no-loadscope-reorder`):
    # the slow files first; a run without workers keeps pytest's order
    if "PYTEST_XDIST_WORKER" in os.environ:
        items.sort(key=lambda item: schedule_rank(path_of(item)))  # stable: the order within a file stays


class _SharedFixtureScheduling(LoadFileScheduling):
    """`--dist loadfile`, with the files that share a costly session fixture handed to one worker together."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid.split("::", 1)[0])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadFileScheduling | None:
    return _SharedFixtureScheduling(config, log) if config.getoption("dist") == "loadfile" else None
