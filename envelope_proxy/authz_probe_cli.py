"""`envelope-proxy authz probe`: ask the active controller's own authorizer each case of a cases file.

Each case goes as a real Envelope, logged in as the proxy (its configuration: controllers, login, TLS), carrying
the case's principal and address, around the dry form of a request that asks the case's question first
(authz/probe_plans.py); the decision is read from the controller's answer. Nothing changes on the cluster unless
`--allow-changes` (DeleteTopics, which has no dry run). A case with no dry path is REFUSED with the reason.

Exit status as `authz check`: 0 every case holds, 1 some do not (a mismatch, an answer that shows no decision,
or a case that could not be asked), 2 bad input.
"""

import argparse
import sys
from pathlib import Path
from typing import Any

import trio

from authz.cases import Case, CaseFileError, load_cases
from authz.probe_plans import NotProbeable, ProbePlan, plan_for_action, plan_for_api
from envelope_proxy.probing import Asked, ask, prober, write_report
from proxy.config import ProxyConfig, parse_proxy_config
from proxy.forward.probe import Asker
from proxy.properties import ConfigError, load_properties

COMMAND = "authz probe"
HOLDS, MISMATCH, UNDECIDED, REFUSED = "HOLDS", "MISMATCH", "UNDECIDED", "REFUSED"


def add_probe_parser(actions: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    probe = actions.add_parser("probe", help="ask the active controller's authorizer each case, in real Envelopes (exit 1 if any case does not hold)")
    probe.add_argument("--config", required=True, help="the proxy's .properties file: controllers, the proxy's own login and TLS, audit")
    probe.add_argument("--cases", required=True, help="JSON lines, as `authz check` reads them (an operation, or a named admin request)")
    probe.add_argument("--report", help="also write the results as JSON to this file")
    probe.add_argument("--allow-changes", action="store_true", help="also send requests that change the cluster when allowed (DeleteTopics)")


def plan_for_case(case: Case, *, allow_changes: bool) -> ProbePlan:
    if case.api is not None:
        return plan_for_api(case.api, case.action.resource_type, case.action.resource_name, allow_changes=allow_changes)
    return plan_for_action(case.action, allow_changes=allow_changes)


def asker_of(case: Case) -> Asker:
    context = case.context
    return Asker(context.principal, context.client_address, context.listener, context.security_protocol, case.where)


def _row(case: Case, status: str, asked: Asked | None, reason: str | None) -> dict[str, Any]:
    decision = asked.decision if asked is not None else None
    return {
        "case": case.where,
        "question": case.describe(),
        "principal": str(case.context.principal),
        "host": str(case.context.client_address),
        "tokenAuthenticated": case.context.principal.token_authenticated,
        "expected": case.expected.name,
        "actual": decision.name if decision is not None else None,
        "status": status,
        "reason": reason,
        **(asked.as_report() if asked is not None else {}),
    }


async def probe_cases(config: ProxyConfig, cases: list[Case], *, allow_changes: bool) -> list[dict[str, Any]]:
    """One report row per case, in the file's order."""
    rows: list[dict[str, Any]] = []
    async with prober(config, COMMAND) as asking:
        for case in cases:
            try:
                plan = plan_for_case(case, allow_changes=allow_changes)
            except NotProbeable as exc:
                rows.append(_row(case, REFUSED, None, str(exc)))
                continue
            asked = await ask(asking, asker_of(case), plan)
            decision = asked.decision
            if decision is None:
                why = "; ".join(asked.answer.messages) or f"codes {sorted(asked.answer.codes)} show no decision"
                rows.append(_row(case, UNDECIDED, asked, why))
            else:
                rows.append(_row(case, HOLDS if decision is case.expected else MISMATCH, asked, None))
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        if row["status"] == MISMATCH:
            print(f"MISMATCH {row['case']}: {row['question']}: expected {row['expected']}, got {row['actual']} ({row['request']}: codes {row['codes']})")
        elif row["status"] != HOLDS:
            print(f"{row['status']} {row['case']}: {row['question']}: {row['reason']}")


def run_probe(args: argparse.Namespace) -> int:
    try:
        cases = load_cases(Path(args.cases))
        config = parse_proxy_config(load_properties(Path(args.config)))
    except (CaseFileError, ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = trio.run(lambda: probe_cases(config, cases, allow_changes=args.allow_changes))
    print_rows(rows)
    counts = {status: sum(1 for row in rows if row["status"] == status) for status in (HOLDS, MISMATCH, UNDECIDED, REFUSED)}
    print(
        f"{len(rows)} cases, {counts[MISMATCH]} mismatches, {counts[UNDECIDED]} undecided, {counts[REFUSED]} refused "
        f"(the authorizer of the controller at {config.upstream.address}, asked as {config.forwarding_principal})"
    )
    if args.report:
        write_report(Path(args.report), {"command": COMMAND, "controllers": config.upstream.address, "counts": counts, "cases": rows})
    return 0 if counts[HOLDS] == len(rows) else 1
