"""The one respond step of every route: audit the outcome, count it, then send the answer.

Route handlers (proxy/forward/service.py, forwarding.py, the reads) only say what to
answer: an `Answer`. `respond` keeps the order every answer needs: the outcome record
is committed before the client can read the answer, and the metrics count it once.
"""

from dataclasses import dataclass

from proxy.audit.request_records import Outcome, RequestAudit
from proxy.net.connection import KafkaConnection
from proxy.ops.metrics import ProxyMetrics


@dataclass(frozen=True, slots=True)
class Answer:
    """What one request is answered with: how it ended (for the record and the metrics), the bytes to send, if
    any, and what to raise after them, if anything (CloseConnection, or the ProtocolError that closes the connection)."""

    outcome: Outcome
    frame: bytes | None = None
    then: BaseException | None = None


async def respond(conn: KafkaConnection, audit: RequestAudit, metrics: ProxyMetrics, answer: Answer) -> None:
    await audit.record(answer.outcome)
    audit.count(metrics, answer.outcome)
    if answer.frame is not None:
        await conn.send(answer.frame)
    if answer.then is not None:
        raise answer.then


__all__ = ["Answer", "respond"]
