"""A flat view of audit records and the rules every report shares.

Reports work on :func:`flatten`'s columns rather than on nested paths so that
the rules (what is a denial, a connection event, a finished request, which
resource was denied) are written once, here.
"""

from __future__ import annotations

import re

from kio.schema.errors import ErrorCode
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from envelope.responses import error_name as envelope_error_name
from spark_audit.schema import CONNECTION_EVENT_TYPE, CONNECTION_METHOD, REQUEST_PARAMETERS

#: Kafka error codes that mean an authentication or authorization failure (docs/audit-schema.md).
AUTHORIZATION_ERRORS = (
    ErrorCode.topic_authorization_failed,
    ErrorCode.group_authorization_failed,
    ErrorCode.cluster_authorization_failed,
    ErrorCode.transactional_id_authorization_failed,
    ErrorCode.sasl_authentication_failed,
    ErrorCode.delegation_token_authorization_failed,
)
AUTHORIZATION_ERROR_CODES: dict[int, str] = {int(code): envelope_error_name(code) for code in AUTHORIZATION_ERRORS}
#: Authorization errors that concern one kind of resource: an error row with one of them names a resource of
#: these types only (an error row carries a bare name, and a group may share a topic's name). A delegation
#: token's owner is a USER resource.
AUTHORIZATION_ERROR_TYPES: dict[int, tuple[str, ...]] = {
    int(ErrorCode.topic_authorization_failed): ("TOPIC",),
    int(ErrorCode.group_authorization_failed): ("GROUP",),
    int(ErrorCode.transactional_id_authorization_failed): ("TRANSACTIONAL_ID",),
    int(ErrorCode.delegation_token_authorization_failed): ("DELEGATION_TOKEN", "USER"),
}

#: Names for every code a record may carry without an errorName: kio's ErrorCode, the one table of every package.
KAFKA_ERROR_NAMES: dict[int, str] = {int(code): envelope_error_name(code) for code in ErrorCode}

#: Request stages that close a request: one of them per request id.
FINAL_STAGES = ("outcome", "refused", "local", "read")
#: Connection-refusal reasons Kafka counts as authentication failures.
AUTHENTICATION_FAILURE_REASONS = ("authentication-failed", "ssl-principal-mapping")
#: Status of a request that has an intent and nothing else.
NO_OUTCOME = "NO_OUTCOME"
UNAUTHENTICATED = "(unauthenticated)"
NO_RESOURCE = "(none)"

ALLOWED = "ALLOWED"
DENIED = "DENIED"

#: Who denied a denial (:func:`denied_by`): the controller's authorizer, on the client's principal it was forwarded
BY_CONTROLLER = "controller"
#: the proxy itself, before forwarding: its edge authorizer (reads), or a refusal (an Envelope from a client, an API it
#: does not serve, a token request Kafka would refuse)
BY_PROXY_EDGE = "proxy-edge"
#: the proxy, for a whole connection: an IP filter, a connection limit, a privileged principal, a failed login
BY_PROXY_CONNECTION = "proxy-connection"
#: the controller refused the proxy's own Envelope (CLUSTER_AUTHORIZATION_FAILED as the envelope error: the proxy's
#: principal lacks CLUSTER_ACTION on the cluster): the client's own rights were never checked
BY_PROXY_RIGHTS = "proxy-rights"
DENIED_BY = (BY_CONTROLLER, BY_PROXY_EDGE, BY_PROXY_CONNECTION, BY_PROXY_RIGHTS)

#: Column of :func:`flatten`: ``data.request``, what a change asks to change, as JSON text (null where the record has none)
PARAMETERS = "parameters"
#: Column of :func:`flatten`: true for a record of a request ``envelope-proxy authz probe`` or ``authz replay`` sent
#: (``data.probe``): no client sent it, so the traffic reports leave it out (:func:`traffic`) and the summary counts it
#: (:func:`probe_requests`).
IS_PROBE = "isProbe"


#: Who did what, where and when: the first columns of every detail table (denials, the explained requests).
WHO_COLUMNS = ("time", "principal", "clientAddress", "listener", "forwardingPrincipal", "method")


_SQL_SAFE_NAME = re.compile(r"[A-Z0-9_]+")


