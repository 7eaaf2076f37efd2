"""PySpark audit job for kafka-envelope-proxy (docs/audit-job.md).

Reads the proxy's JSON-lines audit records (files or a Kafka topic, batch or
incremental), quarantines malformed lines, de-duplicates by record id, stores
the records as Parquet partitioned by date, and writes reports (Parquet,
summary.json and a self-contained HTML page), optionally with an authorizer
what-if replay. Imports ``authz`` for the replay and never ``proxy``.
"""
