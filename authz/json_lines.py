"""JSON lines as the authz file formats use them: blank and `#` lines skipped, errors naming file and line."""

import json
from collections.abc import Iterator
from typing import Any


def json_lines(text: str, source: str, error: type[ValueError]) -> Iterator[tuple[str, Any]]:
    """(`source:line`, parsed object) per line; `error` with that place for a line that is not JSON."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{source}:{number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}: not JSON: {exc.msg}") from None
