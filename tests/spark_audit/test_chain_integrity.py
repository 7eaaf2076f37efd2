"""The Spark job checks the audit chains at scale and finds, at the same places, what `audit verify` finds."""

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from envelope_proxy.audit_verify_cli import public_keys
from proxy.audit.chain_verify import verify_lines
from spark_audit.chain_integrity import CHAIN_FIELDS, chain_parts, check_chains, conclude, load_public_keys, raw_lines
from spark_audit.collect import gather
from spark_audit.ingest import CHAIN
from spark_audit.integrity_banner import integrity_banner
from spark_audit.layout import Layout
from spark_audit.options import JobOptions
from spark_audit.pipeline import ingest, run
from spark_audit.tables import read_table
from tests.proxy.audit.chain_trail import lines_of, published
from tests.spark_audit.chain_trails import RECORDS, TAMPERING, trails

pytestmark = pytest.mark.spark
__all__ = ["trails"]  # a fixture


def _findings(writer: dict[str, Any]) -> dict[str, Any]:
    return {kind: [list(item) if isinstance(item, tuple) else item for item in writer[kind]] for kind in ("missing", "modified", "reordered", "bad_signatures")}


@pytest.mark.parametrize("tampering", list(TAMPERING))
def test_spark_finds_what_verify_finds(spark: SparkSession, trails: tuple[dict[str, Path], Path], tampering: str) -> None:
    directories, public = trails
    audit = directories[tampering]
    result = check_chains(raw_lines(spark, str(audit), None), load_public_keys([str(public)]))
    verified = verify_lines(lines_of(audit), public_keys([str(public)])).as_dict()
    assert result["status"] == verified["status"] == ("whole" if tampering == "untouched" else "broken"), (result, verified)
    spark_writers = {writer["writer"]: _findings(writer) for writer in result["writers"]}
    verify_writers = {writer["writer"]: _findings(writer) for writer in verified["writers"]}
    assert spark_writers == verify_writers
    assert result["unchained"] == verified["unchained"]
    if tampering != "untouched":
        broken = [writer for writer in result["writers"] if writer["status"] == "broken"]
        assert len(broken) == 1 and broken[0]["writer"].startswith("envelope-proxy/1/") and broken[0]["first_break"] is not None


def test_the_job_puts_a_broken_trail_in_the_summary_and_a_red_banner_on_top_of_the_report(
    spark: SparkSession, trails: tuple[dict[str, Path], Path], tmp_path: Path
) -> None:
    directories, public = trails
    options = JobOptions(input=str(directories["edit principal"]), print_report=False, chain_public_keys=(str(public),))
    summary = run(None, str(tmp_path / "out"), spark=spark, options=options)
    assert summary["integrity"]["status"] == "broken"
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["integrity"]["status"] == "broken"
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.index('class="integrity broken"') < page.index("<header>")
    assert summary["records"] == 3 * RECORDS, "checkpoints are not audit records"


def test_the_banner_of_a_whole_trail_says_whether_signatures_were_checked() -> None:
    whole = {"status": "whole", "signatures_checked": False, "writers": [{"records": 3, "status": "whole"}]}
    assert "NOT checked" in integrity_banner(whole) and integrity_banner(None) == ""


def test_incremental_runs_check_the_chains_from_the_fields_they_kept(
    spark: SparkSession, trails: tuple[dict[str, Path], Path], tmp_path: Path
) -> None:
    """Two incremental ingests, one of a file published late into the first run's trail: the check over the chain
    fields they kept finds what the check over every file's text finds (a truncated tail, claimed by a later start)."""
    directories, public = trails
    source = directories["truncate tail"]
    audit, out = tmp_path / "audit", tmp_path / "out"
    shutil.copytree(source, audit)
    late = published(audit)[1]
    held_back = tmp_path / late.name
    late.rename(held_back)
    options = JobOptions(input=str(audit), incremental=True, print_report=False, html=False)
    layout = Layout(str(out))
    assert ingest(spark, options, layout).batches == 1
    held_back.rename(late)
    assert ingest(spark, options, layout).batches == 1

    keys = load_public_keys([str(public)])
    kept = conclude(gather(chain_parts(read_table(spark, CHAIN_FIELDS, layout.table(CHAIN)))), keys)

    expected = check_chains(raw_lines(spark, str(audit), None), keys)
    assert expected["status"] == "broken"
    assert kept == expected


def test_a_manifest_from_before_the_kept_chain_fields_gets_them_once_from_the_files_it_holds(
    spark: SparkSession, trails: tuple[dict[str, Path], Path], tmp_path: Path
) -> None:
    """An older manifest (no ``chainKept``) held files whose chain fields were never kept: the next run keeps those
    of the files it holds from their text, once, beside the new files' from their staged parse."""
    directories, public = trails
    audit, out = tmp_path / "audit", tmp_path / "out"
    shutil.copytree(directories["untouched"], audit)
    late = published(audit)[-1]
    held_back = tmp_path / late.name
    late.rename(held_back)
    options = JobOptions(input=str(audit), incremental=True, print_report=False, html=False)
    layout = Layout(str(out))
    ingest(spark, options, layout)
    manifest = out / "_checkpoint" / "files.json"
    older = json.loads(manifest.read_text())
    del older["chainKept"]
    manifest.write_text(json.dumps(older))
    (manifest.parent / ".files.json.crc").unlink(missing_ok=True)  # Hadoop's checksum of the text replaced
    shutil.rmtree(layout.table(CHAIN))
    held_back.rename(late)

    assert ingest(spark, options, layout).batches == 1

    assert sorted(path.name for path in Path(layout.table(CHAIN)).iterdir() if path.is_dir()) == [
        f"batch={older['nextBatch']}",
        f"batch=before-{older['nextBatch']}",
    ]
    keys = load_public_keys([str(public)])
    kept = conclude(gather(chain_parts(read_table(spark, CHAIN_FIELDS, layout.table(CHAIN)))), keys)
    assert kept == check_chains(raw_lines(spark, str(audit), None), keys)
    assert json.loads(manifest.read_text())["chainKept"] is True

