"""Realistic synthetic audit records (docs/audit-schema.md, version 2) for the audit job benchmark.

Traffic as a deployment writes it, configurable with :class:`Traffic`:

- several proxy nodes (``source`` envelope-proxy/<node>/<process>), each rotating its file every hour, every line
  sealed into its writer's hash chain as the proxy seals it
  (``audit-<node>-<UTC hour>-<seq>.jsonl``), over several days;
- several listeners (SASL_SSL/SCRAM, SASL_PLAINTEXT/PLAIN, SSL, PLAINTEXT as User:ANONYMOUS);
- about 160 principals whose volumes follow a Zipf law (a few service accounts do most of the work),
  every forwarded request carrying the proxy's own identity as ``forwardingPrincipal``;
- whole connections: connected, authenticated, requests, disconnected (with a cause);
  refused connections (IP filter, connection limits, privileged principals, protocol errors);
  brute-force bursts of failed logins from one address;
- requests: forwarded (intent + outcome: success, per-resource errors, authorization failures,
  envelope errors), reads authorized at the edge (some with denied resources), local answers
  and request refusals;
- the edge cases of a real audit directory: outcomes whose intent is missing, intents that never
  got an outcome, records written twice in one file and re-published in a later file,
  malformed lines (torn, wrong types, no id, unknown schema version) and blank lines.

Deterministic for a given seed. ``python bench/audit/generate.py DIR --records N`` writes a directory. What the traffic
is made of: ``audit_traffic.py``; the records of one connection: ``audit_sessions.py``; the files: here.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit_sessions import Generator
from audit_traffic import Counts, Traffic

from proxy.audit.chain import chain_suffix, line_hash
from proxy.audit.chain_format import GENESIS

__all__ = ["Counts", "Generator", "Traffic", "write"]


def _malformed(rng: random.Random, line: str, record: dict[str, Any]) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return line[: len(line) // 2]  # a torn line
    broken = json.loads(line)
    if kind == 1:
        broken["schemaversion"] = "two"  # a string where the schema has an integer
    elif kind == 2:
        del broken["id"]
    else:
        broken["schemaversion"] = 9
    return json.dumps(broken, separators=(",", ":"))


class _Files:
    """One open file per node, rotated when a record's hour differs from the file's."""

    def __init__(self, directory: Path, rotate_seconds: int) -> None:
        self.directory = directory
        self.rotate = rotate_seconds
        self.open: dict[str, tuple[int, Any]] = {}
        self.previous: dict[str, list[str]] = {}
        self.recent: dict[str, list[str]] = {}
        self.seq = 0
        self.count = 0

    def handle(self, node: str, time: str) -> Any:
        moment = datetime.fromisoformat(time.replace("Z", "+00:00"))
        slot = int(moment.timestamp()) // self.rotate
        current = self.open.get(node)
        if current is not None and current[0] == slot:
            return current[1]
        if current is not None:
            current[1].close()
            self.previous[node] = self.recent.get(node, [])
            self.recent[node] = []
        self.seq += 1
        self.count += 1
        stamp = datetime.fromtimestamp(slot * self.rotate, UTC).strftime("%Y%m%dT%H%M%SZ")
        handle = (self.directory / f"audit-{node}-{stamp}-{self.seq:06d}.jsonl").open("w", encoding="utf-8")
        self.open[node] = (slot, handle)
        return handle

    def close(self) -> None:
        for _, handle in self.open.values():
            handle.close()


class _Chains:
    """Each writer's hash chain, as the proxy seals its lines (proxy/audit/chain.py): ``chainseq`` and ``chainprev``
    appended to the record's JSON, the chain's head the SHA-256 of the sealed line. A line written twice (a duplicate)
    is the sealed line again; a malformed line is never sealed, as a record the proxy never wrote whole."""

    def __init__(self) -> None:
        self.heads: dict[str, tuple[int, str]] = {}

    def seal(self, writer: str, line: str) -> str:
        seq, head = self.heads.get(writer, (0, GENESIS))
        sealed = line[:-1].encode("utf-8") + chain_suffix(seq + 1, head)
        self.heads[writer] = (seq + 1, line_hash(sealed))
        return sealed[:-1].decode("utf-8")  # without the `\n` chain_suffix ends it with: write() adds it


def write(directory: Path, total: int, *, seed: int = 7, traffic: Traffic | None = None) -> Counts:
    """Write ``total`` lines into hourly files per node in ``directory``, edge cases included."""
    t = traffic or Traffic()
    directory.mkdir(parents=True, exist_ok=True)
    generator = Generator(seed, t)
    rng = random.Random(seed + 1)
    files = _Files(directory, t.rotate_seconds)
    chains = _Chains()
    malformed = duplicates = good = blank = 0
    written = 0
    records = generator.records(total)
    try:
        while written < total:
            roll = rng.random()
            record = next(records, None)
            if record is None:
                break
            node = record["source"].split("/")[1]
            handle = files.handle(node, record["time"])
            line = json.dumps(record, separators=(",", ":"))
            recent = files.recent.setdefault(node, [])
            previous = files.previous.get(node) or []
            if roll < t.malformed:
                handle.write(_malformed(rng, line, record) + "\n")
                malformed += 1
                written += 1
                continue  # the record itself was never written whole: nothing may duplicate it
            if t.chained:
                line = chains.seal(record["source"], line)
            # A blank line or a duplicate comes before the record's own line.
            before: str | None = None
            if roll < t.malformed + t.blank:
                before = ""
                blank += 1
            elif roll < t.malformed + t.blank + t.duplicate_in_file and recent:
                before = rng.choice(recent)
                duplicates += 1
            elif roll < t.malformed + t.blank + t.duplicate_in_file + t.duplicate_across_files and previous:
                before = rng.choice(previous)  # a restarted proxy publishing again what an earlier file of the node holds
                duplicates += 1
            if before is not None:
                handle.write(before + "\n")
                written += 1
                if written >= total:
                    break
            handle.write(line + "\n")
            good += 1
            written += 1
            if len(recent) < 200:
                recent.append(line)
            else:
                recent[rng.randrange(200)] = line
    finally:
        files.close()
    return Counts(
        records=good,
        malformed=malformed,
        duplicates=duplicates,
        blank=blank,
        files=files.count,
        extra={"lost_intents": generator.lost_intents, "lost_outcomes": generator.lost_outcomes},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Write realistic audit files (docs/audit-schema.md) into a directory.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--records", type=int, default=1_000_000, help="lines to write (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=Traffic.days)
    parser.add_argument("--nodes", type=int, default=Traffic.nodes)
    parser.add_argument("--principals", type=int, default=Traffic.principals)
    parser.add_argument("--start-day", type=int, default=0, help="days after 2026-11-21 the traffic starts (for a later day's files)")
    args = parser.parse_args()
    traffic = Traffic(days=args.days, nodes=args.nodes, principals=args.principals, start_day=args.start_day)
    counts = write(args.directory, args.records, seed=args.seed, traffic=traffic)
    print(json.dumps({"lines": args.records, **counts.__dict__}))


if __name__ == "__main__":
    main()
