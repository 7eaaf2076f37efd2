"""The denial reports: every denial, who denied it, the rankings, and bursts of denials or failed logins.

Each is a function from :func:`spark_audit.view.flatten`'s rows (or the job's alarm table) to a DataFrame,
in Spark SQL expressions only (spark_audit/report_basics.py says why).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_audit.report_basics import MICROS, closing_events, in_order, micros, who
from spark_audit.view import (
    DENIED,
    NO_RESOURCE,
    WHO_COLUMNS,
    denied_by,
    error_name,
    explaining_error,
    is_auth_code,
    resource_decision,
    resource_label,
)

AUTHENTICATION_FAILURE = "authentication-failure"
#: the "resource" of a refused connection in the denial ranking
CONNECTION = "(connection)"
DENIAL = "denial"


def denials(flat: DataFrame, *, ordered: bool = True) -> DataFrame:
    """Every denial (request or connection), sorted by time.

    Columns: time, date, principal, clientAddress, method, subject, errorCode,
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
    rows = (
        closing_events(flat)
        .filter(F.col("isDenial"))
        .select(
            "time",
            "date",
            "principal",
            "clientAddress",
            "method",
            "subject",
            code.alias("errorCode"),
            name.alias("errorName"),
            "status",
            "id",
        )
    )
    return in_order(rows, ordered, "time", "id").drop("id")


def denial_details(flat: DataFrame) -> DataFrame:
    """Every denial as the page shows it: who denied it, and the code and reason that say why.

    Columns: time, principal, clientAddress, listener, forwardingPrincipal, method, subject, deniedResources
    (the labels of the resources it denied, as in :func:`denial_ranking`), status, deniedBy
    (:func:`spark_audit.view.denied_by`), errorCode and errorName (:func:`spark_audit.view.explaining_error`:
    never 0), reason, detail, date; sorted by time.
    """
    denied = F.filter("resources", lambda r: resource_decision(r) == F.lit(DENIED))
    code = explaining_error()
    return (
        closing_events(flat)
        .filter(F.col("isDenial"))
        .select(
            *WHO_COLUMNS,
            "subject",
            F.array_distinct(F.transform(denied, resource_label)).alias("deniedResources"),
            "status",
            denied_by().alias("deniedBy"),
            code.alias("errorCode"),
            error_name(code).alias("errorName"),
            "reason",
            "detail",
            "date",
            "id",
        )
        .orderBy("time", "id")
        .drop("id")
    )


def denials_by(flat: DataFrame, *, ordered: bool = True, by: Sequence[str] = ()) -> DataFrame:
    """Denials counted by who denied them (:func:`spark_audit.view.denied_by`), per ``by`` columns too. Columns:
    ``by``, deniedBy, denials."""
    events = closing_events(flat).filter(F.col("isDenial"))
    counted = events.groupBy(*by, denied_by().alias("deniedBy")).agg(F.count(F.lit(1)).alias("denials"))
    return in_order(counted, ordered, F.desc("denials"), "deniedBy")


def timeline(flat: DataFrame, bucket: str, *, by: Sequence[str] = ()) -> DataFrame:
    """Denials and authentication failures counted per time bucket (its start) and kind (:data:`DENIAL` or
    :data:`AUTHENTICATION_FAILURE`), per ``by`` columns too. Columns: ``by``, bucket, kind, count."""
    events = closing_events(flat).filter(F.col("isDenial") | F.col("isAuthFailure"))
    kind = F.when(F.col("isAuthFailure"), F.lit(AUTHENTICATION_FAILURE)).otherwise(F.lit(DENIAL))
    return events.groupBy(*by, F.window("time", bucket)["start"].alias("bucket"), kind.alias("kind")).count()


def denial_ranking(flat: DataFrame, *, ordered: bool = True) -> DataFrame:
    """Denials counted and ranked per principal, per client address and per denied resource.

    Columns: dimension (``principal``, ``address`` or ``resource``), key,
    denials, first, last, rank (1 = most denials; ties by key). A denial
    without a denied resource (a refused connection) counts under its subject,
    or ``(none)``.
    """
    return ranked(denial_counts(flat), ordered=ordered)


