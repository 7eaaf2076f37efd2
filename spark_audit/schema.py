"""Explicit Spark schema of an audit record (``docs/audit-schema.md``, versions 1 to 3).

The schema is never inferred: inference would make a column's type depend on
which lines happen to be in the input, and a record with a wrong type would
silently widen the column instead of landing in the quarantine. Lines are
parsed with :data:`AUDIT_SCHEMA`, which also carries the
:data:`CORRUPT_RECORD_COLUMN` that Spark's PERMISSIVE JSON parser fills with
the raw text of lines it cannot parse.

Version 2 adds connection events (``type`` :data:`CONNECTION_EVENT_TYPE`) and
``data.connection``; one schema reads both versions because every version 2
field is nullable and absent from version 1 records. Version 3 adds ``data.request`` (a forwarded change's
parameters, on intent records) and changes no field's type, so the same schema reads it.
``data.probe`` (added within version 3) marks the requests ``envelope-proxy authz probe`` and ``authz replay``
sent to test an authorizer: no client sent them (:data:`PROBE`).
"""

from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

#: Column holding the raw text of a malformed line (null for good lines).
CORRUPT_RECORD_COLUMN = "_corrupt_record"

#: CloudEvents ``type`` of request records.
REQUEST_EVENT_TYPE = "io.github.kafka-envelope-proxy.request"
#: CloudEvents ``type`` of connection events (schema version 2).
CONNECTION_EVENT_TYPE = "io.github.kafka-envelope-proxy.connection"
#: ``data.methodName`` of connection events and (version 1) refused connections.
CONNECTION_METHOD = "kafka.Connection"

#: CloudEvents ``type`` of the audit chain's signed checkpoints (version 5): kept out of the record store.
CHECKPOINT_EVENT_TYPE = "io.github.kafka-envelope-proxy.checkpoint"

SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3, 4, 5)

#: ``data.request`` (version 3, intent records): what a change asks to change (ACL bindings, config keys and values,
#: ...). Kept as its JSON text (a string column takes any JSON value, and its shape differs by API); the report
#: reads it on the driver for the rows it shows (spark_audit/changes.py).
REQUEST_PARAMETERS = "request"

AUTHENTICATION_INFO = StructType(
    [
        StructField("principal", StringType(), True),
        StructField("mechanism", StringType(), True),
        StructField("listener", StringType(), True),
        StructField("securityProtocol", StringType(), True),
        StructField("authenticationId", StringType(), True),  # GSSAPI's Kerberos name; absent for other mechanisms
    ]
)

#: ``requestMetadata.proxiedBy`` (version 4): the load balancer a client came through. Carried for a reader who asks,
#: and read by no report: every report names ``clientAddress``, which is the client the load balancer's PROXY
#: protocol header named, never the load balancer (docs/audit-schema.md).
PROXIED_BY = StructType(
    [
        StructField("address", StringType(), True),
        StructField("port", IntegerType(), True),
        StructField("version", IntegerType(), True),
        StructField("command", StringType(), True),
        StructField("authority", StringType(), True),
    ]
)

REQUEST_METADATA = StructType(
    [
        StructField("clientAddress", StringType(), True),
        StructField("clientPort", IntegerType(), True),
        StructField("clientId", StringType(), True),
        StructField("clientSoftwareName", StringType(), True),
        StructField("clientSoftwareVersion", StringType(), True),
        StructField("correlationId", IntegerType(), True),
        StructField("connectionId", StringType(), True),
        StructField("proxiedBy", PROXIED_BY, True),
    ]
)

RESOURCE = StructType(
    [
        StructField("type", StringType(), True),
        StructField("name", StringType(), True),
        StructField("patternType", StringType(), True),
        StructField("operation", StringType(), True),
    ]
)

AUTHORIZATION_INFO = StructType(
    [
        StructField("decision", StringType(), True),
        StructField("reason", StringType(), True),
        # refused connections and authentication failures: the rule or limit that applied
        StructField("detail", StringType(), True),
        # edge-authorized reads: the resources the edge authorizer denied
        StructField("denied", ArrayType(RESOURCE, True), True),
    ]
)

RESULT_ERROR = StructType(
    [
        StructField("resource", StringType(), True),
        StructField("errorCode", IntegerType(), True),
        StructField("errorName", StringType(), True),
        StructField("message", StringType(), True),
    ]
)

RESULT = StructType(
    [
        StructField("status", StringType(), True),
        StructField("envelopeErrorCode", IntegerType(), True),
        StructField("errorCode", IntegerType(), True),
        StructField("errors", ArrayType(RESULT_ERROR, True), True),
    ]
)

TIMINGS = StructType(
    [
        StructField("queueMs", DoubleType(), True),
        StructField("upstreamMs", DoubleType(), True),
        StructField("totalMs", DoubleType(), True),
    ]
)

UPSTREAM = StructType(
    [
        StructField("address", StringType(), True),
        StructField("nodeId", IntegerType(), True),
    ]
)

#: ``data.probe`` (added within version 3): present only on the intent and outcome of a request that ``envelope-proxy
#: authz probe`` or ``authz replay`` sent to test an authorizer, so that the reports can leave it out of the traffic
#: (spark_audit/view.py, ``isProbe``). ``command`` is ``authz probe`` or ``authz replay``; ``case`` says which case
#: (``<file>:<line>``).
PROBE = StructType(
    [
        StructField("command", StringType(), True),
        StructField("case", StringType(), True),
    ]
)

CONNECTION = StructType(
    [
        StructField("cause", StringType(), True),
        StructField("durationMs", DoubleType(), True),
        StructField("requests", LongType(), True),
    ]
)

DATA = StructType(
    [
        StructField("requestId", StringType(), True),
        StructField("stage", StringType(), True),
        StructField("methodName", StringType(), True),
        StructField("apiKey", IntegerType(), True),
        StructField("apiVersion", IntegerType(), True),
        StructField("authenticationInfo", AUTHENTICATION_INFO, True),
        StructField("forwardingPrincipal", StringType(), True),
        StructField("requestMetadata", REQUEST_METADATA, True),
        StructField("resources", ArrayType(RESOURCE, True), True),
        StructField("authorizationInfo", AUTHORIZATION_INFO, True),
        StructField("result", RESULT, True),
        StructField("timings", TIMINGS, True),
        StructField("upstream", UPSTREAM, True),
        StructField("connection", CONNECTION, True),
        StructField(REQUEST_PARAMETERS, StringType(), True),
        StructField("probe", PROBE, True),
    ]
)

#: The record as stored (without the corrupt-record column).
RECORD_SCHEMA = StructType(
    [
        StructField("specversion", StringType(), True),
        StructField("id", StringType(), True),
        StructField("type", StringType(), True),
        StructField("source", StringType(), True),
        # RFC 3339 UTC string in the file, parsed by the JSON reader.
        StructField("time", TimestampType(), True),
        StructField("subject", StringType(), True),
        StructField("datacontenttype", StringType(), True),
        StructField("schemaversion", IntegerType(), True),
        StructField("data", DATA, True),
    ]
)

#: The parser schema: the record plus the corrupt-record column.
AUDIT_SCHEMA = StructType([*RECORD_SCHEMA.fields, StructField(CORRUPT_RECORD_COLUMN, StringType(), True)])
