"""PySpark audit job for kafka-envelope-proxy.

Reads the proxy's JSON-lines audit records (see ``docs/audit-schema.md``),
quarantines malformed lines, de-duplicates by record id, writes the clean
records as Parquet and prints/writes summary reports (requests by principal,
method and outcome; denials).
"""