def _sql_name(name: str) -> str:
    if not _SQL_SAFE_NAME.fullmatch(name):
        raise ValueError(f"error name {name!r} is not a plain SQL string literal")
    return f"'{name}'"


#: The code-to-name table as one SQL map literal: each ``F.lit`` is a round trip to the JVM, and ``create_map`` of
#: every code's pair cost about 1.5 s of the driver's time in each run (it is built for several reports).
_ERROR_NAMES_SQL = "map(" + ", ".join(f"{code}, {_sql_name(name)}" for code, name in sorted(KAFKA_ERROR_NAMES.items())) + ")"
_AUTH_CODES_SQL = "array(" + ", ".join(str(code) for code in sorted(AUTHORIZATION_ERROR_CODES)) + ")"


def is_auth_code(code: Column) -> Column:
    return F.array_contains(F.expr(_AUTH_CODES_SQL), code)


def error_name(code: Column) -> Column:
    return F.try_element_at(F.expr(_ERROR_NAMES_SQL), code)


def flatten(records: DataFrame) -> DataFrame:
    """One row per record with the columns the reports use (nested fields pulled up, rules applied)."""
    data = F.col("data")
    auth = data["authenticationInfo"]
    meta = data["requestMetadata"]
    result = data["result"]
    authz = data["authorizationInfo"]
    is_connection = (F.col("type") == F.lit(CONNECTION_EVENT_TYPE)) | (data["methodName"] == F.lit(CONNECTION_METHOD))
    flat = records.select(
        F.col("id"),
        F.col("time"),
        F.to_date("time").alias("date"),
        F.col("type"),
        F.col("subject"),
        F.coalesce(is_connection, F.lit(False)).alias("isConnection"),
        data["stage"].alias("stage"),
        # a record without a request id is a request of its own, not one of a null-id crowd
        F.coalesce(data["requestId"], F.col("id")).alias("requestId"),
        data["methodName"].alias("method"),
        data["apiKey"].alias("apiKey"),
        auth["principal"].alias("principal"),
        auth["mechanism"].alias("mechanism"),
        auth["listener"].alias("listener"),
        auth["securityProtocol"].alias("securityProtocol"),
        data["forwardingPrincipal"].alias("forwardingPrincipal"),
        meta["clientAddress"].alias("clientAddress"),
        meta["clientId"].alias("clientId"),
        meta["clientSoftwareName"].alias("clientSoftwareName"),
        meta["clientSoftwareVersion"].alias("clientSoftwareVersion"),
        meta["connectionId"].alias("connectionId"),
        F.coalesce(data["resources"], F.array()).alias("resources"),
        authz["decision"].alias("decision"),
        authz["reason"].alias("reason"),
        authz["detail"].alias("detail"),
        result["status"].alias("status"),
        result["errorCode"].alias("errorCode"),
        result["envelopeErrorCode"].alias("envelopeErrorCode"),
        F.coalesce(result["errors"], F.array()).alias("errors"),
        data["timings"]["totalMs"].alias("totalMs"),
        data["timings"]["upstreamMs"].alias("upstreamMs"),
        data["connection"].alias("connection"),
        data[REQUEST_PARAMETERS].alias(PARAMETERS),
        data["probe"].isNotNull().alias(IS_PROBE),
    )
    auth_failure = (F.col("isConnection") & (F.col("stage") == F.lit("authentication-failed"))) | F.col("reason").isin(
        *AUTHENTICATION_FAILURE_REASONS
    )
    denial = (
        (F.col("status") == F.lit("REFUSED"))
        | (F.col("decision") == F.lit(DENIED))
        | is_auth_code(F.col("errorCode"))
        | F.exists(F.col("errors"), lambda e: is_auth_code(e["errorCode"]))
    )
    return flat.withColumn(
        "isAuthFailure", F.coalesce(auth_failure | (F.col("errorCode") == int(ErrorCode.sasl_authentication_failed)), F.lit(False))
    ).withColumn("isDenial", F.coalesce(denial, F.lit(False)))


