"""`make test`'s pytest run: the suite in three tiers side by side, each its own pytest process.

Most of the suite's wall time is waiting, not computing: on Spark's JVM (marker `spark`), on Kafka nodes, a KDC
and Keycloak (marker `interop` under tests/interop), and on loopback and timers (everything else, with the
deploy and image tests, which start their own JVMs and containers). Run one after the other the tiers took about
their sum; side by side on two cores, about the longest of them. `tier_of` says which tier a test is in;
tests/conftest.py applies it to `pytest --tier NAME`. They share nothing a test writes:
each tier has its own `--basetemp` and no cache, and the session fixtures (Kafka nodes, the KDC, Keycloak) pick
free ports, so a node the interop tier starts is never one the main tier uses.

Each tier runs its tests on its WORKERS pytest-xdist workers (`--dist loadfile`: a test file stays on one worker, so
its module fixtures start once; `work_unit` keeps the files of SHARED_FIXTURE_FILES together, tests/conftest.py's
scheduler applies it); `schedule_rank` starts the files that measured slowest first, so that no long
file starts last. Fixtures of session scope start once per worker that needs them. (Not `--dist loadgroup`:
pytest-xdist 3.8 marks a group in the test's id in a way pytest 9 no longer reads, so every test would be
scheduled alone.)

The main tier's output streams as it runs; the others' are printed whole when all are done. Arguments are passed
to every pytest run; the exit status is the first non-zero one.
"""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

TIERS = ("main", "interop", "spark")
STREAMED = "main"
INTEROP_FOLDER = "tests/interop/"
#: every test marked `spark` lives here (tests/conftest.py refuses one elsewhere)
SPARK_FOLDER = "tests/spark_audit/"
#: Where a tier's tests can be, so that its processes collect only those files: collecting the whole suite costs each
#: of the tier's processes (its controller and every worker) about 7 CPU-s, against about 3 for these folders.
#: The main tier collects everything: its tests are everywhere else.
TIER_FOLDERS = {"interop": INTEROP_FOLDER, "spark": SPARK_FOLDER}
# The Spark tier is the longest, and its tests wait on JVMs more than they compute: a third worker there.
WORKERS = {"main": 2, "interop": 2, "spark": 3}
# The slowest files of each tier as measured (2026-11-28, `--durations`; the Spark tier's again 2026-11-30, CPU per
# file), longest first: a scheduling hint only. A file missing here runs after these, in collection order; a stale
# entry costs nothing but balance. The Spark tier ends the suite, so its files of a minute or less are listed too: in
# collection order, the burst rewrite (two minutes in a suite run) and the job-count tests started in its last minutes,
# and for the last 50 s of a run one core was idle beside the worker that still ran them.
STARTS_FIRST = (
    "tests/spark_audit/test_bench_incremental.py",
    "tests/spark_audit/test_memory_wall.py",
    "tests/spark_audit/test_standalone.py",
    "tests/spark_audit/test_bench.py",
    "tests/spark_audit/test_incremental.py",
    "tests/spark_audit/test_burst_rewrite.py",
    "tests/spark_audit/test_differential.py",
    "tests/spark_audit/test_class_archive.py",
    "tests/spark_audit/test_spark_jobs.py",
    "tests/spark_audit/test_job.py",
    "tests/spark_audit/test_local_fs.py",
    "tests/spark_audit/test_acl_hygiene.py",
    "tests/spark_audit/test_chain_integrity.py",
    "tests/spark_audit/test_reports.py",
    "tests/spark_audit/test_probes.py",
    "tests/spark_audit/test_report_page.py",
    "tests/spark_audit/test_staged_parse.py",
    "tests/interop/test_spark_kafka_source.py",
    "tests/interop/test_delegation_token_login.py",
    "tests/interop/test_kafka_tools.py",
    "tests/interop/test_client_matrix.py",
    "tests/deploy/test_deploy_guide.py",
    "tests/deploy/test_deploy_guide_container.py",
    "tests/images/test_images.py",
    "tests/integration/test_audit_crash.py",
    "tests/integration/test_hostile_table.py",
)


