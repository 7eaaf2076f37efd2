"""The controller's change log: who changed what, as the controller saw it (the forwarded identity)."""

from dataclasses import dataclass

from authz import RequestContext

MAX_CHANGES = 10_000
"""How many changes `MetadataImage.changes` keeps: the newest.

The log lives in memory only (it is not persisted) and is there to be looked
at: tests, the demo and the pytest plug-in ask who changed what, as the
controller saw it; the durable record is the proxy's audit log. Kept whole it
would grow by one entry per changed resource for as long as the process runs;
10,000 entries cover any test or demo run in a few MB.
"""


@dataclass(frozen=True)
class Change:
    """Who changed what, as seen by the controller (the forwarded identity)."""

    api: str
    principal: str
    client_address: str
    forwarded_by: str | None
    resource: str
    error_code: int


def change_of(api: str, ctx: RequestContext, resource: str, code: int) -> Change:
    return Change(
        api,
        str(ctx.principal),
        str(ctx.client_address),
        str(ctx.forwarding_principal) if ctx.forwarding_principal else None,
        resource,
        int(code),  # a plain int, whether the handler named it with ErrorCode or not
    )
