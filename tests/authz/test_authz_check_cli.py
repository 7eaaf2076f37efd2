"""`envelope-proxy authz check` and the case/ACL file formats, on the shared ACL semantics table."""

import json
from pathlib import Path

import pytest

from authz import AclAuthorizer
from authz.acl_file import AclFileError, binding_to_json, load_acls, parse_acls
from authz.cases import CaseFileError, load_cases, mismatches, parse_cases
from envelope_proxy.cli import main
from tests.authz.acl_semantics import ACLS, CASES, SUPER_USER


def _write_lines(path: Path, items: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    config = tmp_path / "authorizer.properties"
    config.write_text(f"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\nsuper.users={SUPER_USER}\n")
    return config, _write_lines(tmp_path / "cases.jsonl", CASES), _write_lines(tmp_path / "acls.jsonl", ACLS)


def test_the_built_in_authorizer_decides_the_whole_table(files: tuple[Path, Path, Path]) -> None:
    _, cases, acls = files
    authorizer = AclAuthorizer([SUPER_USER], acls=load_acls(acls))
    assert [str(m) for m in mismatches(authorizer, load_cases(cases))] == []


def test_cli_exit_0_when_every_case_holds(files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    config, cases, acls = files
    assert main(["authz", "check", "--config", str(config), "--cases", str(cases), "--acls", str(acls)]) == 0
    assert f"{len(CASES)} cases, 0 mismatches" in capsys.readouterr().out


def test_cli_exit_1_names_each_mismatch_and_the_rule_behind_it(files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    config, cases, acls = files
    flipped = [dict(case) for case in CASES]
    deny_wins = next(i for i, case in enumerate(flipped) if case["why"] == "DENY overrides ALLOW")
    flipped[deny_wins]["expect"] = "ALLOWED"
    _write_lines(cases, flipped)
    assert main(["authz", "check", "--config", str(config), "--cases", str(cases), "--acls", str(acls)]) == 1
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("MISMATCH")]
    assert f"cases.jsonl:{deny_wins + 1}: User:zed DELETE TOPIC:pay-secret from 10.0.0.1" in line
    assert "expected ALLOWED, got DENIED (DENIED (matched DENY: " in line and "pay-secret" in line
    assert f"{len(CASES)} cases, 1 mismatches" in out


def test_cli_reads_the_acls_of_a_controllers_metadata_dir(tmp_path: Path, files: tuple[Path, Path, Path]) -> None:
    _, cases, _ = files
    metadata = tmp_path / "metadata"
    metadata.mkdir()
    (metadata / "metadata.json").write_text(json.dumps({"version": 2, "topics": {}, "acls": ACLS}))
    config = tmp_path / "controller.properties"
    config.write_text(
        f"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\nsuper.users={SUPER_USER}\nmetadata.log.dir={metadata}\n"
    )
    assert main(["authz", "check", "--config", str(config), "--cases", str(cases)]) == 0


def test_a_plug_in_is_checked_by_dotted_path(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs' example plug-in refuses impersonated ACL changes unless the forwarder is listed."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "docs" / "examples"))
    config = tmp_path / "plugin.properties"
    config.write_text(
        "authorizer.class.name=forwarding_guard:ForwardingGuard\n"
        "forwarding.guard.allowed.forwarders=User:trusted\n"
        "allow.everyone.if.no.acl.found=true\n"
    )
    cases = _write_lines(
        tmp_path / "cases.jsonl",
        [
            {"principal": "User:alice", "host": "127.0.0.1", "operation": "ALTER", "resourceType": "CLUSTER", "resourceName": "kafka-cluster", "forwardedBy": "User:proxy", "expect": "DENIED"},
            {"principal": "User:alice", "host": "127.0.0.1", "operation": "ALTER", "resourceType": "CLUSTER", "resourceName": "kafka-cluster", "forwardedBy": "User:trusted", "expect": "DENIED"},
        ],
    )
    assert main(["authz", "check", "--config", str(config), "--cases", str(cases)]) == 1
    out = capsys.readouterr().out
    assert "cases.jsonl:2: User:alice ALTER CLUSTER:kafka-cluster from 127.0.0.1 on CLIENT forwarded by User:trusted: expected DENIED, got ALLOWED" in out
    assert "2 cases, 1 mismatches" in out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"principal": "User:a"}', "cases.jsonl:1: missing host, operation, resourceType, resourceName, expect"),
        ('{"principal": "alice", "host": "1.2.3.4", "operation": "READ", "resourceType": "TOPIC", "resourceName": "t", "expect": "ALLOWED"}', "cases.jsonl:1: principal: Could not parse principal from `alice`"),
        ('{"principal": "User:a", "host": "nowhere", "operation": "READ", "resourceType": "TOPIC", "resourceName": "t", "expect": "ALLOWED"}', "cases.jsonl:1: host 'nowhere' is not an IP address"),
        ('{"principal": "User:a", "host": "1.2.3.4", "operation": "SMASH", "resourceType": "TOPIC", "resourceName": "t", "expect": "ALLOWED"}', "cases.jsonl:1: operation 'SMASH' is not one of"),
        ('{"principal": "User:a", "host": "1.2.3.4", "operation": "READ", "resourceType": "TOPIC", "resourceName": "t", "expect": "MAYBE"}', "cases.jsonl:1: expect 'MAYBE' is not one of ALLOWED, DENIED"),
        ("not json", "cases.jsonl:1: not JSON"),
    ],
)
def test_a_bad_case_is_exit_2_naming_line_and_field(
    files: tuple[Path, Path, Path], line: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config, cases, acls = files
    cases.write_text(line + "\n")
    assert main(["authz", "check", "--config", str(config), "--cases", str(cases), "--acls", str(acls)]) == 2
    assert message in capsys.readouterr().err
    with pytest.raises(CaseFileError):
        parse_cases(line, "cases.jsonl")


def test_acl_file_errors_name_the_line(tmp_path: Path) -> None:
    with pytest.raises(AclFileError, match=r"acls.jsonl: line 2: permission 'SOMETIMES' is not one of"):
        parse_acls(json.dumps(ACLS[0]) + "\n" + json.dumps({**ACLS[0], "permission": "SOMETIMES"}) + "\n", "acls.jsonl")
    with pytest.raises(AclFileError, match=r"acls.jsonl: line 1: The only valid name for the CLUSTER resource is kafka-cluster"):
        parse_acls(json.dumps({**ACLS[0], "resourceType": "CLUSTER"}), "acls.jsonl")
    assert [binding_to_json(b) for b in parse_acls("".join(json.dumps(a) + "\n" for a in ACLS))] == ACLS


def test_no_authorizer_named_is_a_config_error(tmp_path: Path, files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, cases, _ = files
    config = tmp_path / "empty.properties"
    config.write_text("super.users=User:admin\n")
    assert main(["authz", "check", "--config", str(config), "--cases", str(cases)]) == 2
    assert "authorizer.class.name" in capsys.readouterr().err
