"""The Spark job stands alone (it imports nothing of the proxy), so its copy of the record's identity is pinned here."""

from proxy.audit.cloudevents import CONNECTION_EVENT_TYPE, REQUEST_EVENT_TYPE, SCHEMA_VERSION, load_schema
from spark_audit import schema as job_schema


def test_event_types_and_schema_version_match_the_proxys_record_schema() -> None:
    record_schema = load_schema()
    assert set(record_schema["properties"]["type"]["enum"]) == {job_schema.REQUEST_EVENT_TYPE, job_schema.CONNECTION_EVENT_TYPE, job_schema.CHECKPOINT_EVENT_TYPE}
    assert (job_schema.REQUEST_EVENT_TYPE, job_schema.CONNECTION_EVENT_TYPE) == (REQUEST_EVENT_TYPE, CONNECTION_EVENT_TYPE)
    # the schema describes the version the proxy writes, and still matches the version before it
    versions = record_schema["properties"]["schemaversion"]["enum"]
    assert max(versions) == SCHEMA_VERSION and SCHEMA_VERSION - 1 in versions
    # the job reads every version there has been, the one the proxy writes included
    assert set(job_schema.SUPPORTED_SCHEMA_VERSIONS) == set(range(1, SCHEMA_VERSION + 1))


def test_the_job_checks_checkpoint_signatures_over_the_message_the_proxy_signs() -> None:
    from proxy.audit import chain_format
    from spark_audit import chain_integrity

    assert chain_integrity.CHECKPOINT_EVENT_TYPE == chain_format.CHECKPOINT_EVENT_TYPE == job_schema.CHECKPOINT_EVENT_TYPE
    data = {"reason": "start", "records": 0, "predecessor": {"source": "envelope-proxy/1/2-abcdef01", "seq": 9, "hash": "ab" * 32}}
    for claim in (data, {"reason": "close", "records": 41, "predecessor": None}):
        args = ("envelope-proxy/1/3-01234567", 42, "cd" * 32, "2026-11-21T10:00:00.000Z", claim)
        assert chain_integrity.checkpoint_message(*args) == chain_format.checkpoint_message(*args)


def test_the_jobs_probe_struct_reads_every_field_of_the_records_probe() -> None:
    # a field the proxy adds to data.probe and the job's schema lacks would be dropped on read without a word
    probe = load_schema()["$defs"]["commonData"]["properties"]["probe"]
    data_fields = {f.name: f for f in job_schema.DATA.fields}
    assert data_fields["probe"].dataType == job_schema.PROBE
    assert set(job_schema.PROBE.fieldNames()) == set(probe["properties"]) == set(probe["required"])
