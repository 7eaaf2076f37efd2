"""The same two reports as spark_reports.py, in one process with DuckDB: the single-machine baseline.

Run: python bench/audit/duckdb_reports.py INPUT_DIR; prints JSON. Same rules as
spark_audit (docs/audit-job.md): de-duplicate by id, one outcome per request
id, denials over finished requests and connection events.
"""

from __future__ import annotations

import argparse
import json

import duckdb

AUTH_CODES_LIST = (29, 30, 31, 53, 58, 65)
AUTH_CODES = str(AUTH_CODES_LIST)
COLUMNS = {
    "id": "VARCHAR",
    "type": "VARCHAR",
    "time": "TIMESTAMP",
    "schemaversion": "INTEGER",
    "data": (
        "STRUCT(requestId VARCHAR, stage VARCHAR, methodName VARCHAR, authenticationInfo STRUCT(principal VARCHAR), "
        "authorizationInfo STRUCT(decision VARCHAR), result STRUCT(status VARCHAR, errorCode INTEGER, "
        "errors STRUCT(resource VARCHAR, errorCode INTEGER)[]), timings STRUCT(upstreamMs DOUBLE, totalMs DOUBLE))"
    ),
}

QUERY = f"""
CREATE TEMP TABLE flat AS
SELECT id, time,
       type = 'io.github.kafka-envelope-proxy.connection' OR data.methodName = 'kafka.Connection' AS is_connection,
       data.stage AS stage, data.requestId AS request_id, data.methodName AS method,
       data.authenticationInfo.principal AS principal,
       coalesce(data.result.status = 'REFUSED' OR data.authorizationInfo.decision = 'DENIED'
                OR data.result.errorCode IN {AUTH_CODES}
                OR list_has_any([e.errorCode FOR e IN data.result.errors], {list(AUTH_CODES_LIST)}), false) AS denial,
       data.timings.totalMs AS total_ms
FROM read_json(?, format = 'newline_delimited', ignore_errors = true, columns = {COLUMNS!r})
WHERE id IS NOT NULL AND time IS NOT NULL AND data.stage IS NOT NULL AND schemaversion IN (1, 2)
QUALIFY row_number() OVER (PARTITION BY id ORDER BY time) = 1
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    args = parser.parse_args()
    db = duckdb.connect()
    db.execute(QUERY, [f"{args.input}/*.jsonl"])
    latency = db.execute(
        """
        SELECT method, count(*), quantile_disc(total_ms, 0.5), quantile_disc(total_ms, 0.9), quantile_disc(total_ms, 0.99)
        FROM (SELECT * FROM flat WHERE NOT is_connection AND stage = 'outcome' AND total_ms IS NOT NULL
              QUALIFY row_number() OVER (PARTITION BY request_id ORDER BY id) = 1)
        GROUP BY method
        """
    ).fetchall()
    denials = db.execute(
        """
        WITH finals AS (
            SELECT * FROM flat WHERE NOT is_connection AND stage IN ('outcome', 'refused', 'local', 'read')
            QUALIFY row_number() OVER (PARTITION BY request_id ORDER BY id) = 1
        ), events AS (SELECT * FROM finals UNION ALL SELECT * FROM flat WHERE is_connection)
        SELECT coalesce(principal, '(unauthenticated)'), count(*) FROM events WHERE denial GROUP BY 1
        """
    ).fetchall()
    print(
        json.dumps(
            {
                "latency": {m: {"requests": n, "p50": p50, "p90": p90, "p99": p99} for m, n, p50, p90, p99 in latency},
                "denials_by_principal": {p: n for p, n in denials},
            }
        )
    )


if __name__ == "__main__":
    main()
