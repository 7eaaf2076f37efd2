"""The audit reports, each a function from :func:`spark_audit.view.flatten`'s rows to a DataFrame.

Everything here is Spark SQL expressions (no Python UDFs), so reports run in
the JVM on the executors and need no Python code shipped to a cluster.
Times are compared as microseconds since the epoch so that no Python
datetime (and so no local time zone) is involved.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_audit.view import (
    DENIED,
    NO_OUTCOME,
    NO_RESOURCE,
    PARAMETERS,
    UNAUTHENTICATED,
    denied_by,
    error_name,
    explaining_error,
    is_auth_code,
    requests,
    resource_decision,
    resource_label,
    with_resources,
)

#: Methods whose success changes who may do what, by category.
SENSITIVE_METHODS: dict[str, str] = {
    "kafka.CreateAcls": "acl",
    "kafka.DeleteAcls": "acl",
    "kafka.AlterConfigs": "config",
    "kafka.IncrementalAlterConfigs": "config",
    "kafka.AlterUserScramCredentials": "scram-credentials",
    "kafka.AlterClientQuotas": "quota",
}

AUTHENTICATION_FAILURE = "authentication-failure"
#: the "resource" of a refused connection in the denial ranking
CONNECTION = "(connection)"
DENIAL = "denial"
MICROS = 1_000_000


@dataclass(frozen=True)
class Baseline:
    """The history new behaviour is compared with: records in [start, end); the detection window is [end, ...)."""

    start_us: int | None
    end_us: int | None

    def history(self, time_us: Column) -> Column:
        if self.end_us is None:
            return F.lit(False)
        inside = time_us < F.lit(self.end_us)
        return inside if self.start_us is None else inside & (time_us >= F.lit(self.start_us))

    def detection(self, time_us: Column) -> Column:
        return F.lit(False) if self.end_us is None else time_us >= F.lit(self.end_us)


def _us(column: str = "time") -> Column:
    return F.unix_micros(F.col(column))


def _who(column: str = "principal") -> Column:
    return F.coalesce(F.col(column), F.lit(UNAUTHENTICATED))


def _without_local(frame: DataFrame, include_local: bool) -> DataFrame:
    return frame if include_local else frame.filter(F.col("stage") != F.lit("local"))


def closing_events(flat: DataFrame) -> DataFrame:
    """Each finished request once, plus every connection event: what denials and bursts count."""
    finished = requests(flat).filter(F.col("status") != F.lit(NO_OUTCOME))
    return finished.unionByName(flat.filter(F.col("isConnection")))


# --------------------------------------------------------------------------- requests


def requests_by_principal_method_outcome(flat: DataFrame, *, include_local: bool = False) -> DataFrame:
    """Requests by principal, method and result status (``NO_OUTCOME`` for an intent nothing closed).

    Columns: principal, method, status, count; sorted by the first three.
    """
    rows = _without_local(requests(flat), include_local)
    return (
        rows.select(_who().alias("principal"), F.col("method"), F.col("status"))
        .groupBy("principal", "method", "status")
        .count()
        .orderBy("principal", "method", "status")
    )


def who_did_what(flat: DataFrame, *, bucket: str = "1 hour", include_local: bool = False) -> DataFrame:
    """Principal x method x resource per time bucket.

    Columns: bucket (bucket start), date, principal, method, resource
    (``topic:orders``; the subject or ``(none)`` for a request without
    resources), operation, requests, denied (of those requests, how many were
    denied on this resource). Sorted by bucket, principal, method, resource.
    """
    rows = with_resources(_without_local(requests(flat), include_local))
    start = F.window("time", bucket)["start"]
    return (
        rows.groupBy(
            start.alias("bucket"),
            _who().alias("principal"),
            F.col("method"),
            F.col("resource"),
            F.col("operation"),
        )
        .agg(
            F.count(F.lit(1)).alias("requests"),
            F.count(F.when(F.col("resourceDecision") == F.lit(DENIED), True)).alias("denied"),
        )
        .withColumn("date", F.to_date("bucket"))
        .select("bucket", "date", "principal", "method", "resource", "operation", "requests", "denied")
        .orderBy("bucket", "principal", "method", "resource", "operation")
    )


# --------------------------------------------------------------------------- denials


def denials(flat: DataFrame) -> DataFrame:
    """Every denial (request or connection), sorted by time.

    Columns: time, principal, clientAddress, method, subject, errorCode,
    errorName, status. The error shown is the top-level code when it is an
    authorization failure, else the first per-resource authorization failure,
    else (a refusal) the top-level code.
    """
    top = F.col("errorCode")
    first_auth = F.try_element_at(F.filter("errors", lambda e: is_auth_code(e["errorCode"])), F.lit(1))
    code = F.when(is_auth_code(top), top).when(first_auth.isNotNull(), first_auth["errorCode"]).otherwise(top)
    name = (
        F.when(is_auth_code(top), error_name(top))
        .when(first_auth.isNotNull(), F.coalesce(first_auth["errorName"], error_name(first_auth["errorCode"])))
        .otherwise(error_name(top))
    )
    return (
        closing_events(flat)
        .filter(F.col("isDenial"))
        .select(
            "time",
            "principal",
            "clientAddress",
            "method",
            "subject",
            code.alias("errorCode"),
            name.alias("errorName"),
            "status",
            "id",
        )
        .orderBy("time", "id")
        .drop("id")
    )


def denial_details(flat: DataFrame) -> DataFrame:
    """Every denial as the page shows it: who denied it, and the code and reason that say why.

    Columns: time, principal, clientAddress, listener, forwardingPrincipal, method, subject, deniedResources
    (the labels of the resources it denied, as in :func:`denial_ranking`), status, deniedBy
    (:func:`spark_audit.view.denied_by`), errorCode and errorName (:func:`spark_audit.view.explaining_error`:
    never 0), reason, detail; sorted by time.
    """
    denied = F.filter("resources", lambda r: resource_decision(r) == F.lit(DENIED))
    code = explaining_error()
    return (
        closing_events(flat)
        .filter(F.col("isDenial"))
        .select(
            "time",
            "principal",
            "clientAddress",
            "listener",
            "forwardingPrincipal",
            "method",
            "subject",
            F.array_distinct(F.transform(denied, resource_label)).alias("deniedResources"),
            "status",
            denied_by().alias("deniedBy"),
            code.alias("errorCode"),
            error_name(code).alias("errorName"),
            "reason",
            "detail",
            "id",
        )
        .orderBy("time", "id")
        .drop("id")
    )


def denials_by(flat: DataFrame) -> DataFrame:
    """Denials counted by who denied them (:func:`spark_audit.view.denied_by`). Columns: deniedBy, denials."""
    return (
        closing_events(flat)
        .filter(F.col("isDenial"))
        .groupBy(denied_by().alias("deniedBy"))
        .agg(F.count(F.lit(1)).alias("denials"))
        .orderBy(F.desc("denials"), "deniedBy")
    )


def denial_ranking(flat: DataFrame) -> DataFrame:
    """Denials counted and ranked per principal, per client address and per denied resource.

    Columns: dimension (``principal``, ``address`` or ``resource``), key,
    denials, first, last, rank (1 = most denials; ties by key). A denial
    without a denied resource (a refused connection) counts under its subject,
    or ``(none)``.
    """
    events = closing_events(flat).filter(F.col("isDenial"))
    denied = F.filter("resources", lambda r: resource_decision(r) == F.lit(DENIED))
    # one denial per resource it denied, however many of the request's entries name that resource
    labels = F.array_distinct(F.transform(denied, resource_label))
    fallback = F.array(F.coalesce(F.col("subject"), F.when(F.col("isConnection"), F.lit(CONNECTION)).otherwise(F.lit(NO_RESOURCE))))
    keyed = events.select(
        "time",
        F.array(
            F.struct(F.lit("principal").alias("dimension"), _who().alias("key")),
            F.struct(F.lit("address").alias("dimension"), F.coalesce(F.col("clientAddress"), F.lit(NO_RESOURCE)).alias("key")),
        ).alias("plain"),
        F.when(F.size(labels) > 0, labels).otherwise(fallback).alias("resourceKeys"),
    )
    plain = keyed.select("time", F.explode("plain").alias("k")).select("time", "k.dimension", "k.key")
    by_resource = keyed.select("time", F.lit("resource").alias("dimension"), F.explode("resourceKeys").alias("key"))
    counted = (
        plain.unionByName(by_resource)
        .groupBy("dimension", "key")
        .agg(F.count(F.lit(1)).alias("denials"), F.min("time").alias("first"), F.max("time").alias("last"))
    )
    rank = F.row_number().over(Window.partitionBy("dimension").orderBy(F.desc("denials"), F.asc("key")))
    return counted.withColumn("rank", rank).orderBy("dimension", "rank")


def bursts(flat: DataFrame, *, window_seconds: int = 60, threshold: int = 10) -> DataFrame:
    """Bursts of denials or authentication failures from one client address.

    Events of one kind from one address are grouped into episodes in which no
    two consecutive events are more than ``window_seconds`` apart; an episode
    is a burst when, at some moment, at least ``threshold`` of its events fall
    within ``window_seconds``. Columns: clientAddress, kind
    (``authentication-failure`` or ``denial``), start, end, date, events (in
    the episode), peak (most events within one window), principals (sorted).
    """
    events = closing_events(flat).filter((F.col("isDenial") | F.col("isAuthFailure")) & F.col("clientAddress").isNotNull())
    kind = F.when(F.col("isAuthFailure"), F.lit(AUTHENTICATION_FAILURE)).otherwise(F.lit(DENIAL))
    typed = events.select("time", "clientAddress", "principal", kind.alias("kind"), _us().alias("us"))
    in_window = Window.partitionBy("clientAddress", "kind").orderBy("us").rangeBetween(-window_seconds * MICROS, 0)
    counted = typed.withColumn("inWindow", F.count(F.lit(1)).over(in_window))
    episodes = counted.groupBy("clientAddress", "kind", F.session_window("time", f"{window_seconds} seconds")).agg(
        F.min("time").alias("start"),
        F.max("time").alias("end"),
        F.count(F.lit(1)).alias("events"),
        F.max("inWindow").alias("peak"),
        F.sort_array(F.collect_set("principal")).alias("principals"),
    )
    return (
        episodes.filter(F.col("peak") >= threshold)
        .withColumn("date", F.to_date("start"))
        .select("clientAddress", "kind", "start", "end", "date", "events", "peak", "principals")
        .orderBy("start", "clientAddress", "kind")
    )


# --------------------------------------------------------------------------- changes and identities


def _described_resources() -> Column:
    """``topic:orders ALTER, topic:logs- ALTER (PREFIXED)``: each resource with its operation, and its pattern type
    where it is not LITERAL, so that a prefixed ACL binding reads differently from a literal one."""

    def one(r: Column) -> Column:
        kind = r["patternType"]
        pattern = F.when(kind.isNotNull() & (F.upper(kind) != F.lit("LITERAL")), F.concat(F.lit("("), kind, F.lit(")")))
        return F.concat_ws(" ", resource_label(r), r["operation"], pattern)

    return F.concat_ws(", ", F.transform("resources", one))


def sensitive_changes(flat: DataFrame) -> DataFrame:
    """Requests that change ACLs, configs, SCRAM credentials or quotas, whatever their outcome.

    Columns: time, date, category (acl, config, scram-credentials, quota),
    method, principal, clientAddress, listener, forwardingPrincipal,
    resources (``topic:orders ALTER_CONFIGS, ...``: :func:`_described_resources`), status (``NO_OUTCOME``
    when only the intent was recorded), errorCode, denied, requestId.
    """
    return sensitive_change_details(flat).select(*SENSITIVE_CHANGE_COLUMNS)


#: The columns of :func:`sensitive_changes` (the Parquet report); :func:`sensitive_change_details` adds the page's.
SENSITIVE_CHANGE_COLUMNS = (
    "time",
    "date",
    "category",
    "method",
    "principal",
    "clientAddress",
    "listener",
    "forwardingPrincipal",
    "resources",
    "status",
    "errorCode",
    "denied",
    "requestId",
)


def sensitive_change_details(flat: DataFrame) -> DataFrame:
    """:func:`sensitive_changes` with what the page shows beside them: parameters (the change's request
    parameters as JSON text, from its intent; null where the records carry none), deniedBy
    (:func:`spark_audit.view.denied_by`), and shownCode and shownName (:func:`spark_audit.view.explaining_error`:
    a denied change shows its authorization code, never the 0 of a request that has no top-level code)."""
    categories = F.create_map(*[item for m, c in SENSITIVE_METHODS.items() for item in (F.lit(m), F.lit(c))])
    described = _described_resources()
    rows = requests(flat).filter(F.col("method").isin(*SENSITIVE_METHODS))
    parameters = F.col(PARAMETERS) if PARAMETERS in rows.columns else F.lit(None).cast("string")
    code = explaining_error()
    return rows.select(
        "time",
        "date",
        F.element_at(categories, F.col("method")).alias("category"),
        "method",
        _who().alias("principal"),
        "clientAddress",
        "listener",
        "forwardingPrincipal",
        described.alias("resources"),
        "status",
        "errorCode",
        F.col("isDenial").alias("denied"),
        "requestId",
        parameters.alias(PARAMETERS),
        denied_by().alias("deniedBy"),
        code.alias("shownCode"),
        error_name(code).alias("shownName"),
    ).orderBy("time", "requestId")


def impersonation(flat: DataFrame) -> DataFrame:
    """Who forwarded whose requests: forwardingPrincipal x principal.

    Columns: forwardingPrincipal, principal, listeners (sorted), requests,
    denied, first, last.
    """
    return (
        requests(flat)
        .filter(F.col("forwardingPrincipal").isNotNull())
        .groupBy("forwardingPrincipal", _who().alias("principal"))
        .agg(
            F.sort_array(F.collect_set("listener")).alias("listeners"),
            F.count(F.lit(1)).alias("requests"),
            F.count(F.when(F.col("isDenial"), True)).alias("denied"),
            F.min("time").alias("first"),
            F.max("time").alias("last"),
        )
        .orderBy("forwardingPrincipal", "principal")
    )


#: Column of :func:`identities` rows: true for the baseline's history, false for the detection window.
IN_BASELINE = "inBaseline"


def identities(flat: DataFrame, baseline: Baseline) -> DataFrame:
    """Records that name a principal (requests and connection events alike), counted per principal,
    listener, client address and side of the baseline: what the two identity reports read.

    Columns: principal, listener, clientAddress, inBaseline, first, last, events. One pass over
    the records gives a table far smaller than them; records neither in the baseline nor in the
    detection window (before ``--baseline-start``) are left out.
    """
    us = _us()
    in_baseline = baseline.history(us)
    return (
        flat.filter(F.col("principal").isNotNull() & (in_baseline | baseline.detection(us)))
        .groupBy("principal", "listener", "clientAddress", in_baseline.alias(IN_BASELINE))
        .agg(F.min("time").alias("first"), F.max("time").alias("last"), F.count(F.lit(1)).alias("events"))
    )


def _identities(frame: DataFrame, baseline: Baseline) -> DataFrame:
    return frame if IN_BASELINE in frame.columns else identities(frame, baseline)


def unusual_listeners(flat: DataFrame, baseline: Baseline) -> DataFrame:
    """A principal with a history acting over a listener that history never saw.

    Columns: principal, listener, first, last, events, baselineListeners.
    A principal with no history at all is a first-seen pair instead.
    ``flat`` may be the records or their :func:`identities`.
    """
    rows = _identities(flat, baseline).filter(F.col("listener").isNotNull())
    history = (
        rows.filter(F.col(IN_BASELINE)).groupBy("principal").agg(F.sort_array(F.collect_set("listener")).alias("baselineListeners"))
    )
    recent = (
        rows.filter(~F.col(IN_BASELINE))
        .groupBy("principal", "listener")
        .agg(F.min("first").alias("first"), F.max("last").alias("last"), F.sum("events").alias("events"))
    )
    return (
        recent.join(history, "principal")
        .filter(~F.array_contains("baselineListeners", F.col("listener")))
        .select("principal", "listener", "first", "last", "events", "baselineListeners")
        .orderBy("first", "principal", "listener")
    )


def first_seen_pairs(flat: DataFrame, baseline: Baseline) -> DataFrame:
    """(principal, client address) pairs of the detection window that the baseline never saw.

    Columns: principal, clientAddress, first, last, events, listeners, date.
    ``flat`` may be the records or their :func:`identities`.
    """
    rows = _identities(flat, baseline).filter(F.col("clientAddress").isNotNull())
    known = rows.filter(F.col(IN_BASELINE)).select("principal", "clientAddress").distinct()
    recent = (
        rows.filter(~F.col(IN_BASELINE))
        .groupBy("principal", "clientAddress")
        .agg(
            F.min("first").alias("first"),
            F.max("last").alias("last"),
            F.sum("events").alias("events"),
            F.sort_array(F.collect_set("listener")).alias("listeners"),
        )
    )
    return (
        recent.join(known, ["principal", "clientAddress"], "left_anti")
        .withColumn("date", F.to_date("first"))
        .select("principal", "clientAddress", "first", "last", "events", "listeners", "date")
        .orderBy("first", "principal", "clientAddress")
    )


# --------------------------------------------------------------------------- health


def intents_without_outcome(flat: DataFrame, *, before_us: int | None) -> DataFrame:
    """Requests with an intent and no closing record, written before ``before_us``.

    ``before_us`` leaves out requests that may still be in flight (the job
    uses the newest record's time minus a grace period). Columns: requestId,
    time, date, principal, clientAddress, listener, method, subject, resources.
    """
    if before_us is None:
        return (
            requests(flat)
            .limit(0)
            .select("requestId", "time", "date", "principal", "clientAddress", "listener", "method", "subject", "resources")
        )
    described = _described_resources()
    return (
        requests(flat)
        .filter((F.col("status") == F.lit(NO_OUTCOME)) & (_us() <= F.lit(before_us)))
        .select(
            "requestId",
            "time",
            "date",
            _who().alias("principal"),
            "clientAddress",
            "listener",
            "method",
            "subject",
            described.alias("resources"),
        )
        .orderBy("time", "requestId")
    )


def latency(flat: DataFrame) -> DataFrame:
    """Latency percentiles per API from the outcome records' timings (milliseconds), one outcome per request.

    Columns: method, requests, totalP50, totalP90, totalP99, totalMax,
    upstreamP50, upstreamP90, upstreamP99. Percentiles are Spark's
    ``percentile_approx`` (accuracy 10000: a value from the data whose rank is
    within 0.01% of the exact one).
    """
    # a request's row is its outcome when it has one: one outcome per request, no shuffle when ``flat`` holds request rows
    outcomes = requests(flat).filter((F.col("stage") == F.lit("outcome")) & F.col("totalMs").isNotNull())
    levels = [0.5, 0.9, 0.99]
    total = F.percentile_approx("totalMs", levels, 10000)
    upstream = F.percentile_approx("upstreamMs", levels, 10000)
    return (
        outcomes.groupBy("method")
        .agg(
            F.count(F.lit(1)).alias("requests"),
            total.alias("total"),
            F.max("totalMs").alias("totalMax"),
            upstream.alias("upstream"),
        )
        .select(
            "method",
            "requests",
            F.col("total")[0].alias("totalP50"),
            F.col("total")[1].alias("totalP90"),
            F.col("total")[2].alias("totalP99"),
            "totalMax",
            F.col("upstream")[0].alias("upstreamP50"),
            F.col("upstream")[1].alias("upstreamP90"),
            F.col("upstream")[2].alias("upstreamP99"),
        )
        .orderBy(F.desc("totalP99"), "method")
    )
