"""The page's ACL hygiene section: unused grants, the minimal ACLs, their proof, and where the scripts are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spark_audit.html_table import table
from spark_audit.html_text import text as _t
from spark_audit.report_data import Table

ANCHOR = "acls"
TITLE = "ACL hygiene"


def _facts(acls: Mapping[str, Any]) -> str:
    proof = acls.get("proof") or {}
    window = acls.get("window") or {}
    items = (
        ("ACLs in force", f"{acls.get('bindings', 0):,} from {acls.get('source', '?')}"),
        ("window", f"from {window.get('start')}" if window.get("start") else "every stored record"),
        ("grants (ALLOW bindings)", f"{acls.get('grants', 0):,}"),
        ("unused grants", f"{acls.get('unusedGrants', 0):,}"),
        ("allowed with no grant in force", f"{acls.get('allowedWithoutGrant', 0):,} decisions (super users? --acl-super-users)"),
        ("minimal ACLs", f"{acls.get('minimalAcls', 0):,} for {acls.get('minimalPrincipals', 0):,} principals"),
        ("grants they supersede", f"{acls.get('supersededGrants', 0):,}"),
        ("replayed decisions", f"{proof.get('decisions', 0):,}"),
        ("new denials", f"{proof.get('newDenials', 0) + proof.get('forwarderDenials', 0):,}"),
        ("denied, now allowed", f"{proof.get('newlyAllowed', 0):,}"),
    )
    return "<dl>" + "".join(f"<dt>{_t(k)}</dt><dd>{_t(v)}</dd>" for k, v in items) + "</dl>"


def section(summary: Mapping[str, Any], tables: Mapping[str, Table]) -> tuple[str, str, str]:
    """(anchor, title, HTML) of the section, for ReportData.sections."""
    acls = summary.get("acl_hygiene") or {}
    outputs = acls.get("outputs") or {}
    proof = acls.get("proof") or {}
    denials = proof.get("newDenials", 0) + proof.get("forwarderDenials", 0)
    verdict = (
        "Replayed against the minimal ACLs, every request allowed in the window is still allowed."
        if not denials
        else f"Replayed against the minimal ACLs, {denials:,} allowed decisions would be denied: see why below."
    )
    scripts = "".join(f"<dt>{_t(name)}</dt><dd>{_t(path)}</dd>" for name, path in outputs.items())
    body = (
        _facts(acls)
        + f"<p><b>{_t(verdict)}</b></p>"
        + "<h3>Unused grants</h3>"
        + table(tables.get("acl_unused_grants"), "Every grant was used in the window.")
        + "<h3>Minimal ACLs</h3>"
        + table(tables.get("acl_minimal"), "No request needed a grant.")
        + "<h3>Decisions the minimal ACLs would change</h3>"
        + table(tables.get("acl_proof"), "None: no new denials.")
        + f"<h3>Files</h3><dl>{scripts}</dl>"
    )
    html = (
        f'<section id="{ANCHOR}"><h2>{_t(TITLE)}</h2><p class="lead">Grants no request used, the least ACLs that allow what was '
        "allowed, and the replay that proves them (docs/audit-job.md, Least privilege).</p>" + body + "</section>"
    )
    return ANCHOR, TITLE, html
