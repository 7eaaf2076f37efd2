"""What `authz probe` and `authz replay` share: the proxy's upstream pool and audit log, opened from its configuration
and run for as long as the questions take, and one question asked through them.

Each question is bounded by `controller.forward.timeout.ms` (the pool re-sends over failovers until then) and
by `trio.fail_after` a little beyond it, in case the pool's own deadline is missed.
"""

import ipaddress
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from authz.model import Decision
from authz.probe_plans import ProbePlan, decide
from proxy.audit.settings import audit_running, open_audit_log
from proxy.config import ProxyConfig
from proxy.forward.probe import Asker, ProbeAnswer, Prober
from proxy.upstream.pool import ControllerPool

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

GRACE_SECONDS = 5.0
"""How long past the pool's own deadline a question may take before it is abandoned as unanswered."""


@dataclass(frozen=True)
class Asked:
    """A question and what the controller's answer shows."""

    plan: ProbePlan
    answer: ProbeAnswer

    @property
    def decision(self) -> Decision | None:
        return decide(self.plan, self.answer.codes)

    def as_report(self) -> dict[str, Any]:
        return {
            "request": self.plan.how,
            "asks": [f"{a.operation.name} {a.resource_type.name}:{a.resource_name}" for a in self.plan.asks],
            "codes": sorted(self.answer.codes),
            "envelopeErrorCode": self.answer.envelope_error,
            "messages": list(self.answer.messages),
            "controller": self.answer.controller,
        }


@asynccontextmanager
async def prober(config: ProxyConfig, command: str) -> AsyncIterator[Prober]:
    """The proxy's pool (its login, TLS and quorum settings) and audit log, running while the block runs."""
    audit = open_audit_log(config.audit, config.audit_log_dir, config.node_id)
    pool = ControllerPool(config.upstream)
    async with audit_running(audit, config.shutdown_timeout), trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        try:
            yield Prober(pool, audit, node_id=config.node_id, forwarding_principal=config.forwarding_principal, command=command)
        finally:
            nursery.cancel_scope.cancel()


async def ask(prober: Prober, asker: Asker, plan: ProbePlan) -> Asked:
    limit = prober.pool.settings.forward_timeout + GRACE_SECONDS
    try:
        with trio.fail_after(limit):
            answer = await prober.ask(asker, plan)
    except trio.TooSlowError:
        answer = ProbeAnswer(None, set(), (f"no answer within {limit:.0f} s",), None)
    return Asked(plan, answer)


def write_report(path: Path, report: dict[str, Any]) -> None:
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


__all__ = ["Asked", "Asker", "ask", "prober", "write_report"]
