"""The job reads every version of the record together: version 1 and 2 files as they were written, and version 3 records
as the proxy writes them now (an intent with its `request`), none quarantined."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from pyspark.sql import SparkSession

from envelope.apis import ApiKey
from proxy.audit.cloudevents import SCHEMA_VERSION
from spark_audit.read import read_audit
from spark_audit.schema import DATA
from tests.proxy.audit.test_request_parameters import intent
from tests.spark_audit.records import record_id, request, write_jsonl

pytestmark = pytest.mark.spark

CONFIGS = {
    "resources": [
        {
            "resource_type": 2,
            "resource_name": "orders",
            "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}, {"name": "x.password", "config_operation": 0, "value": "pw"}],
        }
    ],
    "validate_only": False,
}


def test_versions_1_2_and_3_are_read_together(spark: SparkSession, tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "fixtures" / "audit-sample.jsonl"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "audit-1-20261121T100000Z-0.jsonl").write_bytes(sample.read_bytes())  # version 1: 5 records, 1 bad line
    write_jsonl(tmp_path / "in" / "audit-1-20261121T110000Z-0.jsonl", [request(900, "2026-11-21T11:00:00.000Z", "v2", "intent", version=2)])
    data, line = trio.run(intent, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, CONFIGS)
    (tmp_path / "in" / "audit-1-20261121T120000Z-0.jsonl").write_bytes(line)

    records, malformed = read_audit(spark, str(tmp_path / "in"))

    assert malformed == 1  # the sample's own bad line, nothing of version 2 or of the version the proxy writes
    versions = sorted(r["schemaversion"] for r in records.select("schemaversion").collect())
    # the proxy's own intent carries the version it writes now (3 when this test was written), not a fixed one
    assert versions == [1] * 5 + [2, SCHEMA_VERSION]
    assert records.filter(f"id = '{record_id(900)}'").count() == 1
    newest = records.filter(f"schemaversion = {SCHEMA_VERSION}").select("data.stage", "data.methodName").first()
    assert newest is not None and tuple(newest) == ("intent", "kafka.IncrementalAlterConfigs")
    if "request" in DATA.fieldNames():  # the report's reader of what changed (spark_audit/changes.py) takes it as JSON text
        (text,) = records.filter(f"schemaversion = {SCHEMA_VERSION}").select("data.request").first() or (None,)
        assert text is not None and json.loads(text) == data["request"]
