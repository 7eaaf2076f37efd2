"""Record ids stay UUIDv4-shaped and unique; timestamps keep the schema's format and the clock's value."""

import re
import time
import uuid
from datetime import UTC, datetime

import pytest

from proxy.audit import cloudevents as ids
from proxy.audit.cloudevents import new_id, utc_now

TIME_FORMAT = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$")


def test_ids_are_version_4_uuids_and_never_repeat() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    parsed = [uuid.UUID(text) for text in ids[:100]]
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 and str(u) == text for u, text in zip(parsed, ids, strict=False))


def test_timestamps_have_the_schema_format_and_follow_the_clock() -> None:
    before = time.time()
    text = utc_now()
    after = time.time()
    assert TIME_FORMAT.match(text)
    stamp = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    assert int(before * 1000) / 1000 <= stamp <= after


def test_the_cached_second_changes_with_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([1_700_000_000.999, 1_700_000_001.0005, 1_700_000_001.5, 1_700_003_600.25])
    monkeypatch.setattr(ids.time, "time", lambda: next(clock))
    assert [ids.utc_now() for _ in range(4)] == [
        "2023-11-14T22:13:20.999Z",
        "2023-11-14T22:13:21.000Z",
        "2023-11-14T22:13:21.500Z",
        "2023-11-14T23:13:20.250Z",
    ]


def test_the_milliseconds_formatted_once_are_the_formats_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """`utc_now` takes its milliseconds from a table made once: the text the f-string made for every instant (each
    millisecond of a second, its edges and random instants), the oracle computed here the old way."""
    instants = [1_700_000_000 + ms / 1000 + shift for ms in range(1000) for shift in (0.0, 0.0004, 0.0009999)]
    instants += [1_764_370_800.9999999, 1_764_370_800.0000001, 2_000_000_000.5]
    for now in instants:
        monkeypatch.setattr(ids.time, "time", lambda now=now: now)
        second = int(now)
        assert utc_now() == time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second)) + f"{int((now - second) * 1000):03d}Z"
