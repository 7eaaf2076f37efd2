"""`make test`'s tiers (devkit/test_tiers.py): what each tier's pytest process is asked to collect."""

from __future__ import annotations

from pathlib import Path

from devkit.test_tiers import SPARK_FOLDER, TIER_FOLDERS, TIERS, _command, tier_of


def _collected(tier: str, extra: list[str]) -> list[str]:
    """The arguments after `--tier=` in the tier's pytest command: the caller's, then the folder the tier adds."""
    command = _command(tier, Path("/scratch"), extra)
    return command[command.index(f"--tier={tier}") + 1 :]


def test_the_spark_and_interop_tiers_collect_only_their_folders() -> None:
    assert _collected("spark", []) == [SPARK_FOLDER]
    assert _collected("interop", ["-x", "-k", "quorum"]) == ["-x", "-k", "quorum", TIER_FOLDERS["interop"]]
    assert _collected("main", ["-x"]) == ["-x"]  # the main tier's tests are everywhere else
    assert set(TIER_FOLDERS) < set(TIERS) and all(Path(folder).is_dir() for folder in TIER_FOLDERS.values())


def test_tests_named_on_the_command_line_are_collected_as_given() -> None:
    for named in (["tests/proxy"], ["-x", "tests/spark_audit/test_job.py::test_cli_run_writes_every_output"]):
        for tier in TIERS:
            assert _collected(tier, named) == named


def test_a_spark_test_is_in_the_spark_tier_wherever_the_interop_marker_is() -> None:
    assert tier_of(SPARK_FOLDER + "test_job.py", {"spark"}) == "spark"
    assert tier_of(SPARK_FOLDER + "test_job.py", {"spark", "interop"}) == "spark"
    assert tier_of(SPARK_FOLDER + "test_read.py", set()) == "main"
    assert tier_of(TIER_FOLDERS["interop"] + "test_quorum.py", {"interop"}) == "interop"
    assert tier_of("tests/deploy/test_deploy_guide.py", {"interop"}) == "main"