#: Test files that share a session fixture which is costly to start, so each group runs on one worker of its tier:
#: a fixture of session scope starts once per worker that uses it, and these groups' files used to land on both.
#: Measured on the four files with two workers: 160 CPU-s when they were split, 143 grouped (docs/performance.md).
#: tests/test_tiers.py checks that every file naming the fixture is in its group.
SHARED_FIXTURE_FILES = {
    "keycloak_server": ("tests/interop/test_keycloak_harness.py", "tests/interop/test_oauthbearer_keycloak.py"),
    "kafka_quorum": ("tests/interop/test_client_matrix.py", "tests/interop/test_quorum.py"),
    # the suite's one large run of the audit job (about 160 CPU-s), which the memory wall and the local file system's
    # test check for different things
    "realistic_cli_run": ("tests/spark_audit/test_memory_wall.py", "tests/spark_audit/test_local_fs.py"),
}
_UNIT_OF_FILE = {path: fixture for fixture, paths in SHARED_FIXTURE_FILES.items() for path in paths}


def work_unit(path: str) -> str:
    """What pytest-xdist hands to one worker for the test file at `path`: the file, or its shared-fixture group."""
    return _UNIT_OF_FILE.get(path, path)


def tier_of(path: str, markers: set[str]) -> str:
    """The tier of a test at `path` (relative to the checkout, with `/`) carrying `markers`."""
    if "spark" in markers:
        return "spark"
    if "interop" in markers and path.startswith(INTEROP_FOLDER):
        return "interop"
    return "main"


def schedule_rank(path: str) -> int:
    """When a test file is handed to a worker: the measured slow files first, in their order, then the rest."""
    return STARTS_FIRST.index(path) if path in STARTS_FIRST else len(STARTS_FIRST)


def _names_tests(argument: str) -> bool:
    """True for a command-line argument that names tests to run (a path, or a test's id), not an option."""
    return not argument.startswith("-") and Path(argument.split("::", 1)[0]).exists()


def _command(tier: str, basetemp: Path, extra: list[str]) -> list[str]:
    workers = ["-n", str(WORKERS[tier]), "--dist", "loadfile", "--no-loadscope-reorder"]
    # tests named on the command line are collected as given, in every tier
    folder = [TIER_FOLDERS[tier]] if tier in TIER_FOLDERS and not any(_names_tests(argument) for argument in extra) else []
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, f"--basetemp={basetemp / tier}", f"--tier={tier}", *extra, *folder]


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)  # SystemExit: the tiers are stopped on the way out, as on Ctrl-C


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    started = time.monotonic()
    codes: dict[str, int] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="envelope-proxy-tests-") as scratch:
        root = Path(scratch)
        logs: dict[str, IO[bytes]] = {}
        running: dict[str, subprocess.Popen[bytes]] = {}
        try:
            for tier in TIERS:
                if tier == STREAMED:
                    continue
                logs[tier] = (root / f"{tier}.log").open("wb")
                # a session of its own, so that stopping the tier stops its xdist workers and what they started
                running[tier] = subprocess.Popen(_command(tier, root, argv), stdout=logs[tier], stderr=subprocess.STDOUT, start_new_session=True)
            codes[STREAMED] = subprocess.call(_command(STREAMED, root, argv))
            seconds[STREAMED] = time.monotonic() - started
            for tier, process in running.items():
                codes[tier] = process.wait()
                seconds[tier] = time.monotonic() - started  # an upper bound: when it was seen to be done
        except BaseException:
            for process in running.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            raise
        finally:
            for log in logs.values():
                log.close()
        for tier in running:
            print(f"\n===== the {tier} tier, run beside the main tier =====", flush=True)
            sys.stdout.write((root / f"{tier}.log").read_text(errors="replace"))
    total = time.monotonic() - started
    summary = ", ".join(f"{tier} exit {codes[tier]} by {seconds[tier]:.0f} s" for tier in TIERS)
    print(f"\ntiers: {summary}; {total:.0f} s in all", flush=True)
    return next((code for code in codes.values() if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