#: The columns of :func:`flatten` the reports read (the request and alarm tables keep only these).
REPORT_COLUMNS = (
    "id",
    "time",
    "date",
    "subject",
    "isConnection",
    "stage",
    "requestId",
    "method",
    "principal",
    "listener",
    "forwardingPrincipal",
    "clientAddress",
    "resources",
    "status",
    "errorCode",
    "errors",
    "totalMs",
    "upstreamMs",
    "isAuthFailure",
    "isDenial",
    # what the page says about a denial and a change: who denied (denied_by), why, and what changed
    "envelopeErrorCode",
    "reason",
    "detail",
    PARAMETERS,
)


def traffic(flat: DataFrame) -> DataFrame:
    """``flat`` without the records of probes (:data:`IS_PROBE`): what clients sent.

    A frame without the column (the job's tables, whose rows were picked from :func:`traffic` already) is
    returned as it is.
    """
    return flat.filter(~F.col(IS_PROBE)) if IS_PROBE in flat.columns else flat


def probe_requests(flat: DataFrame) -> DataFrame:
    """The requests probes sent, one row each (``requestId``): the ``probes`` of ``summary.json``."""
    return flat.filter(F.col(IS_PROBE)).select("requestId").distinct()


def request_records(flat: DataFrame) -> DataFrame:
    """Records about requests that clients sent (not connection events, not probes)."""
    return traffic(flat).filter(~F.col("isConnection"))


#: Column of a frame holding request rows (:func:`request_rows`), so that :func:`requests` becomes a filter;
#: connection events beside them in one frame have it false.
REQUEST_ROW = "isRequestRow"


def request_rows(flat: DataFrame) -> DataFrame:
    """Each request a client sent (probes are left out: :func:`traffic`), with :data:`REQUEST_ROW` true: its
    closing record (the earliest, ties by id), or its earliest intent when nothing closed it.

    One shuffle by request id, of only the records that close or open a request: connection
    events and other stages are never a request's row, so they are not shuffled.
    """
    kind = F.when(F.col("stage").isin(*FINAL_STAGES), F.lit(0)).when(F.col("stage") == F.lit("intent"), F.lit(1))
    candidates = traffic(flat).filter(~F.col("isConnection") & kind.isNotNull()).withColumn("_kind", kind)
    first = Window.partitionBy("requestId").orderBy(F.col("_kind"), F.col("time"), F.col("id"))
    ranked = candidates.withColumn("_rank", F.row_number().over(first))
    if PARAMETERS in flat.columns:
        # the intent carries a change's parameters; the row is the closing record: the first record that has them
        every = first.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
        ranked = ranked.withColumn(PARAMETERS, F.first(PARAMETERS, ignorenulls=True).over(every))
    return ranked.filter(F.col("_rank") == 1).drop("_rank", "_kind").withColumn(REQUEST_ROW, F.lit(True))


def requests(flat: DataFrame) -> DataFrame:
    """One row per request id: its closing record, or its intent (status ``NO_OUTCOME``) when nothing closed it.

    A filter on :data:`REQUEST_ROW` where ``flat`` has it (the job's tables); otherwise :func:`request_rows`.
    Either way the rows have the columns of ``flat``.
    """
    chosen = flat.filter(F.col(REQUEST_ROW)) if REQUEST_ROW in flat.columns else request_rows(flat).drop(REQUEST_ROW)
    return chosen.withColumn("status", F.when(F.col("stage") == F.lit("intent"), F.lit(NO_OUTCOME)).otherwise(F.col("status")))


def denied_by() -> Column:
    """Who denied a denial (null for a row that is not one): :data:`BY_PROXY_CONNECTION` for a connection event,
    :data:`BY_PROXY_RIGHTS` when the controller answered the Envelope itself with CLUSTER_AUTHORIZATION_FAILED,
    :data:`BY_CONTROLLER` for another forwarded request's outcome, :data:`BY_PROXY_EDGE` for the rest (refusals and
    reads the edge authorizer denied: the proxy never forwarded them)."""
    return (
        F.when(~F.col("isDenial"), F.lit(None).cast("string"))
        .when(F.col("isConnection"), F.lit(BY_PROXY_CONNECTION))
        .when(F.coalesce(F.col("envelopeErrorCode") == int(ErrorCode.cluster_authorization_failed), F.lit(False)), F.lit(BY_PROXY_RIGHTS))
        .when(F.col("stage") == F.lit("outcome"), F.lit(BY_CONTROLLER))
        .otherwise(F.lit(BY_PROXY_EDGE))
    )


