"""The ingest reads the new text once (spark_audit/staged_parse.py): the staged table holds what the parse and the
chain fields' pass over the text give, and nothing after it reads the text again."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_audit import staged_parse
from spark_audit.chain_integrity import chain_fields, chain_parts, check_chains, conclude, load_public_keys, positioned, raw_lines
from spark_audit.collect import gather
from spark_audit.layout import Layout
from spark_audit.options import JobOptions
from spark_audit.pipeline import chain_fields_of_run, ingest
from spark_audit.read import parse
from spark_audit.schema import CHECKPOINT_EVENT_TYPE
from tests.proxy.audit.chain_trail import write_key_pair, write_run
from tests.spark_audit.records import record_id, request, write_jsonl

pytestmark = pytest.mark.spark

#: Lines a real trail does not hold: blank ones, junk, a line of the wrong shape, a repeated record, a NaN (which
#: json_tuple refuses and Spark's JSON reader takes), a checkpoint whose fields are not a record's.
ODD_LINES: list[dict[str, Any] | str] = [
    "",
    "this is not json {{{",
    " \t ",
    '{"id": "x", "schemaversion": 2}',
    request(1, "2026-11-21T10:00:00.000Z", "r1", "intent"),
    request(1, "2026-11-21T10:00:00.000Z", "r1", "intent"),
    request(2, "2026-11-21T10:00:00.010Z", "r1", "outcome", status="SUCCESS", upstream_ms=float("nan")),
    {"id": record_id(3), "type": CHECKPOINT_EVENT_TYPE, "source": "w", "chainseq": 4, "chainprev": "ab", "time": "2026-11-21T10:00:01Z"},
]


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A proxy's signed trail over three runs (one ended by a crash), with odd lines in a file of their own."""
    base = tmp_path_factory.mktemp("staged")
    private, public = write_key_pair(base)
    audit = base / "audit"

    async def write() -> None:
        await write_run(audit, private, 1, 12)
        await write_run(audit, private, 2, 12, crash=True)
        await write_run(audit, private, 3, 12)

    trio.run(write)
    shutil.rmtree(audit / ".staging", ignore_errors=True)
    write_jsonl(audit / "audit-9-20261121T100000Z-000001.jsonl", ODD_LINES)
    return audit, public


def _raw(spark: SparkSession, audit: Path, *, kafka: bool) -> DataFrame:
    """The trail's lines, with a topic's origins (``kafka:<topic>/<partition>@<offset>``) where ``kafka``."""
    rows = [(line, f"file:{path}") for path in sorted(audit.glob("*.jsonl")) for line in path.read_text().split("\n")]
    if kafka:
        rows = [(line, f"kafka:audit/{n % 3}@{n}") for n, (line, _) in enumerate(rows)]
    # one partition: the lines' positions are the same in every evaluation of the frame
    return spark.createDataFrame(rows, "value string, origin string").coalesce(1)


@pytest.mark.parametrize("kafka", [False, True], ids=["files", "topic"])
def test_the_staged_table_holds_the_parse_and_the_chain_fields(spark: SparkSession, trail: tuple[Path, Path], tmp_path: Path, kafka: bool) -> None:
    raw = _raw(spark, trail[0], kafka=kafka)

    staged = staged_parse.write(spark, raw, str(tmp_path / "staged"), kafka=kafka)

    assertDataFrameEqual(staged_parse.parsed(staged), parse(raw))
    assertDataFrameEqual(staged_parse.chain_fields(staged), chain_fields(positioned(raw, kafka=kafka)))
    # the ids that may repeat: every record's, a repeated one twice, with the record's date
    ids = [row["id"] for row in staged_parse.record_ids(staged).collect()]
    assert sorted(ids) == sorted(row["id"] for row in parse(raw).filter("problem IS NULL").collect())
    assert ids.count(record_id(1)) == 2 and record_id(3) not in ids  # the checkpoint is no record


def test_the_staged_schema_is_the_one_written(spark: SparkSession, trail: tuple[Path, Path], tmp_path: Path) -> None:
    written = spark.read.parquet(str(staged_parse.write(spark, _raw(spark, trail[0], kafka=False), str(tmp_path / "s"), kafka=False).inputFiles()[0]))
    assert [(f.name, f.dataType) for f in written.schema.fields] == [(f.name, f.dataType) for f in staged_parse.STAGED_SCHEMA.fields]


@pytest.fixture
def text_gone_once_staged(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """After each staged write, the input's files are moved away (and back when the test ends): a step that read the
    text again would fail on a missing file."""
    hidden: list[Path] = []
    write = staged_parse.write

    def then_hide(spark: SparkSession, lines: DataFrame, target: str, *, kafka: bool) -> DataFrame:
        staged = write(spark, lines, target, kafka=kafka)
        for name in lines.inputFiles():
            path = Path(name.removeprefix("file:"))
            path.rename(path.with_name(f".hidden-{path.name}"))
            hidden.append(path)
        return staged

    monkeypatch.setattr(staged_parse, "write", then_hide)
    yield hidden
    for path in hidden:
        path.with_name(f".hidden-{path.name}").rename(path)


@pytest.mark.parametrize("incremental", [False, True], ids=["batch", "incremental"])
def test_an_ingest_and_the_chain_check_read_the_text_once(
    spark: SparkSession, trail: tuple[Path, Path], tmp_path: Path, text_gone_once_staged: list[Path], incremental: bool
) -> None:
    """The ingest and the chains' check are what read a run's input; the reports read the store."""
    audit, public = trail
    files = sorted(audit.glob("*.jsonl"))
    lines = [json.loads(line) for path in files for line in path.read_text().splitlines() if line.startswith("{") and line.endswith("}")]
    good = [line["id"] for line in lines if {"time", "data"} <= line.keys() and line.get("type") != CHECKPOINT_EVENT_TYPE]
    options = JobOptions(input=str(audit), incremental=incremental, print_report=False, html=False)
    layout = Layout(str(tmp_path / "out"))
    keys = load_public_keys([str(public)])

    stats = ingest(spark, options, layout)
    verdict = conclude(gather(chain_parts(chain_fields_of_run(spark, options, layout, stats))), keys)

    assert sorted(text_gone_once_staged) == files  # each file read once, then gone
    for path in text_gone_once_staged:
        path.with_name(f".hidden-{path.name}").rename(path)
    text_gone_once_staged.clear()
    # the junk line and the one without a time are quarantined; the repeated record is stored once
    assert (stats.records - stats.duplicates, stats.duplicates, stats.malformed) == (len(set(good)), len(good) - len(set(good)), 2)
    assert len(good) - len(set(good)) == 1
    assert verdict == check_chains(raw_lines(spark, str(audit), None), keys)
