"""`envelope-proxy audit verify`: is an audit trail (files, or a Kafka topic) whole? Exit 0 whole, 1 broken, 2 bad input.

The checks are proxy/audit/chain_verify.py's; here are the inputs (files, directories, a topic, public keys)
and the report, as text or `--json`.
"""

import argparse
import json
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from proxy.audit.chain_format import key_id
from proxy.audit.chain_verify import RawLine, Verification, WriterReport, verify_lines

EXIT_WHOLE, EXIT_BROKEN, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_KAFKA_TIMEOUT_S = 60.0
_POLL_S = 1.0
_MAX_SHOWN = 20
"""Findings listed per kind in the text report (all of them are in --json)."""


class BadInput(Exception):
    """What the operator gave cannot be read: a path, a key, a topic."""


def public_keys(paths: Sequence[str]) -> dict[str, Ed25519PublicKey]:
    keys: dict[str, Ed25519PublicKey] = {}
    for path in paths:
        try:
            key = serialization.load_pem_public_key(Path(path).read_bytes())
        except (OSError, ValueError) as exc:
            raise BadInput(f"--public-key {path}: not a readable PEM public key ({exc})") from None
        if not isinstance(key, Ed25519PublicKey):
            raise BadInput(f"--public-key {path}: a {type(key).__name__.removeprefix('_')} key, not Ed25519")
        keys[key_id(key)] = key
    return keys


def audit_files(paths: Sequence[str]) -> list[Path]:
    """The files named, and the `*.jsonl` files directly in the directories named (staging is not published yet)."""
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found.extend(sorted(path.glob("*.jsonl")))
        elif path.is_file():
            found.append(path)
        else:
            raise BadInput(f"{text}: no such file or directory")
    return found


def file_lines(paths: Sequence[Path]) -> Iterator[RawLine]:
    for path in paths:
        try:
            with open(path, "rb") as handle:
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        yield RawLine(str(path), number, line)
        except OSError as exc:
            raise BadInput(f"{path}: {exc.strerror or exc}") from None


def topic_lines(bootstrap: str, topic: str, properties: dict[str, str], timeout: float) -> list[RawLine]:
    """Every message of `topic`, from each partition's earliest offset up to its end when reading began."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    group = f"envelope-proxy-audit-verify-{uuid.uuid4()}"  # never committed: reading leaves no trace in the cluster
    consumer = Consumer({**properties, "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout)
        described = metadata.topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            raise BadInput(f"--topic {topic}: not found on {bootstrap} ({described.error if described else 'no such topic'})")
        ends: dict[int, int] = {}
        starts: list[Any] = []
        for partition in sorted(described.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            if high > low:
                ends[partition] = high
                starts.append(TopicPartition(topic, partition, low))
        consumer.assign(starts)
        lines: list[RawLine] = []
        deadline = time.monotonic() + timeout
        while ends and time.monotonic() < deadline:
            message = consumer.poll(_POLL_S)
            if message is None:
                continue
            if message.error() is not None:
                raise BadInput(f"--topic {topic}: {message.error()}")
            partition, offset = message.partition(), message.offset()
            if partition in ends and offset < ends[partition]:
                lines.append(RawLine(f"{topic}/{partition}", offset, message.value() or b""))
            if partition in ends and offset + 1 >= ends[partition]:
                del ends[partition]
        if ends:
            raise BadInput(f"--topic {topic}: partitions {sorted(ends)} not read to their end within {timeout:.0f} s")
        return lines
    except KafkaException as exc:
        raise BadInput(f"--bootstrap-server {bootstrap}: {exc}") from None
    finally:
        consumer.close()


def _shown(items: Sequence[Any]) -> str:
    text = ", ".join(str(item) for item in items[:_MAX_SHOWN])
    return text + (f" (and {len(items) - _MAX_SHOWN} more)" if len(items) > _MAX_SHOWN else "")


def _writer_text(report: WriterReport) -> list[str]:
    status = "BROKEN" if report.broken else "whole"
    lines = [
        f"{report.writer}: {status}, {report.verified} of {report.records} records verified, "
        f"{report.first_time or '-'} .. {report.last_time or '-'}, {report.checkpoints} signed checkpoints"
    ]
    if report.first_break is not None:
        where = report.locations.get(report.first_break)
        lines.append(f"  first break at chainseq {report.first_break}" + (f" ({where})" if where else ""))
    if report.missing:
        lines.append("  missing: " + _shown([f"{a}-{b}" if a != b else str(a) for a, b in report.missing]))
    for title, seqs in (("modified", report.modified), ("reordered", report.reordered), ("bad signature", report.bad_signatures)):
        if seqs:
            lines.append(f"  {title}: " + _shown([f"{seq} ({report.locations.get(seq, '?')})" for seq in seqs]))
    if report.unsigned_tail:
        lines.append(f"  unsigned tail: {report.unsigned_tail[0]}-{report.unsigned_tail[1]} (after the last signed checkpoint)")
    if report.continues:
        lines.append(f"  continues: {report.continues}")
    if not report.closed:
        lines.append("  no closing checkpoint: the writer still runs, crashed, or its end was cut")
    return lines


def text_report(result: Verification) -> str:
    lines = [f"audit trail: {'BROKEN' if result.broken else 'whole'} ({len(result.writers)} writers)"]
    if not result.signatures_checked:
        lines.append("signatures not checked (no --public-key): checkpoints prove nothing, only the chains are checked")
    if result.unreadable:
        lines.append(f"unreadable lines: {_shown(result.unreadable)}")
    if result.unchained:
        lines.append(f"{result.unchained} records without a chain (schema version before 5): not checked")
    for report in result.writers:
        lines.extend(_writer_text(report))
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="envelope-proxy audit verify", description=__doc__)
    parser.add_argument("paths", nargs="*", help="audit files, or directories whose *.jsonl files are read")
    parser.add_argument("--bootstrap-server", help="read the audit topic of this Kafka cluster (with --topic)")
    parser.add_argument("--topic", help="the audit topic (audit.kafka.topic)")
    parser.add_argument("--kafka-property", action="append", default=[], metavar="KEY=VALUE", help="librdkafka consumer property, e.g. security.protocol=SSL")
    parser.add_argument("--timeout", type=float, default=DEFAULT_KAFKA_TIMEOUT_S, help="seconds to read the topic to its end (default %(default)s)")
    parser.add_argument("--public-key", action="append", default=[], metavar="PEM", help="Ed25519 public key the checkpoints are signed with (repeat for old keys)")
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    return parser


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    try:
        if bool(args.bootstrap_server) != bool(args.topic):
            raise BadInput("--bootstrap-server and --topic go together")
        if not args.paths and not args.topic:
            raise BadInput("name audit files or directories, or --bootstrap-server and --topic")
        keys = public_keys(args.public_key)
        properties = dict(item.partition("=")[::2] for item in args.kafka_property)
        lines: list[RawLine] = list(file_lines(audit_files(args.paths)))
        if args.topic:
            lines.extend(topic_lines(args.bootstrap_server, args.topic, properties, args.timeout))
        if not lines:
            raise BadInput("no audit records in the input")
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = verify_lines(lines, keys)
    print(json.dumps(result.as_dict(), indent=1) if args.json else text_report(result))
    return EXIT_BROKEN if result.broken else EXIT_WHOLE
