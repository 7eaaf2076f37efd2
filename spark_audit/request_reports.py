"""The request reports: who did what, the sensitive changes, intents nothing closed, and latency per API.

Each is a function from :func:`spark_audit.view.flatten`'s rows (or the job's request table) to a DataFrame,
in Spark SQL expressions only (spark_audit/report_basics.py says why).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_audit.report_basics import described_resources, in_order, micros, who, without_local
from spark_audit.view import (
    DENIED,
    NO_OUTCOME,
    PARAMETERS,
    denied_by,
    error_name,
    explaining_error,
    requests,
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

#: The percentiles the latency report gives (p50, p90, p99), in the order of its columns.
LATENCY_LEVELS = (0.5, 0.9, 0.99)
_LEVEL_NAMES = tuple(f"{round(level * 100)}" for level in LATENCY_LEVELS)
#: The size of the latency report's KLL sketches (DataSketches' ``k``, Spark's ``kll_sketch_agg_double``). A quantile
#: is exact while a method has at most ``k`` outcomes, and beyond that within a normalised rank error of about
#: 2.296 / k^0.9723, 0.01% (docs/audit-job.md). A date's sketches merge into the whole history's, so a rerun keeps one
#: per date and method and merges them (spark_audit/report_writes.py) instead of reading every outcome again.
LATENCY_SKETCH_K = 32_768


def requests_by_principal_method_outcome(
    flat: DataFrame, *, include_local: bool = False, ordered: bool = True, by: Sequence[str] = ()
) -> DataFrame:
    """Requests by principal, method and result status (``NO_OUTCOME`` for an intent nothing closed), per ``by``
    columns too (an incremental run keeps the counts per date: spark_audit/report_writes.py).

    Columns: ``by``, principal, method, status, count; sorted by the first three.
    """
    rows = without_local(requests(flat), include_local)
    keys = (*by, "principal", "method", "status")
    counted = rows.select(*by, who().alias("principal"), F.col("method"), F.col("status")).groupBy(*keys).count()
    return in_order(counted, ordered, "principal", "method", "status")


def merged_requests(counts: DataFrame) -> DataFrame:
    """:func:`requests_by_principal_method_outcome` kept per date, summed over every date (unsorted)."""
    return counts.groupBy("principal", "method", "status").agg(F.sum("count").alias("count"))


def who_did_what(
    flat: DataFrame, *, bucket: str = "1 hour", include_local: bool = False, ordered: bool = True, within_days: bool = False
) -> DataFrame:
    """Principal x method x resource per time bucket.

    Columns: bucket (bucket start), date, principal, method, resource
    (``topic:orders``; the subject or ``(none)`` for a request without
    resources), operation, requests, denied (of those requests, how many were
    denied on this resource). Sorted by bucket, principal, method, resource.

    ``date`` is the bucket's. Where the buckets fall within a day (``within_days``: the bucket divides a day) it is
    taken from the rows' own ``date``, which is then the same: a filter on it reads only those dates' rows (a
    partition filter on the job's request table), where one on the bucket's date would read every row first.
    """
    rows = with_resources(without_local(requests(flat), include_local))
    start = F.window("time", bucket)["start"]
    grouped = (
        rows.groupBy(
            start.alias("bucket"),
            *([F.col("date")] if within_days else []),
            who().alias("principal"),
            F.col("method"),
            F.col("resource"),
            F.col("operation"),
        )
        .agg(
            F.count(F.lit(1)).alias("requests"),
            F.count(F.when(F.col("resourceDecision") == F.lit(DENIED), True)).alias("denied"),
        )
    )
    if not within_days:
        grouped = grouped.withColumn("date", F.to_date("bucket"))
    grouped = grouped.select("bucket", "date", "principal", "method", "resource", "operation", "requests", "denied")
    return in_order(grouped, ordered, "bucket", "principal", "method", "resource", "operation")


def sensitive_changes(flat: DataFrame, *, ordered: bool = True) -> DataFrame:
    """Requests that change ACLs, configs, SCRAM credentials or quotas, whatever their outcome.

    Columns: time, date, category (acl, config, scram-credentials, quota),
    method, principal, clientAddress, listener, forwardingPrincipal,
    resources (``topic:orders ALTER_CONFIGS, ...``: :func:`_described_resources`), status (``NO_OUTCOME``
    when only the intent was recorded), errorCode, denied, requestId.
    """
    return sensitive_change_details(flat, ordered=ordered).select(*SENSITIVE_CHANGE_COLUMNS)


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


def sensitive_change_details(flat: DataFrame, *, ordered: bool = True) -> DataFrame:
    """:func:`sensitive_changes` with what the page shows beside them: parameters (the change's request
    parameters as JSON text, from its intent; null where the records carry none), deniedBy
    (:func:`spark_audit.view.denied_by`), and shownCode and shownName (:func:`spark_audit.view.explaining_error`:
    a denied change shows its authorization code, never the 0 of a request that has no top-level code)."""
    categories = F.create_map(*[item for m, c in SENSITIVE_METHODS.items() for item in (F.lit(m), F.lit(c))])
    described = described_resources()
    rows = requests(flat).filter(F.col("method").isin(*SENSITIVE_METHODS))
    parameters = F.col(PARAMETERS) if PARAMETERS in rows.columns else F.lit(None).cast("string")
    code = explaining_error()
    details = rows.select(
        "time",
        "date",
        F.element_at(categories, F.col("method")).alias("category"),
        "method",
        who().alias("principal"),
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
    )
    return in_order(details, ordered, "time", "requestId")


def intents_without_outcome(flat: DataFrame, *, before_us: int | None, ordered: bool = True) -> DataFrame:
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
    described = described_resources()
    intents = (
        requests(flat)
        .filter((F.col("status") == F.lit(NO_OUTCOME)) & (micros() <= F.lit(before_us)))
        .select(
            "requestId",
            "time",
            "date",
            who().alias("principal"),
            "clientAddress",
            "listener",
            "method",
            "subject",
            described.alias("resources"),
        )
    )
    return in_order(intents, ordered, "time", "requestId")


def latency_sketches(flat: DataFrame, *, by: Sequence[str] = ()) -> DataFrame:
    """The latency report's mergeable parts per method (and ``by``): requests, totalMax, the KLL sketches of the
    outcomes' ``totalMs`` and ``upstreamMs`` and the number of ``upstreamMs`` values (a sketch of none has no quantile)."""
    # a request's row is its outcome when it has one: one outcome per request, no shuffle when ``flat`` holds request rows
    outcomes = requests(flat).filter((F.col("stage") == F.lit("outcome")) & F.col("totalMs").isNotNull())
    return outcomes.groupBy(*by, "method").agg(
        F.count(F.lit(1)).alias("requests"),
        F.max("totalMs").alias("totalMax"),
        F.kll_sketch_agg_double("totalMs", LATENCY_SKETCH_K).alias("totalSketch"),
        F.kll_sketch_agg_double("upstreamMs", LATENCY_SKETCH_K).alias("upstreamSketch"),
        F.count("upstreamMs").alias("upstreamCount"),
    )


def latency_of_sketches(sketches: DataFrame, *, merge: bool, ordered: bool = True) -> DataFrame:
    """The latency report from :func:`latency_sketches`' rows: one per method, or several (``merge``, one a date)."""
    if merge:
        sketches = sketches.groupBy("method").agg(
            F.sum("requests").alias("requests"),
            F.max("totalMax").alias("totalMax"),
            F.kll_merge_agg_double("totalSketch", LATENCY_SKETCH_K).alias("totalSketch"),
            F.kll_merge_agg_double("upstreamSketch", LATENCY_SKETCH_K).alias("upstreamSketch"),
            F.sum("upstreamCount").alias("upstreamCount"),
        )
    levels = F.array(*[F.lit(level) for level in LATENCY_LEVELS])
    total = F.kll_sketch_get_quantile_double("totalSketch", levels)
    upstream = F.when(F.col("upstreamCount") > 0, F.kll_sketch_get_quantile_double("upstreamSketch", levels))
    percentiles = sketches.select("method", "requests", total.alias("total"), "totalMax", upstream.alias("upstream")).select(
        "method",
        "requests",
        *[F.col("total")[i].alias(f"totalP{name}") for i, name in enumerate(_LEVEL_NAMES)],
        "totalMax",
        *[F.col("upstream")[i].alias(f"upstreamP{name}") for i, name in enumerate(_LEVEL_NAMES)],
    )
    return in_order(percentiles, ordered, F.desc("totalP99"), "method")


def latency(flat: DataFrame, *, ordered: bool = True) -> DataFrame:
    """Latency percentiles per API from the outcome records' timings (milliseconds), one outcome per request.

    Columns: method, requests, totalP50, totalP90, totalP99, totalMax,
    upstreamP50, upstreamP90, upstreamP99. Percentiles are from KLL sketches of size :data:`LATENCY_SKETCH_K`: the
    smallest timing at or above the level's rank (exact up to that many outcomes of a method, else within its error).
    """
    return latency_of_sketches(latency_sketches(flat), merge=False, ordered=ordered)
