"""`envelope-proxy authz replay`: what a candidate controller (a new policy, another plug-in) would decide for the
requests production forwarded, beside what production decided.

Reads audit records (JSON lines files, or folders of them: `audit.log.dir`, or the files the Spark job reads),
keeps the forwarded requests the controller answered in [--since, --until), and asks each distinct question
(principal, address, API, resource) of the controller of --config as `authz probe` does, audited with
`data.probe`. The report lists NEW DENIAL, NEW ALLOW, UNCHANGED and NOT ASKED (no dry path) per question.
Exit status: 0 no decision changed, 1 some changed or could not be asked, 2 bad input.
"""

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import trio

from authz.replay import NEW_ALLOW, NEW_DENIAL, NOT_ASKED, UNCHANGED, Question, ReplayInputError, compare, parse_time, questions
from envelope_proxy.probing import ask, prober, write_report
from proxy.config import ProxyConfig, parse_proxy_config
from proxy.forward.probe import Asker
from proxy.properties import ConfigError, load_properties

COMMAND = "authz replay"
OUTCOMES = (NEW_DENIAL, NEW_ALLOW, UNCHANGED, NOT_ASKED)
_RECORD_FILES = ("*.jsonl", "*.json", "*.jsonl.gz")


def add_replay_parser(actions: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    replay = actions.add_parser("replay", help="ask a candidate controller the questions of recorded requests; list the decisions that change")
    replay.add_argument("--config", required=True, help="a proxy .properties file whose controllers run the candidate authorizer")
    replay.add_argument("--audit", required=True, nargs="+", help="audit files (JSON lines, .gz too) or folders of them")
    replay.add_argument("--since", help="first record time to replay (ISO 8601, inclusive)")
    replay.add_argument("--until", help="record time to stop at (ISO 8601, exclusive)")
    replay.add_argument("--report", help="also write the comparison as JSON to this file")


def _files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found += sorted(f for pattern in _RECORD_FILES for f in path.rglob(pattern))
        elif path.is_file():
            found.append(path)
        else:
            raise ReplayInputError(f"{path}: no such file or folder")
    return found


def read_records(paths: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file:line, record) of every line; ReplayInputError naming the line that is no JSON object."""
    for path in _files(paths):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ReplayInputError(f"{path}:{number}: not JSON: {exc.msg}") from None
                if not isinstance(record, dict):
                    raise ReplayInputError(f"{path}:{number}: not an audit record (a JSON object)")
                yield f"{path}:{number}", record


def _row(question: Question, outcome: str, candidate: str | None, detail: dict[str, Any]) -> dict[str, Any]:
    r = question.resource
    return {
        "outcome": outcome,
        "principal": str(question.principal),
        "host": str(question.address),
        "listener": question.listener,
        "method": question.method,
        "operation": r.operation.name,
        "resourceType": r.resource_type.name,
        "resourceName": r.resource_name,
        "production": question.production.name,
        "candidate": candidate,
        "requests": question.seen,
        "firstRequestId": question.first,
        "reason": question.refused,
        **detail,
    }


async def replay(config: ProxyConfig, asked: list[Question]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    async with prober(config, COMMAND) as asking:
        for question in asked:
            if question.plan is None:
                rows.append(_row(question, NOT_ASKED, None, {}))
                continue
            asker = Asker(question.principal, question.address, question.listener, question.security_protocol, question.first)
            result = await ask(asking, asker, question.plan)
            decision = result.decision
            rows.append(_row(question, compare(question.production, decision), decision.name if decision else None, result.as_report()))
    return rows


def run_replay(args: argparse.Namespace) -> int:
    try:
        since: datetime | None = parse_time(args.since, "--since") if args.since else None
        until: datetime | None = parse_time(args.until, "--until") if args.until else None
        asked = questions(read_records(args.audit), since, until)
        config = parse_proxy_config(load_properties(Path(args.config)))
    except (ReplayInputError, ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = trio.run(replay, config, asked)
    for row in rows:
        if row["outcome"] != UNCHANGED:
            print(
                f"{row['outcome']}: {row['principal']} from {row['host']} {row['method']} {row['operation']} "
                f"{row['resourceType']}:{row['resourceName']} (production {row['production']}, candidate {row['candidate']}, "
                f"{row['requests']} requests){' ' + row['reason'] if row['reason'] else ''}"
            )
    counts = {outcome: sum(1 for row in rows if row["outcome"] == outcome) for outcome in OUTCOMES}
    print(", ".join(f"{count} {outcome.lower()}" for outcome, count in counts.items()) + f" ({len(rows)} questions)")
    if args.report:
        write_report(Path(args.report), {"command": COMMAND, "controllers": config.upstream.address, "counts": counts, "questions": rows})
    return 0 if counts[UNCHANGED] == len(rows) else 1
