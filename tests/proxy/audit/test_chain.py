"""The audit hash chain: every record sealed in commit order, signed checkpoints, restarts and crashes linked, and
`audit verify` finding and locating each way of tampering with the files."""

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key

from envelope_proxy.audit_verify_cli import main as verify_main
from envelope_proxy.audit_verify_cli import public_keys
from proxy.audit.chain import line_hash
from proxy.audit.chain_format import CHECKPOINT_EVENT_TYPE, GENESIS
from proxy.audit.chain_settings import parse_chain_settings
from proxy.audit.chain_verify import Verification, verify_lines
from proxy.properties import ConfigError, Properties
from tests.audit_records import assert_valid, records_under
from tests.proxy.audit.chain_trail import drop_lines, edit_line, lines_of, published, seq_at, swap_lines, write_key_pair, write_run

RECORDS = 40


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    return write_key_pair(tmp_path)


def verify(directory: Path, public: Path) -> Verification:
    return verify_lines(lines_of(directory), public_keys([str(public)]))


def writer(result: Verification, node_id: int) -> Any:
    return next(report for report in result.writers if report.writer.startswith(f"envelope-proxy/{node_id}/"))


async def test_each_line_carries_its_place_and_the_hash_of_the_line_before(tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    await write_run(audit, None, 1, RECORDS)
    lines = [line.data for line in lines_of(audit)]
    assert len(published(audit)) > 1, "small files: the chain goes on across rotations"
    records = [json.loads(line) for line in lines]
    assert_valid(records)
    assert [r["chainseq"] for r in records] == list(range(1, RECORDS + 1))
    assert records[0]["chainprev"] == GENESIS
    assert all(r["chainprev"] == line_hash(before) for r, before in zip(records[1:], lines, strict=False))
    assert not any(r["type"] == CHECKPOINT_EVENT_TYPE for r in records), "no key, no checkpoints"


async def test_checkpoints_at_start_rotation_every_n_records_and_close_verify(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = tmp_path / "audit"
    await write_run(audit, keys[0], 1, RECORDS, extra={"audit.chain.checkpoint.records": "3"})
    records = [json.loads(line.data) for line in lines_of(audit)]
    assert_valid(records)
    reasons = [r["data"]["reason"] for r in records if r["type"] == CHECKPOINT_EVENT_TYPE]
    assert reasons[0] == "start" and reasons[-1] == "close" and {"rotation", "records"} <= set(reasons)
    for path in published(audit):  # each file starts signed
        assert json.loads(path.read_bytes().splitlines()[0])["type"] == CHECKPOINT_EVENT_TYPE
    result = verify(audit, keys[1])
    assert not result.broken, result.as_dict()
    report = writer(result, 1)
    assert report.closed and report.unsigned_tail is None and report.verified == report.records == len(records)


async def test_restarts_and_a_crash_continue_one_trail(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = tmp_path / "audit"
    await write_run(audit, keys[0], 1, RECORDS)
    await write_run(audit, keys[0], 2, RECORDS, crash=True)
    await write_run(audit, keys[0], 3, RECORDS)
    assert_valid(records_under(audit))
    result = verify(audit, keys[1])
    assert not result.broken, result.as_dict()
    first, crashed, last = writer(result, 1), writer(result, 2), writer(result, 3)
    assert crashed.continues == {"source": first.writer, "seq": first.records}
    assert last.continues == {"source": crashed.writer, "seq": crashed.records}, "the record recovered from staging"
    assert not crashed.closed and crashed.unsigned_tail is not None


def test_a_missing_unreadable_or_wrong_key_is_a_config_error(tmp_path: Path) -> None:
    rsa_like = generate_private_key(SECP256R1())
    wrong = tmp_path / "ec.pem"
    wrong.write_bytes(rsa_like.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    for path, reason in ((tmp_path / "absent.pem", "cannot read it"), (garbage, "not an unencrypted PEM"), (wrong, "not Ed25519")):
        with pytest.raises(ConfigError) as error:
            parse_chain_settings(Properties({"audit.chain.signing.key.file": str(path)}))
        assert error.value.key == "audit.chain.signing.key.file" and error.value.value == str(path) and reason in str(error.value)


async def _trail(tmp_path: Path, keys: tuple[Path, Path]) -> Path:
    audit = tmp_path / "audit"
    await write_run(audit, keys[0], 1, RECORDS)
    await write_run(audit, keys[0], 2, RECORDS)
    return audit


async def test_a_deleted_line_is_missing(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = await _trail(tmp_path, keys)
    target = published(audit)[1]
    seq = seq_at(target, 3)
    drop_lines(target, 3)
    report = writer(verify(audit, keys[1]), 1)
    assert report.missing == [(seq, seq)] and report.first_break == seq


async def test_a_deleted_file_is_missing_whole(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = await _trail(tmp_path, keys)
    target = published(audit)[1]
    count = len(target.read_bytes().splitlines())
    first = seq_at(target, 1)
    target.unlink()
    report = writer(verify(audit, keys[1]), 1)
    assert report.missing == [(first, first + count - 1)]


async def test_a_deleted_last_file_is_caught_by_the_next_run_s_signed_start(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = await _trail(tmp_path, keys)
    first_run = [path for path in published(audit) if path.name.startswith("audit-1-")]
    last = first_run[-1]
    first, count = seq_at(last, 1), len(last.read_bytes().splitlines())
    last.unlink()
    report = writer(verify(audit, keys[1]), 1)
    assert report.missing == [(first, first + count - 1)]


async def test_an_edited_principal_is_a_modified_record(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = await _trail(tmp_path, keys)
    target = published(audit)[1]
    seq = seq_at(target, 4)
    edit_line(target, 4, lambda r: r["data"]["authenticationInfo"].update(principal="User:mallory"))
    report = writer(verify(audit, keys[1]), 1)
    assert report.modified == [seq] and report.locations[seq] == f"{target}:4"


async def test_an_edited_principal_with_the_chain_rewritten_after_it_breaks_the_next_signature(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = await _trail(tmp_path, keys)
    target = published(audit)[-1]
    edit_line(target, 2, lambda r: r["data"]["authenticationInfo"].update(principal="User:mallory"))
    lines = target.read_bytes().splitlines(keepends=True)
    for index in range(2, len(lines)):  # the forger re-links every later line of the file
        record = json.loads(lines[index])
        record["chainprev"] = line_hash(lines[index - 1])
        lines[index] = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    target.write_bytes(b"".join(lines))
    report = writer(verify(audit, keys[1]), int(target.name.split("-")[1]))
    assert report.bad_signatures and report.broken


async def test_swapped_lines_are_reordered(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = await _trail(tmp_path, keys)
    target = published(audit)[1]
    later = seq_at(target, 3)
    swap_lines(target, 2, 3)
    report = writer(verify(audit, keys[1]), 1)
    assert report.reordered == [later - 1] and not report.missing and not report.modified


async def test_a_truncated_tail_is_missing_by_the_successor_s_claim(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    audit = await _trail(tmp_path, keys)
    last = [path for path in published(audit) if path.name.startswith("audit-1-")][-1]
    lines = last.read_bytes().splitlines(keepends=True)
    cut = seq_at(last, len(lines) - 2)
    last.write_bytes(b"".join(lines[:-3]))
    report = writer(verify(audit, keys[1]), 1)
    assert report.missing == [(cut, cut + 2)] and not report.closed


async def test_the_cli_exit_codes_and_json(tmp_path: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    audit = await _trail(tmp_path, keys)
    assert verify_main([str(audit), "--public-key", str(keys[1]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "whole" and len(report["writers"]) == 2
    drop_lines(published(audit)[1], 2)
    assert verify_main([str(audit), "--public-key", str(keys[1])]) == 1
    assert "missing" in capsys.readouterr().out
    assert verify_main([str(tmp_path / "nowhere"), "--public-key", str(keys[1])]) == 2
    assert verify_main([str(audit), "--public-key", str(keys[0])]) == 2, "a private key is not a public key"
