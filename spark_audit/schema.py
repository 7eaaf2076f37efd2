"""Explicit Spark schema of an audit record (``docs/audit-schema.md``, version 1).

The schema is never inferred: records are read with :data:`AUDIT_SCHEMA`, which
also carries the :data:`CORRUPT_RECORD_COLUMN` that Spark's PERMISSIVE JSON
reader fills with the raw text of lines it cannot parse.
"""

from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

#: Column holding the raw text of a malformed line (null for good lines).
CORRUPT_RECORD_COLUMN = "_corrupt_record"

#: CloudEvents ``type`` of request records.
REQUEST_EVENT_TYPE = "io.github.kafka-envelope-proxy.request"

AUTHENTICATION_INFO = StructType(
    [
        StructField("principal", StringType(), True),
        StructField("mechanism", StringType(), True),
        StructField("listener", StringType(), True),
        StructField("securityProtocol", StringType(), True),
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

#: The reader schema: the record plus the corrupt-record column.
AUDIT_SCHEMA = StructType([*RECORD_SCHEMA.fields, StructField(CORRUPT_RECORD_COLUMN, StringType(), True)])
