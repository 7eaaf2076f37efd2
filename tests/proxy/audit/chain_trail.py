"""Audit trails written through the real pipeline with a signing key, and the ways tests tamper with them."""

import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from proxy.audit.chain_verify import RawLine
from proxy.audit.settings import audit_running, open_audit_log, parse_audit_settings
from proxy.properties import Properties
from tests.proxy.audit.test_pipeline import request_record


def write_key_pair(directory: Path) -> tuple[Path, Path]:
    """An Ed25519 key pair as the proxy (PKCS#8 private key) and `audit verify` (public key) read them."""
    key = Ed25519PrivateKey.generate()
    private, public = directory / "audit-signing.pem", directory / "audit-signing.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def record(node_id: int, n: int, principal: str = "User:alice") -> dict[str, Any]:
    """The `n`th local record of writer `node_id`."""
    return request_record(principal, "local", n, node_id)


def settings_for(audit_dir: Path, key_file: Path | None, **extra: str) -> Properties:
    raw = {"audit.file.max.bytes": "6000", "audit.chain.checkpoint.records": "7", **extra}
    if key_file is not None:
        raw["audit.chain.signing.key.file"] = str(key_file)
    return Properties(raw)


async def write_run(audit_dir: Path, key_file: Path | None, node_id: int, records: int, *, crash: bool = False, extra: dict[str, str] | None = None) -> None:
    """One proxy process's run: `records` records, then a clean shutdown, or (crash) its staging file left behind as
    a SIGKILL leaves it: without the close checkpoint, with a torn last line, published by the next run.

    A process is told apart by its `source`; in one test process the node id stands in for the pid part."""
    settings = parse_audit_settings(settings_for(audit_dir, key_file, **(extra or {})), audit_dir)
    log = open_audit_log(settings, audit_dir, node_id)
    staged: dict[Path, bytes] = {}
    async with audit_running(log, 5.0):
        for n in range(records):
            await log.write(record(node_id, n))
        if crash:
            staged = {path: path.read_bytes() for path in (audit_dir / ".staging").glob("*.jsonl")}
    for path, data in staged.items():
        (audit_dir / path.name).unlink()
        path.write_bytes(data + b'{"torn')


def lines_of(directory: Path) -> list[RawLine]:
    return [
        RawLine(str(path), number, line)
        for path in sorted(directory.glob("*.jsonl"))
        for number, line in enumerate(path.read_bytes().splitlines(keepends=True), start=1)
    ]


def published(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jsonl"))


def edit_line(path: Path, number: int, change: Any) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    record_ = json.loads(lines[number - 1])
    change(record_)
    lines[number - 1] = json.dumps(record_, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(b"".join(lines))


def drop_lines(path: Path, *numbers: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(line for number, line in enumerate(lines, start=1) if number not in numbers))


def swap_lines(path: Path, first: int, second: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[first - 1], lines[second - 1] = lines[second - 1], lines[first - 1]
    path.write_bytes(b"".join(lines))


def seq_at(path: Path, number: int) -> int:
    seq: int = json.loads(path.read_bytes().splitlines()[number - 1])["chainseq"]
    return seq