def denial_counts(flat: DataFrame, *, by: Sequence[str] = ()) -> DataFrame:
    """:func:`denial_ranking`'s counts before the ranking, per ``by`` columns too (an incremental run keeps them per
    date: spark_audit/report_writes.py). Columns: ``by``, dimension, key, denials, first, last."""
    events = closing_events(flat).filter(F.col("isDenial"))
    denied = F.filter("resources", lambda r: resource_decision(r) == F.lit(DENIED))
    # one denial per resource it denied, however many of the request's entries name that resource
    labels = F.array_distinct(F.transform(denied, resource_label))
    fallback = F.array(F.coalesce(F.col("subject"), F.when(F.col("isConnection"), F.lit(CONNECTION)).otherwise(F.lit(NO_RESOURCE))))
    keyed = events.select(
        *by,
        "time",
        F.array(
            F.struct(F.lit("principal").alias("dimension"), who().alias("key")),
            F.struct(F.lit("address").alias("dimension"), F.coalesce(F.col("clientAddress"), F.lit(NO_RESOURCE)).alias("key")),
        ).alias("plain"),
        F.when(F.size(labels) > 0, labels).otherwise(fallback).alias("resourceKeys"),
    )
    plain = keyed.select(*by, "time", F.explode("plain").alias("k")).select(*by, "time", "k.dimension", "k.key")
    by_resource = keyed.select(*by, "time", F.lit("resource").alias("dimension"), F.explode("resourceKeys").alias("key"))
    return (
        plain.unionByName(by_resource)
        .groupBy(*by, "dimension", "key")
        .agg(F.count(F.lit(1)).alias("denials"), F.min("time").alias("first"), F.max("time").alias("last"))
    )


def merged_counts(counts: DataFrame) -> DataFrame:
    """:func:`denial_counts` kept per date, merged into the counts over every date (a sum, a min and a max: the same
    figures as counting every denial at once)."""
    return counts.groupBy("dimension", "key").agg(
        F.sum("denials").alias("denials"), F.min("first").alias("first"), F.max("last").alias("last")
    )


def ranked(counted: DataFrame, *, ordered: bool = True) -> DataFrame:
    """:func:`denial_counts` (or their merge) ranked within each dimension: most denials first, ties by key."""
    rank = F.row_number().over(Window.partitionBy("dimension").orderBy(F.desc("denials"), F.asc("key")))
    return in_order(counted.withColumn("rank", rank), ordered, "dimension", "rank")


#: The bursts report's columns.
BURST_COLUMNS = ("clientAddress", "kind", "start", "end", "date", "events", "peak", "principals")


def burst_events(flat: DataFrame) -> DataFrame:
    """The events bursts are made of: each denial or authentication failure with a client address, its kind and time."""
    events = closing_events(flat).filter((F.col("isDenial") | F.col("isAuthFailure")) & F.col("clientAddress").isNotNull())
    kind = F.when(F.col("isAuthFailure"), F.lit(AUTHENTICATION_FAILURE)).otherwise(F.lit(DENIAL))
    return events.select("time", "clientAddress", "principal", kind.alias("kind"), micros().alias("us"))


def episodes(events: DataFrame, *, window_seconds: int, inside: Column | None = None) -> DataFrame:
    """:func:`burst_events` grouped into episodes per address and kind (no two consecutive events more than
    ``window_seconds`` apart), each with its start, end, events, peak (most events within one window) and principals.

    With ``inside`` (true for the events of some dates), each episode also says whether it holds an event inside
    them (``hasInside``) and whether it holds events on both sides (``crossing``): an incremental run rewrites the
    episodes of some dates only while none crosses their edge (spark_audit/burst_rewrite.py). Two events one window
    apart or less are in one episode, so an event outside that an inside one's peak counts is in its episode too."""
    in_window = Window.partitionBy("clientAddress", "kind").orderBy("us").rangeBetween(-window_seconds * MICROS, 0)
    counted = events.withColumn("inWindow", F.count(F.lit(1)).over(in_window))
    checks: list[Column] = []
    if inside is not None:
        counted = counted.withColumn("_inside", inside)
        has_inside, has_outside = F.max("_inside"), F.max(~F.col("_inside"))
        checks = [has_inside.alias("hasInside"), (has_inside & has_outside).alias("crossing")]
    return counted.groupBy("clientAddress", "kind", F.session_window("time", f"{window_seconds} seconds")).agg(
        F.min("time").alias("start"),
        F.max("time").alias("end"),
        F.count(F.lit(1)).alias("events"),
        F.max("inWindow").alias("peak"),
        F.sort_array(F.collect_set("principal")).alias("principals"),
        *checks,
    )


def burst_rows(found: DataFrame, threshold: int) -> DataFrame:
    """The episodes of :func:`episodes` that are bursts, in the report's columns."""
    return found.filter(F.col("peak") >= threshold).withColumn("date", F.to_date("start")).select(*BURST_COLUMNS)


def bursts(flat: DataFrame, *, window_seconds: int = 60, threshold: int = 10, ordered: bool = True) -> DataFrame:
    """Bursts of denials or authentication failures from one client address.

    Events of one kind from one address are grouped into episodes in which no
    two consecutive events are more than ``window_seconds`` apart; an episode
    is a burst when, at some moment, at least ``threshold`` of its events fall
    within ``window_seconds``. Columns: clientAddress, kind
    (``authentication-failure`` or ``denial``), start, end, date, events (in
    the episode), peak (most events within one window), principals (sorted).
    """
    found = burst_rows(episodes(burst_events(flat), window_seconds=window_seconds), threshold)
    return in_order(found, ordered, "start", "clientAddress", "kind")
