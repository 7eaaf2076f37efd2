"""Reading and checking audit records in tests: every record must match proxy/audit/record.schema.json."""

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from proxy.audit.pipeline import load_schema


@cache
def validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema())


def complete_lines(path: Path) -> list[str]:
    """The lines of an audit or spool file that were written whole (a SIGKILL may leave a torn last line)."""
    data = path.read_bytes()
    return [line for line in data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines() if line.strip()]


def records_under(directory: Path) -> list[dict[str, Any]]:
    """Every record in `*.jsonl` files below `directory`: published, staged and spooled.

    A running proxy may publish (rename) a staging file between listing and
    reading it; then the listing is taken again, a bounded number of times.
    """
    for _ in range(50):
        try:
            return [json.loads(line) for path in sorted(directory.rglob("*.jsonl")) for line in complete_lines(path)]
        except FileNotFoundError:
            continue
    raise AssertionError(f"audit files under {directory} kept moving while being read")


def schema_errors(record: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, error.absolute_path)) or '<record>'}: {error.message}" for error in validator().iter_errors(record)]


def assert_valid(records: list[dict[str, Any]]) -> None:
    for record in records:
        errors = schema_errors(record)
        assert not errors, f"audit record does not match the schema: {errors}\n{json.dumps(record, indent=1)}"
