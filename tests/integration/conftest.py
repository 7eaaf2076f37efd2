from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envelope_proxy.embedded import EmbeddedStack, start_stack
from tests.audit_records import assert_valid, records_under


@pytest.fixture
async def stack(nursery: Any, tmp_path: Path) -> EmbeddedStack:
    return await start_stack(nursery, tmp_path / "audit")


def audit_records(directory: Path) -> list[dict[str, Any]]:
    """Every record written so far, published or still in staging."""
    return records_under(directory)


@pytest.fixture(autouse=True)
def _audit_records_match_the_schema(tmp_path: Path) -> Iterator[None]:
    """After every integration test: each audit record it made (files, staging, spool) matches the JSON Schema."""
    yield
    assert_valid(records_under(tmp_path))
