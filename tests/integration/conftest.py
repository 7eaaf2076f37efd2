import json
from pathlib import Path
from typing import Any

import pytest

from proxy.embedded import EmbeddedStack, start_stack


@pytest.fixture
async def stack(nursery: Any, tmp_path: Path) -> EmbeddedStack:
    return await start_stack(nursery, tmp_path / "audit")


def audit_records(directory: Path) -> list[dict[str, Any]]:
    """Every record written so far, published or still in staging."""
    records = []
    for path in sorted(directory.rglob("*.jsonl")):
        records.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return records
