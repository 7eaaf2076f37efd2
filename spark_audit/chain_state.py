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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_audit import hadoop_fs
from spark_audit.chain_integrity import CHAIN_FIELDS, CHECKPOINT, FINDING, GAP, LIMITED, MAX_FINDINGS, MODIFIED, ORIGIN, TOTAL, chain_parts
from spark_audit.collect import gather
from spark_audit.ingest import empty_frame
from spark_audit.tables import read_table

#: the file beside the kept chain fields; ``format`` changes when the findings' rows do
STATE_FILE = "chain_state.json"
FORMAT = 1
#: a finding row's place of each field (spark_audit/chain_integrity.py FINDING, after its kind and writer)
_AT = {name: 2 + n for n, (name, _) in enumerate(FINDING)}
_COUNTS, _FINDINGS = "chain_counts", "chain_findings"


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
        return ChainState(frozenset(kept["batches"]), {_COUNTS: kept[_COUNTS], _FINDINGS: kept[_FINDINGS]})
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def save(spark: SparkSession, path: str, state: ChainState) -> None:
    body = {"format": FORMAT, "batches": sorted(state.batches), _COUNTS: state.found[_COUNTS], _FINDINGS: state.found[_FINDINGS]}
    hadoop_fs.write_text(spark, path, json.dumps(body, separators=(",", ":")))


def _of_kind(found: Mapping[str, Sequence[Sequence[Any]]], kind: str) -> list[list[Any]]:
    return [list(row) for row in found[_FINDINGS] if row[0] == kind]


def _finding(kind: str, writer: str, **given: Any) -> list[Any]:
    row: list[Any] = [kind, writer, *([None] * len(FINDING))]
    for name, value in given.items():
        row[_AT[name]] = value
    return row


def _lowest(values: Iterable[Any]) -> Any:
    present = [value for value in values if value is not None]
    return min(present) if present else None


def _highest(values: Iterable[Any]) -> Any:
    present = [value for value in values if value is not None]
    return max(present) if present else None


def merge(kept: Mapping[str, Sequence[Sequence[Any]]], new: Mapping[str, Sequence[Sequence[Any]]]) -> dict[str, list[list[Any]]] | None:
    """The check's rows over the kept lines and the new ones together, from each part's rows; None where the new lines
    do not continue the kept chains (the module's docstring says what that means), and the whole check must run."""
    if any(len(_of_kind(part, kind)) >= MAX_FINDINGS for part in (kept, new) for kind in LIMITED):
        return None
    if {row[_AT["first"]] for row in _of_kind(kept, ORIGIN)} & {row[_AT["first"]] for row in _of_kind(new, ORIGIN)}:
        return None
    kept_totals = {row[1]: row for row in _of_kind(kept, TOTAL)}
    new_totals = {row[1]: row for row in _of_kind(new, TOTAL)}
    joined = kept_totals.keys() & new_totals.keys()
    if any(new_totals[writer][_AT["c"]] <= kept_totals[writer][_AT["b"]] for writer in joined):
        return None
    a, b, c = _AT["a"], _AT["b"], _AT["c"]
    rows: list[list[Any]] = []
    for writer in kept_totals.keys() | new_totals.keys():
        if writer not in joined:
            rows.append(kept_totals.get(writer) or new_totals[writer])
            continue
        old, more = kept_totals[writer], new_totals[writer]
        first, last = _AT["first"], _AT["last"]
        rows.append(
            _finding(
                TOTAL,
                writer,
                a=old[a] + more[a],
                b=more[b],
                c=old[c],
                first=_lowest((old[first], more[first])),
                last=_highest((old[last], more[last])),
                prev=old[_AT["prev"]],
                hash=more[_AT["hash"]],
            )
        )
        # where the two parts meet: the new part alone saw its first line as following nothing
        if more[c] > old[b] + 1:
            rows.append(_finding(GAP, writer, a=old[b] + 1, b=more[c] - 1))
        elif more[_AT["prev"]] is not None and old[_AT["hash"]] is not None and more[_AT["prev"]] != old[_AT["hash"]]:
            rows.append(_finding(MODIFIED, writer, a=old[b]))
    for kind in (CHECKPOINT, ORIGIN):
        rows += _of_kind(kept, kind) + _of_kind(new, kind)
    for kind in LIMITED:
        listed = _of_kind(kept, kind) + [
            row
            for row in _of_kind(new, kind)
            # the new part's gap before its first line, which the kept lines fill or the edge's gap above replaces
            if not (kind == GAP and row[1] in joined and row[a] == 1 and row[b] == new_totals[row[1]][c] - 1)
        ]
        listed += [row for row in rows if row[0] == kind]
        rows = [row for row in rows if row[0] != kind]
        unique = {tuple(row) for row in listed}
        rows += [list(row) for row in sorted(unique, key=lambda row: (row[1], row[a], row[b] if row[b] is not None else -1))][:MAX_FINDINGS]
    return {_COUNTS: [[sum(int(part[_COUNTS][0][n]) for part in (kept, new)) for n in range(2)]], _FINDINGS: rows}


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
        ours = {_COUNTS: found[_COUNTS], _FINDINGS: found[_FINDINGS]}
        whole: Mapping[str, Sequence[Sequence[Any]]] | None = ours if self.kept is None else merge(self.kept.found, ours)
        if whole is None:
            whole = gather(chain_parts(read_table(spark, CHAIN_FIELDS, self.table)))
        save(spark, self.state_path, ChainState(self.every, whole))
        return {key: [tuple(row) for row in rows] for key, rows in whole.items()}
