"""The HTML report: one self-contained page (inline CSS and SVG, no scripts, nothing fetched): its skeleton,
the summary cards, the legend and the sections.

Pure Python: :class:`spark_audit.report_data.ReportData` is what the job collected from Spark, so the
page can be rendered (and tested) without a Spark session. Charts are spark_audit/html_charts.py's,
tables spark_audit/html_table.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spark_audit.html_charts import PER_RESOURCE, activity_chart, denial_chart, heat_chart, latency_chart, ranking_charts
from spark_audit.html_table import table
from spark_audit.html_text import cell, text
from spark_audit.integrity_banner import integrity_banner
from spark_audit.report_data import ReportData
from spark_audit.view import AUTHORIZATION_ERROR_CODES

#: What each status means (docs/audit-schema.md, ``result.status``; NO_OUTCOME is the job's own).
STATUS_MEANING: tuple[tuple[str, str], ...] = (
    ("SUCCESS", "every error code was 0: the change was made (or the read or the proxy's own answer was given)"),
    (
        "FAILURE",
        "the request was decided and at least one resource failed or was denied: by the controller (an "
        "authorization error, or another such as TOPIC_ALREADY_EXISTS), or on a read by the proxy's edge authorizer",
    ),
    (
        "ERROR",
        "an upstream failed, so nobody decided: the controller refused the Envelope (e.g. the proxy's own principal "
        "lacks CLUSTER_ACTION), did not answer in time or could not be reached; or a read's upstream failed, or the "
        "proxy failed answering it. The client got the code shown",
    ),
    ("REFUSED", "the proxy refused the request or the connection itself and forwarded nothing"),
    (
        "NO_OUTCOME",
        "the intent was written but no outcome: the proxy stopped while the request was in flight, so it may or may not have been made",
    ),
)

#: What each "denied by" value means (spark_audit.view.denied_by).
DENIED_BY_MEANING: tuple[tuple[str, str], ...] = (
    ("controller", "the controller's authorizer denied the client's principal, which the proxy forwarded in the Envelope"),
    (
        "proxy-edge",
        "the proxy denied the request and never forwarded it: its edge authorizer (reads), or a refusal "
        "(an Envelope from a client, an API it does not serve, a token request Kafka refuses)",
    ),
    ("proxy-connection", "the proxy refused a connection (IP filter, connection limit, privileged principal) or a login failed"),
    (
        "proxy-rights",
        "the controller refused the proxy's own Envelope (CLUSTER_AUTHORIZATION_FAILED): the proxy's principal lacks "
        "CLUSTER_ACTION on the cluster, so the client's own rights were never checked; grant the proxy, not the client",
    ),
)


def _card(label: str, value: Any, tone: str = "", note: str = "") -> str:
    shown = f"{value:,}" if isinstance(value, int) else text(value)
    said = f'<div class="note">{text(note)}</div>' if note else ""
    return f'<div class="card {tone}"><div class="value">{shown}</div><div class="label">{text(label)}</div>{said}</div>'


def cards(summary: Mapping[str, Any]) -> str:
    def tone(key: str) -> str:
        return "alert" if summary.get(key) else ""

    items = [
        _card("records", summary.get("records", 0), note="audit lines: intents, outcomes, connection events"),
        _card("requests", summary.get("requests", 0), note="each request once, however many resources it names"),
    ]
    if "request_resources" in summary:
        items.append(
            _card(
                PER_RESOURCE,
                summary.get("request_resources", 0),
                note="once per resource it names: a CreateTopics of two topics counts 2 (who did what)",
            )
        )
    if summary.get("probes"):
        # shown only where there were probes: they are in no other count on the page
        items.append(_card("probes", summary["probes"], note="requests authz probe or replay sent to test an authorizer; in no other count"))
    items += [
        _card("denials", summary.get("denials", 0), tone("denials"), note="requests and connections, split by who denied under Denials"),
        _card("authentication failures", summary.get("authentication_failures", 0), tone("authentication_failures")),
        _card(
            "sensitive changes",
            summary.get("sensitive_changes", 0),
            "note" if summary.get("sensitive_changes") else "",
            note="requests that change ACLs, configs, credentials or quotas, made or not",
        ),
        _card("denial bursts", summary.get("bursts", 0), tone("bursts")),
        _card("new principal/address pairs", summary.get("first_seen_pairs", 0), "note" if summary.get("first_seen_pairs") else ""),
        _card("unusual listeners", summary.get("unusual_listeners", 0), tone("unusual_listeners")),
        _card("intents without outcome", summary.get("intents_without_outcome", 0), tone("intents_without_outcome")),
        _card("malformed lines", summary.get("malformed", 0), tone("malformed")),
        _card("duplicates dropped", summary.get("duplicates_dropped", 0)),
    ]
    whatif = summary.get("whatif")
    if isinstance(whatif, Mapping):
        items.append(_card("what-if changes", whatif.get("changed", 0), "alert" if whatif.get("changed") else ""))
    acls = summary.get("acl_hygiene")
    if isinstance(acls, Mapping):
        items.append(_card("unused grants", acls.get("unusedGrants", 0), "note" if acls.get("unusedGrants") else "", note="ALLOW bindings no request used"))
    return '<div class="cards">' + "".join(items) + "</div>"


def legend_section() -> str:
    """How to read the page: what each status and each "denied by" means, and what the counts count."""
    statuses = "".join(f"<dt>{cell(status)}</dt><dd>{text(meaning)}</dd>" for status, meaning in STATUS_MEANING)
    denied = "".join(f"<dt><b>{text(by)}</b></dt><dd>{text(meaning)}</dd>" for by, meaning in DENIED_BY_MEANING)
    counts = (
        "<dt><b>requests</b></dt><dd>each request once, however many resources it names</dd>"
        "<dt><b>request &times; resource</b></dt><dd>each request once per resource it names: a CreateTopics of two topics "
        "is 1 request and 2 request &times; resource. The who-did-what chart, heat map and table count these.</dd>"
        f"<dt><b>denials</b></dt><dd>requests refused or answered with an authorization error ({', '.join(map(str, AUTHORIZATION_ERROR_CODES))}) "
        "on any resource, and refused connections and failed logins</dd>"
    )
    body = (
        '<div class="grid3">'
        f'<div class="panel"><h3>Status of a request</h3><dl class="legendlist">{statuses}</dl></div>'
        f'<div class="panel"><h3>Denied by</h3><dl class="legendlist">{denied}</dl></div>'
        f'<div class="panel"><h3>What the counts count</h3><dl class="legendlist">{counts}</dl></div>'
        "</div>"
    )
    return _section("legend", "How to read this page", "Every status, who denied what, and what each number counts.", body)


STYLE = """
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1a1a1a;background:#f7f7f5}
header{background:#1d2b3a;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:20px}
header p{margin:0;color:#c9d3dd}nav{padding:8px 28px;background:#e9ecef;font-size:13px}nav a{margin-right:14px;color:#1d2b3a}
main{padding:8px 28px 40px;max-width:1280px}section{background:#fff;border:1px solid #e2e2e2;border-radius:8px;padding:6px 18px 14px;margin:16px 0}
h2{font-size:17px;margin:12px 0 4px}h3{font-size:14px;margin:8px 0}p.lead{color:#555;margin:0 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}.card{background:#fff;border:1px solid #e2e2e2;border-radius:8px;padding:10px 14px;min-width:120px}
.card .value{font-size:24px;font-weight:600}.card .label{color:#555;font-size:12px}.card .note{color:#777;font-size:11px;max-width:15em}.card.alert{border-color:#D55E00;background:#fff4ee}
.card.alert .value{color:#b34700}.card.note{border-color:#E69F00;background:#fffaf0}
.grid3{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:12px}.panel{min-width:0}
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{text-align:left;vertical-align:top;padding:4px 7px;border-bottom:1px solid #eee;white-space:nowrap}
td.wrap,th.wrap{white-space:pre-line;overflow-wrap:anywhere;min-width:6em}td.wide{min-width:14em}td.name{min-width:9em}td.words,th.words{white-space:normal}th{background:#fafafa;position:sticky;top:0}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:11px}.badge.bad{background:#fde2d6;color:#8a3000}
.badge.ok{background:#dcefe6;color:#00583f}.muted{color:#888}.empty{color:#777;font-style:italic}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;margin:4px 0 0 48px}.key{display:inline-flex;align-items:center;gap:5px}
.swatch{width:11px;height:11px;border-radius:2px;display:inline-block}dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px}
dt{color:#555}dd{margin:0}dl.legendlist{grid-template-columns:max-content minmax(0,1fr);font-size:12.5px}
"""

SECTIONS = (
    ("legend", "Legend"),
    ("activity", "Activity"),
    ("denials", "Denials"),
    ("bursts", "Bursts"),
    ("sensitive", "Sensitive changes"),
    ("identities", "Identities"),
    ("health", "Health"),
    ("latency", "Latency"),
    ("whatif", "What-if"),
    ("quality", "Data quality"),
)


def _section(anchor: str, title: str, lead: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{text(title)}</h2><p class="lead">{text(lead)}</p>{body}</section>'


def _whatif_section(data: ReportData) -> str:
    whatif = data.summary.get("whatif")
    if not isinstance(whatif, Mapping):
        return _section("whatif", "Authorizer what-if", "Not run: pass --whatif-acls and/or --whatif-authorizer to replay history.", "")
    facts = (
        f"<dl><dt>candidate</dt><dd>{text(whatif.get('authorizer'))}</dd><dt>ACLs</dt><dd>{text(whatif.get('acls'))}</dd>"
        f"<dt>decisions replayed</dt><dd>{whatif.get('decisions', 0):,}</dd><dt>would change</dt><dd>{whatif.get('changed', 0):,}</dd>"
        f"<dt>allowed &rarr; denied</dt><dd>{whatif.get('allowedToDenied', 0):,}</dd><dt>denied &rarr; allowed</dt><dd>{whatif.get('deniedToAllowed', 0):,}</dd>"
        f"<dt>errors</dt><dd>{whatif.get('errors', 0):,}</dd></dl>"
    )
    body = (
        facts
        + "<h3>Changes by principal, method and resource</h3>"
        + table(data.tables.get("whatif_counts"), "No decision would change.")
        + "<h3>Every changed decision</h3>"
        + table(data.tables.get("whatif_changes"), "No decision would change.")
    )
    return _section(
        "whatif", "Authorizer what-if", "Historical decisions that the candidate authorizer and ACLs would decide differently.", body
    )


def render(data: ReportData) -> str:
    s = data.summary
    time_range = s.get("time_range") or {}
    subtitle = (
        f"{text(s.get('source', ''))} &middot; {text(time_range.get('first') or '-')} to {text(time_range.get('last') or '-')} &middot; "
        f"{text(s.get('mode', 'batch'))} run &middot; generated {text(s.get('generated_at', ''))}"
    )
    baseline = s.get("baseline") or {}
    baseline_text = (
        f"Baseline {baseline.get('start') or 'from the first record'} to {baseline.get('end') or '-'}; "
        f"newer records are compared with it." + (" The baseline is empty, so every pair counts as new." if baseline.get("empty") else "")
    )
    nav = "".join(f'<a href="#{anchor}">{text(title)}</a>' for anchor, title in [*SECTIONS[:-1], *[extra[:2] for extra in data.sections], SECTIONS[-1]])
    t = data.tables
    sections = [
        _section(
            "activity",
            "Who did what",
            f"{PER_RESOURCE.capitalize()} per {data.bucket} by principal, and by method: a request counts once per resource it "
            f"names (a CreateTopics of two topics counts twice), so these add up to the {PER_RESOURCE} count "
            f"({s.get('request_resources', '?')}), not the requests count ({s.get('requests', '?')}).",
            activity_chart(data)
            + "<h3>Principal &times; method (request &times; resource)</h3>"
            + heat_chart(data)
            + "<h3>Busiest principal &times; method &times; resource (requests on each resource)</h3>"
            + table(t.get("who_did_what"), "No requests."),
        ),
        _section(
            "denials",
            "Denials",
            "Refused requests and connections, and requests with an authorization error: who denied them "
            "(the controller, the proxy's edge, or the proxy's own missing rights), ranked.",
            ranking_charts(data) + "<h3>Latest denials</h3>" + table(t.get("denials"), "No denials."),
        ),
        _section(
            "bursts",
            "Bursts of denials and authentication failures",
            f"Per client address; a burst is at least {s.get('burst_threshold', '?')} events within {s.get('burst_window', '?')}.",
            denial_chart(data) + table(t.get("bursts"), "No bursts."),
        ),
        _section(
            "sensitive",
            "Sensitive changes",
            "ACLs, configs, SCRAM credentials and quotas: every attempt, successful or not, with what it changed "
            "(the ACL binding, the config key and value; redacted values stay redacted) where the records carry it.",
            table(t.get("sensitive_changes"), "No sensitive changes."),
        ),
        _section(
            "identities",
            "Identities",
            baseline_text,
            "<h3>Impersonation: forwarding principal &times; principal</h3>"
            + table(t.get("impersonation"), "No forwarded requests.")
            + "<h3>Principals on a listener their history never saw</h3>"
            + table(t.get("unusual_listeners"), "None.")
            + "<h3>First-seen principal / client address pairs</h3>"
            + table(t.get("first_seen_pairs"), "None."),
        ),
        _section(
            "health",
            "Intents without outcomes",
            "Requests whose intent was written but no outcome: the proxy stopped or crashed while they were in flight.",
            table(t.get("intents_without_outcome"), "Every forwarded request has its outcome."),
        ),
        _section(
            "latency",
            "Latency per API",
            "From outcome records: bar to p50, lighter to p90 and p99; the orange tick is the maximum.",
            latency_chart(data) + table(t.get("latency"), "No timings."),
        ),
        _whatif_section(data),
        *(html for _, _, html in data.sections),
        _section(
            "quality",
            "Data quality",
            "Malformed lines are kept in the quarantine output with where they came from and why.",
            f"<dl><dt>malformed lines</dt><dd>{s.get('malformed', 0):,}</dd><dt>duplicates dropped</dt><dd>{s.get('duplicates_dropped', 0):,}</dd>"
            f"<dt>quarantine</dt><dd>{text((s.get('outputs') or {}).get('quarantine', ''))}</dd></dl>"
            + table(t.get("quarantine"), "Nothing quarantined."),
        ),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Kafka envelope proxy audit</title><style>{STYLE}</style></head><body>"
        f"{integrity_banner(s.get('integrity'))}"
        f"<header><h1>Kafka envelope proxy &middot; audit report</h1><p>{subtitle}</p></header><nav>{nav}</nav><main>"
        + cards(s)
        + legend_section()
        + "".join(sections)
        + "</main></body></html>\n"
    )
