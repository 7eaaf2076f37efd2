"""The page's tables of denials and sensitive changes, in words: who denied, why, and what changed.

The rows come from :func:`spark_audit.denial_reports.denial_details` and
:func:`spark_audit.request_reports.sensitive_change_details` (Spark); only the newest ``limit`` reach the driver,
where they are put into a few short columns that fit a laptop screen (the Parquet reports keep every column).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_audit import changes, collect
from spark_audit.report_data import Table
from spark_audit.view import BY_CONTROLLER, BY_PROXY_EDGE, BY_PROXY_RIGHTS, UNAUTHENTICATED, WHO_COLUMNS

#: The page's columns.
DENIAL_COLUMNS = ("time", "principal", "from", "method", "resource", "denied by", "error", "status", "why")
CHANGE_COLUMNS = ("time", "principal", "from", "method", "what changed", "status", "denied by", "error")


def _method(method: Any) -> str:
    return str(method).removeprefix("kafka.") if method is not None else "-"


def _from(address: Any, listener: Any, forwarder: Any = None) -> str:
    where = f"{address or '?'} on {listener}" if listener else str(address or "?")
    return f"{where}\nvia {forwarder}" if forwarder else where


def error_text(code: Any, name: Any) -> str | None:
    """``31 CLUSTER_AUTHORIZATION_FAILED``; None where no code says why, or for 0 (no error)."""
    if code is None or code == 0:
        return None
    return f"{code} {name}" if name else str(code)


def _why(denied_by: Any, principal: Any, forwarder: Any, reason: Any, detail: Any) -> str:
    who = principal or UNAUTHENTICATED
    if denied_by == BY_PROXY_RIGHTS:
        return f"the proxy's principal {forwarder or '?'} lacks CLUSTER_ACTION on the controller; {who}'s own rights were not checked"
    if denied_by == BY_CONTROLLER:
        return f"the controller's authorizer denied {who}"
    said = ": ".join(str(part) for part in (reason, detail) if part)
    return said or ("refused by the proxy" if denied_by == BY_PROXY_EDGE else "refused by the proxy (connection)")



#: The columns of :func:`spark_audit.denial_reports.denial_details` the page reads.
DENIAL_DETAIL_COLUMNS = (
    *WHO_COLUMNS,
    "subject",
    "deniedResources",
    "deniedBy",
    "errorCode",
    "errorName",
    "status",
    "reason",
    "detail",
)


def newest_denials(details: DataFrame, limit: int) -> DataFrame:
    """The newest ``limit`` denials of :func:`spark_audit.denial_reports.denial_details`, in the columns the page reads."""
    return details.orderBy(F.desc("time")).select(*DENIAL_DETAIL_COLUMNS).limit(limit)


def denial_table_of(rows: Sequence[Sequence[Any]], total: int) -> Table:
    """:func:`newest_denials`'s rows as the page's :data:`DENIAL_COLUMNS`."""
    shown = []
    for time, principal, address, listener, forwarder, method, subject, denied, by, code, name, status, reason, detail in rows:
        resource = ", ".join(denied) if denied else subject
        shown.append(
            (
                time,
                principal or UNAUTHENTICATED,
                _from(address, listener, forwarder if by == BY_PROXY_RIGHTS else None),
                _method(method),
                resource,
                by,
                error_text(code, name),
                status,
                _why(by, principal, forwarder, reason, detail),
            )
        )
    return Table(columns=DENIAL_COLUMNS, rows=shown, total=total)


def denial_table(details: DataFrame, limit: int) -> Table:
    """The newest ``limit`` denials of :func:`spark_audit.denial_reports.denial_details`."""
    return denial_table_of(collect.rows(newest_denials(details, limit)), details.count())


def change_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows of (time, principal, clientAddress, listener, forwardingPrincipal, method, resources, parameters,
    status, deniedBy, shownCode, shownName) as the page's :data:`CHANGE_COLUMNS`."""
    shown = []
    for time, principal, address, listener, forwarder, method, resources, parameters, status, by, code, name in rows:
        shown.append(
            (
                time,
                principal,
                _from(address, listener, forwarder),
                _method(method),
                changes.describe(method, parameters, resources),
                status,
                by,
                error_text(code, name),
            )
        )
    return shown


#: The columns of :func:`spark_audit.request_reports.sensitive_change_details` the page reads.
CHANGE_DETAIL_COLUMNS = (
    *WHO_COLUMNS,
    "resources",
    "parameters",
    "status",
    "deniedBy",
    "shownCode",
    "shownName",
)


def newest_changes(details: DataFrame, limit: int) -> DataFrame:
    """The newest ``limit`` changes of :func:`spark_audit.request_reports.sensitive_change_details`, in the columns the page reads."""
    return details.orderBy(F.desc("time"), F.desc("requestId")).select(*CHANGE_DETAIL_COLUMNS).limit(limit)


def change_table(details: DataFrame, limit: int) -> Table:
    """The newest ``limit`` changes of :func:`spark_audit.request_reports.sensitive_change_details`."""
    return Table(columns=CHANGE_COLUMNS, rows=change_rows(collect.rows(newest_changes(details, limit))), total=details.count())