def explaining_error() -> Column:
    """The code that explains a row: on a denial its authorization code (top level first, then the first
    per-resource one), else the top-level code when it is not 0, else the first per-resource code, else the
    top-level code. A denial never shows 0 (CreateAcls has no top-level code: its denials are per binding);
    where no code says why, it is null."""
    top = F.col("errorCode")
    first_auth = F.try_element_at(F.filter("errors", lambda e: is_auth_code(e["errorCode"])), F.lit(1))
    first_error = F.try_element_at(F.filter("errors", lambda e: e["errorCode"] != 0), F.lit(1))
    code = (
        F.when(is_auth_code(top), top)
        .when(first_auth.isNotNull(), first_auth["errorCode"])
        .when(top != 0, top)
        .when(first_error.isNotNull(), first_error["errorCode"])
        .otherwise(top)
    )
    return F.when(F.col("isDenial") & (F.coalesce(code, F.lit(0)) == 0), F.lit(None).cast("int")).otherwise(code)


def resource_label(resource: Column) -> Column:
    """``topic:orders`` style, as the audit's ``subject``."""
    return F.concat(F.lower(resource["type"]), F.lit(":"), resource["name"])


def resource_decision(resource: Column) -> Column:
    """The historical decision on one resource of a record, as the audit shows it.

    DENIED when the request was refused, or denied as a whole (a top-level
    authorization error; CreateAcls/DeleteAcls, which Kafka authorizes as one
    ALTER on the cluster), or when an error row for this resource (by name, with a
    code that fits its type; for the cluster, int(ErrorCode.cluster_authorization_failed))
    is an authorization failure.
    ALLOWED otherwise.
    """
    whole_request = (
        (F.col("status") == F.lit("REFUSED"))
        | is_auth_code(F.col("errorCode"))
        | (F.col("method").isin("kafka.CreateAcls", "kafka.DeleteAcls") & F.exists(F.col("errors"), lambda e: is_auth_code(e["errorCode"])))
    )
    kind = F.upper(resource["type"])
    this_resource = F.exists(
        F.col("errors"),
        lambda e: (
            is_auth_code(e["errorCode"])
            & (
                ((e["resource"] == resource["name"]) & _concerns(e["errorCode"], kind))
                | ((kind == F.lit("CLUSTER")) & (e["errorCode"] == int(ErrorCode.cluster_authorization_failed)))
            )
        ),
    )
    return F.when(F.coalesce(whole_request | this_resource, F.lit(False)), F.lit(DENIED)).otherwise(F.lit(ALLOWED))


def _concerns(code: Column, kind: Column) -> Column:
    """An authorization error with ``code`` may concern a resource of type ``kind`` (:data:`AUTHORIZATION_ERROR_TYPES`;
    any type for the other codes, and for a resource of no type)."""
    fits = F.lit(True)
    for error, kinds in AUTHORIZATION_ERROR_TYPES.items():
        fits = F.when(code == F.lit(error), F.coalesce(kind.isin(*kinds), F.lit(True))).otherwise(fits)
    return fits


def with_resources(frame: DataFrame) -> DataFrame:
    """One row per (record, resource) with ``resource`` (label), ``resourceType``, ``resourceName``,
    ``operation`` and ``resourceDecision``; a record without resources keeps one row labelled by its subject.

    A resource the record lists twice under one label and operation (CreateAcls with a LITERAL and a
    PREFIXED binding on one topic) is one row: a request is counted once per resource it touches.
    """
    touched = F.transform("resources", lambda r: F.struct(F.upper(r["type"]).alias("type"), r["name"].alias("name"), r["operation"].alias("operation")))
    exploded = frame.withColumn("_resource", F.explode_outer(F.array_distinct(touched)))
    r = F.col("_resource")
    return exploded.select(
        "*",
        F.coalesce(resource_label(r), F.col("subject"), F.lit(NO_RESOURCE)).alias("resource"),
        r["type"].alias("resourceType"),
        r["name"].alias("resourceName"),
        r["operation"].alias("operation"),
        F.when(r.isNull(), F.when(F.col("isDenial"), F.lit(DENIED)).otherwise(F.lit(ALLOWED)))
        .otherwise(resource_decision(r))
        .alias("resourceDecision"),
    ).drop("_resource")
