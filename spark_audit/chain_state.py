"""What an incremental run keeps of the hash chains' check, so that a rerun checks its new lines, not the history.

The kept state (``_tables/chain_state.json``) is the check's result over the batches of kept chain fields it names
(``_tables/chain/batch=<n>``, spark_audit/ingest.py): its counts and its rows of findings
(spark_audit/chain_integrity.py :func:`chain_parts`: each writer's totals, with its first line's prev and its last
line's hash, the checkpoints, the origins read, and the gaps, modified and reordered lines). A rerun checks the batches
the state does not name and :func:`merge` joins the two results, which equals the check over every batch when the new
lines continue each writer's chain:

- each writer's new lines all come after its last kept line, so no new line takes a place a kept one holds, and the
  two parts meet at one link per writer, which :func:`merge` checks with the kept last hash;
- no origin of the new lines was read before, so no read order spans both parts (reordered lines);
- no list of findings of either part reached :data:`MAX_FINDINGS`: a list cut there is not whole, and the whole
  check keeps the first of all of them.

That is how a proxy's trail grows: new files, each writer's lines in order. Where it does not hold (a file read
again, a line delivered twice, a kept state of another form), :func:`merge` says so and the run checks every batch
again, as it did before there was a state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_audit import hadoop_fs
from spark_audit.chain_integrity import (
    CHAIN_FIELDS,
    CHECKPOINT,
    COUNTS,
    FINDING,
    FINDINGS,
    GAP,
    LIMITED,
    MAX_FINDINGS,
    MODIFIED,
    ORIGIN,
    TOTAL,
    chain_parts,
    findings_by_kind,
)
from spark_audit.collect import gather
from spark_audit.ingest import empty_frame
from spark_audit.tables import read_table

#: the file beside the kept chain fields; ``format`` changes when the findings' rows do
STATE_FILE = "chain_state.json"
FORMAT = 1
#: a finding row's place of each field (spark_audit/chain_integrity.py FINDING, after its kind and writer)
_AT = {name: 2 + n for n, (name, _) in enumerate(FINDING)}


@dataclass(frozen=True)
class ChainState:
    #: the batches of kept chain fields the check covered
    batches: frozenset[str]
    #: gather()'s rows of chain_parts over them: ``chain_counts`` and ``chain_findings``
    found: Mapping[str, Sequence[Sequence[Any]]]


def batches(spark: SparkSession, chain_table: str) -> frozenset[str]:
    """The names of the ``batch=<n>`` folders of the kept chain fields."""
    path, fs = hadoop_fs.file_system(spark, chain_table)
    if not fs.exists(path(chain_table)):
        return frozenset()
    names = (status.getPath().getName() for status in fs.listStatus(path(chain_table)) if status.isDirectory())
    return frozenset(name for name in names if name.startswith("batch="))


def load(spark: SparkSession, path: str) -> ChainState | None:
    """The kept state, None where there is none or it is of another form (the run then checks every batch)."""
    text = hadoop_fs.read_text(spark, path)
    if text is None:
        return None
    try:
        kept = json.loads(text)
        if kept.get("format") != FORMAT:
            return None
        return ChainState(frozenset(kept["batches"]), {COUNTS: kept[COUNTS], FINDINGS: kept[FINDINGS]})
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def save(spark: SparkSession, path: str, state: ChainState) -> None:
    body = {"format": FORMAT, "batches": sorted(state.batches), COUNTS: state.found[COUNTS], FINDINGS: state.found[FINDINGS]}
    hadoop_fs.write_text(spark, path, json.dumps(body, separators=(",", ":")))


def _row(kind: str, writer: str, **given: Any) -> list[Any]:
    """A findings row as :func:`spark_audit.chain_integrity.chain_parts` gives it."""
    row: list[Any] = [kind, writer, *([None] * len(FINDING))]
    for name, value in given.items():
        row[_AT[name]] = value
    return row


def _present(*values: Any) -> list[Any]:
    return [value for value in values if value is not None]


def merge(kept: Mapping[str, Sequence[Sequence[Any]]], new: Mapping[str, Sequence[Sequence[Any]]]) -> dict[str, list[list[Any]]] | None:
    """The check's rows over the kept lines and the new ones together, from each part's rows; None where the new lines
    do not continue the kept chains (the module's docstring says what that means), and the whole check must run."""
    old_rows, new_rows = findings_by_kind(kept), findings_by_kind(new)
    if any(len(part[kind]) >= MAX_FINDINGS for part in (old_rows, new_rows) for kind in LIMITED):
        return None
    first, a, b, c = _AT["first"], _AT["a"], _AT["b"], _AT["c"]
    if {row[first] for row in old_rows[ORIGIN]} & {row[first] for row in new_rows[ORIGIN]}:
        return None
    kept_totals = {row[1]: row for row in old_rows[TOTAL]}
    new_totals = {row[1]: row for row in new_rows[TOTAL]}
    joined = kept_totals.keys() & new_totals.keys()
    if any(new_totals[writer][c] <= kept_totals[writer][b] for writer in joined):
        return None
    totals = [row for writer, row in {**kept_totals, **new_totals}.items() if writer not in joined]
    # where the two parts meet: the new part alone saw its first line as following nothing
    edges: dict[str, list[list[Any]]] = {kind: [] for kind in LIMITED}
    for writer in joined:
        old, more = kept_totals[writer], new_totals[writer]
        last, prev, hash_ = _AT["last"], _AT["prev"], _AT["hash"]
        totals.append(
            _row(
                TOTAL,
                writer,
                a=old[a] + more[a],
                b=more[b],
                c=old[c],
                first=min(_present(old[first], more[first]), default=None),
                last=max(_present(old[last], more[last]), default=None),
                prev=old[prev],
                hash=more[hash_],
            )
        )
        if more[c] > old[b] + 1:
            edges[GAP].append(_row(GAP, writer, a=old[b] + 1, b=more[c] - 1))
        elif more[prev] is not None and old[hash_] is not None and more[prev] != old[hash_]:
            edges[MODIFIED].append(_row(MODIFIED, writer, a=old[b]))
    rows = totals + old_rows[CHECKPOINT] + new_rows[CHECKPOINT] + old_rows[ORIGIN] + new_rows[ORIGIN]
    for kind in LIMITED:
        # the new part's gap before its first line, which the kept lines fill or the edge's gap replaces
        leading = [row for row in new_rows[kind] if kind == GAP and row[1] in joined and row[a] == 1 and row[b] == new_totals[row[1]][c] - 1]
        listed = {tuple(row) for row in old_rows[kind] + new_rows[kind] + edges[kind] if row not in leading}
        rows += [list(row) for row in sorted(listed, key=lambda row: (row[1], row[a], row[b] if row[b] is not None else -1))][:MAX_FINDINGS]
    return {COUNTS: [[sum(int(part[COUNTS][0][n]) for part in (kept, new)) for n in range(2)]], FINDINGS: rows}


@dataclass(frozen=True)
class Check:
    """The hash chains' check of an incremental run over files: the new batches' lines where a kept state covers the
    others (:func:`merge`), or every batch's."""

    #: the kept chain fields (``_tables/chain``) and the state beside them
    table: str
    state_path: str
    every: frozenset[str]
    kept: ChainState | None

    @classmethod
    def of(cls, spark: SparkSession, table: str, state_path: str) -> Check:
        every = batches(spark, table)
        kept = load(spark, state_path)
        # a state naming a batch that is gone describes other lines
        return cls(table, state_path, every, kept if kept is not None and kept.batches <= every else None)

    def fields(self, spark: SparkSession) -> DataFrame:
        """The lines the run's query checks: the batches the kept state does not cover, or every batch."""
        if self.kept is None:
            return read_table(spark, CHAIN_FIELDS, self.table)
        new = sorted(self.every - self.kept.batches)
        if not new:
            return empty_frame(spark, CHAIN_FIELDS)
        return spark.read.schema(CHAIN_FIELDS).parquet(*[f"{self.table}/{name}" for name in new])

    def finish(self, spark: SparkSession, found: Mapping[str, Sequence[Sequence[Any]]]) -> dict[str, list[tuple[Any, ...]]]:
        """The check over every batch, from the query's rows of :meth:`fields` (merged with the kept state, or the whole
        check run again where they cannot be), kept for the next run."""
        ours = {COUNTS: found[COUNTS], FINDINGS: found[FINDINGS]}
        whole: Mapping[str, Sequence[Sequence[Any]]] | None = ours if self.kept is None else merge(self.kept.found, ours)
        if whole is None:
            whole = gather(chain_parts(read_table(spark, CHAIN_FIELDS, self.table)))
        save(spark, self.state_path, ChainState(self.every, whole))
        return {key: [tuple(row) for row in rows] for key, rows in whole.items()}
