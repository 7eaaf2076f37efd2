"""A rerun checks its new lines' chains and joins them to what the last run kept (spark_audit/chain_state.py): it finds
what the check over every line finds, and where the new lines do not continue the kept chains, the whole check runs."""

import json
import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_audit.chain_integrity import chain_fields, chain_parts, check_chains, conclude, load_public_keys, positioned, raw_lines
from spark_audit.chain_state import STATE_FILE, merge
from spark_audit.collect import gather
from spark_audit.ingest import CHAIN
from spark_audit.layout import Layout
from spark_audit.options import JobOptions
from spark_audit.pipeline import run
from spark_audit.read import read_paths
from tests.proxy.audit.chain_trail import edit_line, published
from tests.spark_audit.chain_trails import trails

pytestmark = pytest.mark.spark
__all__ = ["trails"]  # a fixture


def _found(spark: SparkSession, paths: list[Path]) -> dict[str, list[tuple[object, ...]]]:
    return gather(chain_parts(chain_fields(positioned(read_paths(spark, [str(path) for path in paths]), kafka=False))))


def _joins_into_the_whole(spark: SparkSession, files: list[Path], public: Path, splits: set[int]) -> dict[str, object]:
    keys = load_public_keys([str(public)])
    whole = conclude(_found(spark, files), keys)
    for split in sorted(splits):
        merged = merge(_found(spark, files[:split]), _found(spark, files[split:]))
        # any split of a trail's files continues its chains: each file's lines come after those of the files before it
        assert merged is not None, split
        assert conclude(merged, keys) == whole, split
    return whole


@pytest.mark.parametrize("tampering", ["untouched", "delete line", "delete file", "edit principal"])
def test_the_kept_part_and_the_new_part_join_into_the_whole_check(spark: SparkSession, trails: tuple[dict[str, Path], Path], tampering: str) -> None:
    directories, public = trails
    files = published(directories[tampering])
    # the tampered file (the second) as the new part's first and as the kept part's last, and a split between writers
    # (each run of the trail writes several files)
    whole = _joins_into_the_whole(spark, files, public, {1, 2, len(files) // 2})
    assert whole["status"] == ("whole" if tampering == "untouched" else "broken")


def test_a_broken_link_where_the_parts_meet(spark: SparkSession, trails: tuple[dict[str, Path], Path], tmp_path: Path) -> None:
    """The kept part's last line altered: only the new part's first line, through its prev, shows it."""
    directories, public = trails
    trail = tmp_path / "trail"
    shutil.copytree(directories["untouched"], trail)
    files = published(trail)
    edit_line(files[0], len(files[0].read_bytes().splitlines()), lambda r: r["data"]["authenticationInfo"].update(principal="User:mallory"))
    whole = _joins_into_the_whole(spark, files, public, {1})
    assert [writer["modified"] for writer in whole["writers"] if writer["modified"]] == [[len(files[0].read_bytes().splitlines())]]


def test_new_lines_that_do_not_continue_the_kept_chains_are_no_join(spark: SparkSession, trails: tuple[dict[str, Path], Path], tmp_path: Path) -> None:
    files = published(trails[0]["untouched"])
    kept = _found(spark, files[:3])
    # a file delivered again under another name: its lines take places the kept lines hold
    again = tmp_path / "again.jsonl"
    shutil.copyfile(files[1], again)
    assert merge(kept, _found(spark, [again, *files[3:]])) is None
    # the same file read again: an origin of both parts
    assert merge(kept, _found(spark, files[2:])) is None


def test_reruns_find_what_the_check_over_every_line_finds(spark: SparkSession, trails: tuple[dict[str, Path], Path], tmp_path: Path) -> None:
    """Three incremental runs over a trail with lines deleted: the files of the first runs, the files that continue
    them (joined to the kept state), then the rest with one file delivered again under another name (the whole check)."""
    directories, public = trails
    files = published(directories["delete line"])
    audit, out = tmp_path / "audit", tmp_path / "out"
    audit.mkdir()
    options = JobOptions(input=str(audit), incremental=True, print_report=False, html=False, chain_public_keys=(str(public),))
    keys = load_public_keys([str(public)])
    third = len(files) // 3
    for n, new in enumerate((files[:third], files[third : 2 * third], [*files[2 * third :], files[0]])):
        for path in new:
            shutil.copyfile(path, audit / (path.name if n < 2 or path != files[0] else f"again-{path.name}"))
        summary = run(None, str(out), spark=spark, options=options)
        assert summary["integrity"] == check_chains(raw_lines(spark, str(audit), None), keys), n
        state = json.loads((Path(Layout(str(out)).table(STATE_FILE))).read_text())
        assert set(state["batches"]) == {path.name for path in Path(Layout(str(out)).table(CHAIN)).iterdir() if path.is_dir()}
    assert summary["integrity"]["status"] == "broken"
