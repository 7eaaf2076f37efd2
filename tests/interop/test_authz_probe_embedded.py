"""`envelope-proxy authz probe` against the embedded controller and a Python plug-in, with the cases file the Kafka
suites use (test_authz_probe_kafka.py): each case a real Envelope, each decision the plug-in's, each probe audited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.audit_records import records_under
from tests.interop.authorizers import recording_plugin
from tests.interop.authz_probing import CASES, cases, grant_policy, probe_config, run_probe
from tests.interop.envelope_client import Controller, run_embedded_controller


@pytest.fixture(scope="module")
def recording_controller() -> Iterator[Controller]:
    """The embedded controller deciding with a Python plug-in that keeps ACLs and records what it saw."""
    extra = {"authorizer.class.name": "tests.interop.authorizers.recording_plugin:RecordingAcls"}
    for controller in run_embedded_controller(extra):
        grant_policy(controller)
        yield controller


def test_every_case_holds_and_the_plug_in_saw_the_cases_principal_and_host(recording_controller: Controller, tmp_path: Path) -> None:
    before = len(recording_plugin.SEEN)
    code, report = run_probe(probe_config(tmp_path, recording_controller), CASES, tmp_path / "report.json")
    assert [row["status"] for row in report["cases"]] == ["HOLDS"] * len(cases()), json.dumps(report, indent=1)
    assert code == 0
    seen = recording_plugin.SEEN[before:]
    bob_from_2 = [(str(c.principal), str(c.client_address), str(c.forwarding_principal)) for c, a, _ in seen if str(c.client_address) == "127.0.0.2"]
    assert ("User:bob", "127.0.0.2", "User:proxy") in bob_from_2
    assert any(c.principal.token_authenticated for c, _, _ in seen)


def test_each_probe_is_audited_as_a_forwarded_request_marked_as_a_probe(recording_controller: Controller, tmp_path: Path) -> None:
    run_probe(probe_config(tmp_path, recording_controller), CASES, tmp_path / "report.json")
    records = [r["data"] for r in records_under(tmp_path / "audit") if r["type"].endswith(".request")]
    assert {d["stage"] for d in records} == {"intent", "outcome"}
    assert len(records) == 2 * len(cases())
    assert all(d["probe"]["command"] == "authz probe" and d["forwardingPrincipal"] == "User:proxy" for d in records)
    assert {d["probe"]["case"] for d in records} == {f"{CASES}:{line}" for line in range(1, len(cases()) + 1)}


def test_a_changed_expectation_is_a_mismatch_and_a_case_without_dry_path_is_refused(recording_controller: Controller, tmp_path: Path) -> None:
    lines = CASES.read_text().splitlines()
    flipped = json.loads(lines[0]) | {"expect": "DENIED"}
    delete = {"principal": "User:alice", "host": "127.0.0.1", "operation": "DELETE", "resourceType": "TOPIC", "resourceName": "team-a-x", "expect": "DENIED"}
    describe = delete | {"operation": "DESCRIBE_CONFIGS"}
    changed = tmp_path / "cases.ndjson"  # not .jsonl: the suite reads every *.jsonl below tmp_path as audit records
    changed.write_text("".join(json.dumps(item) + "\n" for item in (flipped, delete, describe)))
    code, report = run_probe(probe_config(tmp_path, recording_controller), changed, tmp_path / "report.json")
    assert code == 1
    assert [row["status"] for row in report["cases"]] == ["MISMATCH", "REFUSED", "REFUSED"]
    assert "--allow-changes" in report["cases"][1]["reason"]
    assert "Envelope" in report["cases"][2]["reason"]


def test_bad_input_exits_2_naming_the_line(recording_controller: Controller, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "cases.ndjson"
    bad.write_text(CASES.read_text().splitlines()[0] + "\n" + '{"principal": "User:x", "host": "127.0.0.1", "api": "Produce", "expect": "DENIED"}\n')
    code = run_probe_code(probe_config(tmp_path, recording_controller), bad)
    assert code == 2
    err = capsys.readouterr().err
    assert f"{bad}:2" in err and "Produce" in err and "Traceback" not in err


def run_probe_code(config: Path, cases_path: Path) -> int:
    from envelope_proxy.cli import main

    return main(["authz", "probe", "--config", str(config), "--cases", str(cases_path)])
